"""The one line on stderr when numba compiles this package's kernels: said the moment compiling starts, once per
process, with no logging configured; never when the kernels come from numba's cache; silenced through its
logger."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from pyterrier_svmmap import _jit

ROOT = Path(__file__).resolve().parents[2]

#: two kernels of one module (the second compiles too, and must not repeat the notice); a filter on the logger
#: (not a handler: Python's own last-resort output stays in use) records, when the notice passes, how many
#: signatures numba had finished compiling over every kernel of the package then loaded
SCRIPT = """
import logging, sys, numpy as np
seen = []
def see(record):
    seen.append(sum(len(getattr(f, "signatures", ())) for name, m in list(sys.modules.items())
                    if name.startswith("pyterrier_svmmap.") for f in vars(m).values() if hasattr(f, "py_func")))
    return True
if len(sys.argv) > 1:
    logging.getLogger("pyterrier_svmmap.compile").setLevel(logging.ERROR)
logging.getLogger("pyterrier_svmmap.compile").addFilter(see)
from pyterrier_svmmap.features.matrices import BinnedBlock
block = BinnedBlock(np.zeros((5, 2), dtype=np.uint8), 3)
block.dot(np.zeros(6)); block.rdot(np.zeros(5))
print("compiled signatures when the notice came:", seen, file=sys.stderr)
"""


def run(cache_dir, *args) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stderr


def test_notice_is_one_line_on_stderr_before_compiling_once_and_never_from_the_cache(tmp_path):
    first = run(tmp_path)                                   # an empty cache: the kernels compile
    assert first.splitlines() == [_jit.COMPILE_MESSAGE, "compiled signatures when the notice came: [0]"], first
    second = run(tmp_path)                                  # the same cache: loaded, nothing said
    assert second.splitlines() == ["compiled signatures when the notice came: []"], second


def test_notice_is_silenced_through_its_logger(tmp_path):
    quiet = run(tmp_path, "quiet")                          # an empty cache: compiles, says nothing
    assert quiet.splitlines() == ["compiled signatures when the notice came: []"], quiet
    assert list(tmp_path.rglob("*.nbi"))                    # it did compile (and cache)


def test_notice_says_once_about_how_long():
    assert _jit.COMPILE_MESSAGE.startswith(f"pyterrier-svmmap: compiling kernels, once, about "
                                           f"{_jit.COMPILE_SECONDS} s")
    assert "\n" not in _jit.COMPILE_MESSAGE


def test_other_packages_compiles_are_not_announced(monkeypatch, caplog):
    monkeypatch.setattr(_jit, "_announced", False)

    def foreign():
        pass
    foreign.__module__ = "somebody_else.kernels"

    class Dispatcher:
        py_func = foreign
    with caplog.at_level(logging.INFO, logger="pyterrier_svmmap"):
        _jit._on_first_compile(Dispatcher())
        _jit._on_first_compile(None)
        assert not caplog.records
        foreign.__module__ = "pyterrier_svmmap.features._kernels"
        _jit._on_first_compile(Dispatcher())
        _jit._on_first_compile(Dispatcher())
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        (_jit.COMPILE_LOGGER, logging.WARNING, _jit.COMPILE_MESSAGE)]
