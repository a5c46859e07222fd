"""The one INFO line when numba compiles this package's kernels (and its silence when they come from the cache)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_svmmap import _jit

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import logging, numpy as np
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from pyterrier_svmmap.features.encoder import BinnedBlock
block = BinnedBlock(np.zeros((5, 2), dtype=np.uint8), 3)
block.dot(np.zeros(6)); block.rdot(np.zeros(5))
"""


def run(cache_dir) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stderr


def test_message_once_when_kernels_compile_and_never_from_the_cache(tmp_path):
    first = run(tmp_path)                                   # an empty cache: the kernels compile
    assert first.count(_jit.COMPILE_MESSAGE) == 1, first
    assert f"INFO pyterrier_svmmap: {_jit.COMPILE_MESSAGE}" in first
    second = run(tmp_path)                                  # the same cache: loaded, nothing said
    assert _jit.COMPILE_MESSAGE not in second, second


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
    assert [r.getMessage() for r in caplog.records] == [_jit.COMPILE_MESSAGE]
