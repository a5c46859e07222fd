"""φ, the joint feature map's per-candidate part, one job a module: per-query transforms of the scores
(:mod:`.transforms`), their scales (:mod:`.scales`), the bins' thresholds (:mod:`.thresholds`), φ held in parts with
the solver's products (:mod:`.matrices`), the registry of block kinds (:mod:`.blocks`), the encoder that learns and
builds φ (:mod:`.encoder`) and the fitted layout a model keeps (:mod:`.layout`); compiled kernels in
:mod:`._kernels`.
"""
from __future__ import annotations

from types import ModuleType

import pyterrier_svmmap._jit as _jit


def kernels() -> ModuleType:
    """The compiled kernels module :mod:`._kernels` (imported on first use)."""
    return _jit.load("features._kernels")
