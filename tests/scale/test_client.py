"""The Dask client factory: what it leaves in the caller's process."""
import os

import pytest

from pyterrier_svmmap.scale.client import close_client, dask_client, environ_kept


def test_environ_kept_restores_added_changed_and_removed_variables(monkeypatch):
    monkeypatch.setenv("SVMMAP_TEST_CHANGED", "before")
    monkeypatch.setenv("SVMMAP_TEST_REMOVED", "here")
    monkeypatch.delenv("SVMMAP_TEST_ADDED", raising=False)
    before = dict(os.environ)
    with environ_kept():
        os.environ["SVMMAP_TEST_ADDED"] = "1"
        os.environ["SVMMAP_TEST_CHANGED"] = "after"
        del os.environ["SVMMAP_TEST_REMOVED"]
    assert dict(os.environ) == before


def test_a_local_cluster_leaves_the_callers_environment_as_it_was():
    """Dask's nannies write OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, ... into the parent's os.environ before
    they spawn; a subprocess started later (a BLAS, a numba pool) would inherit them."""
    pytest.importorskip("dask.distributed")
    before = dict(os.environ)
    client, owned = dask_client("local", workers=1)
    try:
        assert owned
        assert dict(os.environ) == before
        assert client.run(lambda: os.environ.get("OMP_NUM_THREADS")) == {w: "1" for w in client.scheduler_info()["workers"]}
    finally:
        close_client(client)
    assert dict(os.environ) == before
