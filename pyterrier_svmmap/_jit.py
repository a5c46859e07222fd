"""The one place that loads the compiled (numba) kernels.

Every kernel module (``_product_kernels``, ``svm._qp_kernels``, ``features._kernels``, …, each beside the module
it serves) is imported on first use (``load(...)`` inside the function that needs it), so that importing the
package does not load numba, and a fit compiles only the kernels it runs. numba caches them on disk
(``cache=True``; a wheel built by ``pip install`` holds them already: docs/performance.md). A run that compiles
says so, once per process, in one WARNING line of the ``pyterrier_svmmap.compile`` logger
(:data:`COMPILE_MESSAGE`) the moment numba starts compiling one of this package's kernels, not when it loads
them from its cache; silence it with ``logging.getLogger("pyterrier_svmmap.compile").setLevel(logging.ERROR)``.
``svmmap warm-up`` compiles them ahead.
"""
from __future__ import annotations

import functools
import importlib
import logging
from types import ModuleType

#: the logger of the notice (a child of the package's, so that it can be silenced on its own)
COMPILE_LOGGER = "pyterrier_svmmap.compile"

#: the seconds the notice announces for compiling the kernels of a first fit
COMPILE_SECONDS = 30

#: logged once per process, when numba first compiles (not loads from its cache) a kernel of this package
COMPILE_MESSAGE = (f"pyterrier-svmmap: compiling kernels, once, about {COMPILE_SECONDS} s (later runs load them "
                   f"from numba's cache; `svmmap warm-up` compiles them ahead)")

_announced = False


def _on_first_compile(dispatcher) -> None:
    """Log :data:`COMPILE_MESSAGE` the first time one of this package's kernels compiles in this process."""
    global _announced
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    if not _announced and module.startswith("pyterrier_svmmap."):
        _announced = True
        logging.getLogger(COMPILE_LOGGER).warning(COMPILE_MESSAGE)


@functools.lru_cache(maxsize=None)
def _listen_for_compiles() -> None:
    """Listen (once) to numba's ``numba:compile`` event, raised when it compiles, not when it loads from its cache."""
    from numba.core import event

    class FirstCompile(event.Listener):
        def on_start(self, ev):
            _on_first_compile((ev.data or {}).get("dispatcher"))

        def on_end(self, ev):
            pass
    event.register("numba:compile", FirstCompile())


@functools.lru_cache(maxsize=None)
def load(module: str) -> ModuleType:
    """The compiled kernel module ``pyterrier_svmmap.<module>`` (e.g. ``"svm._qp_kernels"``), imported on
    first use (numba is loaded then, not with the package).

    Parameters
    ----------
    module : str
        The kernel module's name relative to the package.

    Returns
    -------
    ModuleType
        The imported module; from the second call on, the one already imported.
    """
    loaded = importlib.import_module(f"pyterrier_svmmap.{module}")
    _listen_for_compiles()
    return loaded
