"""φ, the joint feature map's per-candidate part, one job a module: transforms, scales, thresholds, matrices, the
block kinds (:mod:`.blocks`), the encoder and the fitted layout; compiled kernels in :mod:`._kernels`."""
from __future__ import annotations

from types import ModuleType

import pyterrier_svmmap._jit as _jit


def kernels() -> ModuleType:
    """The compiled kernels module :mod:`._kernels` (imported on first use)."""
    return _jit.load("features._kernels")
