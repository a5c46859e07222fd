"""Shared test set-up: the tests' folder is importable (``data_paths``, the golden cases) from the test
modules in its sub-folders, which mirror the package's rooms."""
import os
import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


#: the environment when the session started
_START = dict(os.environ)
#: what a Dask nanny writes into the environment of the process that starts a LocalCluster (Dask's
#: ``distributed.nanny.pre-spawn-environ``, and this package's ``scale.client.WORKER_ENVIRON``)
_NANNY_KEYS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_",
               "MALLOC_MMAP_THRESHOLD_", "PYTHONHASHSEED")


@pytest.fixture(autouse=True)
def _no_dask_environment_leak():
    """After each test, the variables a Dask nanny left in this process are as they were when the session
    started: a child interpreter started by a later test (the golden cases) would inherit them, and one BLAS
    thread (``OMP_NUM_THREADS=1``) moves the golden models' last bits."""
    yield
    for key in _NANNY_KEYS:
        if os.environ.get(key) != _START.get(key):
            if key in _START:
                os.environ[key] = _START[key]
            else:
                del os.environ[key]
