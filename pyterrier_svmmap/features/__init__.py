"""φ, the joint feature map's per-candidate part, one job a module; compiled kernels in :mod:`._kernels`."""
from __future__ import annotations

from types import ModuleType

import pyterrier_svmmap._jit as _jit


def kernels() -> ModuleType:
    return _jit.load("features._kernels")
