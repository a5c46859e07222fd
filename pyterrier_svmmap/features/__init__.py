"""φ, the joint feature map's per-candidate part, one job a module:

* :mod:`.transforms`: the per-query scalings of the scores (min–max, percentiles, standardisation);
* :mod:`.scales`: what the training candidates say about each base function's scale (:class:`.scales.ColumnStatistics`);
* :mod:`.thresholds`: the thresholds K_f of the bins, sampled from the training scores;
* :mod:`.matrices`: φ held as blocks (bin codes, dense columns) with the products the solver needs, Φw and Φᵀc;
* :mod:`.blocks`: the registry of block kinds (values, width, names, prior, picture);
* :mod:`.encoder`: :class:`.encoder.FeatureEncoder`, which learns thresholds and scales and builds φ;
* :mod:`.layout`: the fitted layout a model keeps (w's dimensions, names, the prior's w₀, serialisation).

The numeric work runs in the compiled kernels of :mod:`._kernels`, loaded on first use by :func:`kernels`.
"""
from __future__ import annotations

from types import ModuleType

import pyterrier_svmmap._jit as _jit


def kernels() -> ModuleType:
    """The compiled kernels module :mod:`._kernels` (imported on first use)."""
    return _jit.load("features._kernels")
