"""Shared test set-up: the tests' folder is importable (``data_paths``, the golden cases, the oracles) from the
test modules in its sub-folders, which mirror the package's rooms; and every test module leaves ``os.environ``
as it found it (``distributed.LocalCluster`` sets ``OPENBLAS_NUM_THREADS=1`` and other variables in the process that
starts it, which the child interpreters of later tests — the golden cases' — would inherit)."""
import os
import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


@pytest.fixture(autouse=True, scope="module")
def _restore_environment():
    """Put ``os.environ`` back, after a test module and its module-scoped fixtures (a Dask cluster), as it was
    before them."""
    saved = dict(os.environ)
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)
