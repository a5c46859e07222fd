"""The one place that loads the optional compiled (numba) kernels.

Every kernel module — ``svm._qp_kernels``, ``features._kernels``, ``approx._kernels``,
``measures._kernels``, ``measures._order_kernels``, ``svm.losses._map_kernels``, ``svm.losses._rank_kernels``,
each beside the module it serves — is imported lazily on first use, so that numba is not loaded with the package, and not at all when it is missing or when the environment
variable ``PYTERRIER_SVMMAP_NO_NUMBA=1`` is set:
callers then run their numpy code, which is also the reference the tests compare the kernels with. Callers
look the module up at call time (``load(...)`` inside the function that needs it), never bind it at import,
so that the switch and the tests' ``monkeypatch.setattr(_jit, "_LOADED", {})`` work.
"""
from __future__ import annotations

import importlib
import logging
import os
from contextlib import contextmanager
from types import ModuleType
from typing import Dict, Iterator, Optional, Union

log = logging.getLogger(__name__)

#: module name → the loaded module, or False when unavailable; filled on first use
_LOADED: Dict[str, Union[ModuleType, bool]] = {}


def load(module: str, fallback: str) -> Optional[ModuleType]:
    """The compiled kernel module ``pyterrier_svmmap.<module>`` (e.g. ``"svm._qp_kernels"``), or None when numba is
    missing or disabled; ``fallback`` says what runs instead (for the debug log)."""
    if module not in _LOADED:
        mod: Union[ModuleType, bool] = False
        if os.environ.get("PYTERRIER_SVMMAP_NO_NUMBA"):
            log.debug("numba disabled by PYTERRIER_SVMMAP_NO_NUMBA: %s", fallback)
        else:
            try:
                mod = importlib.import_module(f"pyterrier_svmmap.{module}")
            except ImportError:                                  # numba not installed
                log.debug("numba not available: %s", fallback)
        _LOADED[module] = mod
    return _LOADED[module] or None


@contextmanager
def without(module: str) -> Iterator[None]:
    """Run the block with the kernel module ``module`` off (its callers take their numpy path), then load
    it again on next use: lets one process compile the other kernels while another compiles this one
    (``svmmap reproduce``'s warm-up, :func:`pyterrier_svmmap.experiments.reproduce.warm_up._warm_up`)."""
    saved = _LOADED.get(module)
    _LOADED[module] = False
    try:
        yield
    finally:
        if saved is None:
            _LOADED.pop(module, None)
        else:
            _LOADED[module] = saved
