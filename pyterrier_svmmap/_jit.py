"""The one place that loads the optional compiled (numba) kernels.

Every kernel module — ``_product_kernels``, ``svm._qp_kernels``, ``features._kernels``, ``approx._kernels``,
``measures._kernels``, ``measures._order_kernels``, ``svm.losses._map_kernels``, ``svm.losses._rank_kernels``,
each beside the module it serves — is imported lazily on first use, so that numba is not loaded with the package, and not at all when it is missing or when the environment
variable ``PYTERRIER_SVMMAP_NO_NUMBA=1`` is set:
callers then run their numpy code, which is also the reference the tests compare the kernels with. Callers
look the module up at call time (``load(...)`` inside the function that needs it), never bind it at import,
so that the switch and the tests' ``monkeypatch.setattr(_jit, "_LOADED", {})`` work.

The kernels are cached on disk by numba (``cache=True``): only the first run after an install compiles them.
That run says so, once per process, in one INFO line of the ``pyterrier_svmmap`` logger
(:data:`COMPILE_MESSAGE`), when numba really compiles one of this package's kernels — not when it loads them
from its cache. ``svmmap warm-up`` compiles them all ahead.
"""
from __future__ import annotations

import importlib
import logging
import os
from contextlib import contextmanager
from types import ModuleType
from typing import Dict, Iterator, Optional, Union

log = logging.getLogger(__name__)

#: logged once per process, when numba first compiles (not loads from its cache) a kernel of this package
COMPILE_MESSAGE = ("compiling the numba kernels, once (about 15-60 s); later runs load them from numba's cache "
                   "(`svmmap warm-up` compiles them ahead)")

_announced = False
_listening = False


def _on_first_compile(dispatcher) -> None:
    """Log :data:`COMPILE_MESSAGE` the first time one of this package's kernels compiles in this process."""
    global _announced
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    if not _announced and module.startswith("pyterrier_svmmap."):
        _announced = True
        logging.getLogger("pyterrier_svmmap").info(COMPILE_MESSAGE)


def _listen_for_compiles() -> None:
    """Register (once) a listener of numba's ``numba:compile`` event, which numba raises when it compiles a
    function and not when it loads one from its on-disk cache."""
    global _listening
    if _listening:
        return
    _listening = True
    try:
        from numba.core import event
    except ImportError:                                          # numba without the event API: no message
        return

    class FirstCompile(event.Listener):
        def on_start(self, ev):
            _on_first_compile((ev.data or {}).get("dispatcher"))

        def on_end(self, ev):
            pass
    event.register("numba:compile", FirstCompile())

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
            else:
                _listen_for_compiles()
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
