"""Dask clusters for the tests of the scale room: LocalClusters of single-threaded workers, without a
dashboard, closed with their client."""
from __future__ import annotations

import contextlib
from typing import Iterator

import pytest


@contextlib.contextmanager
def _local_client(n_workers: int) -> Iterator:
    distributed = pytest.importorskip("dask.distributed")
    client = distributed.Client(distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                                         processes=True, dashboard_address=None))
    try:
        yield client
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def two_workers():
    """Two worker processes shared by a test module (every task's arguments are pickled to another process)."""
    with _local_client(2) as client:
        yield client

