"""The allocator settings of the package's workers, applied to a cluster the user brings (a worker plugin
registered when the executor is resolved)."""
from __future__ import annotations

import ctypes
import os

import pytest

distributed = pytest.importorskip("dask.distributed")

from pyterrier_svmmap.scale.allocator import WORKER_ENVIRON  # noqa: E402
from pyterrier_svmmap.scale.client import dask_client  # noqa: E402


def _environ():
    return os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_TRIM_THRESHOLD_")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                    "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mmapped_by_malloc(size: int = 1 << 20):
    """Whether glibc's malloc serves a block of ``size`` bytes with a fresh mmap in this process (None where
    glibc has no mallinfo2)."""
    libc = ctypes.CDLL("libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = _Mallinfo2
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    during = libc.mallinfo2().hblks
    libc.free(block)
    return during > before


@pytest.fixture
def plain_client(one_worker):
    """A user's cluster as Dask makes it: one worker process, Dask's own allocator settings."""
    return one_worker


glibc = pytest.mark.skipif(
    not (hasattr(os, "confstr") and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")),
    reason="the allocator settings are glibc's")


@glibc
def test_a_users_cluster_gets_the_allocator_settings_of_the_packages_workers(plain_client):
    """Before: Dask's MALLOC_TRIM_THRESHOLD_ of 64 kB, a 1 MB block mmapped. Resolving the client as an executor
    registers the plugin: the workers, present and added later, take such blocks from the heap and say so
    in their environment."""
    seen = plain_client.run(_environ)
    assert set(seen.values()) == {(None, "65536")}
    assert set(plain_client.run(_mmapped_by_malloc).values()) == {True}
    client, owned = dask_client(plain_client)
    assert client is plain_client and not owned
    expected = (WORKER_ENVIRON["MALLOC_MMAP_THRESHOLD_"], WORKER_ENVIRON["MALLOC_TRIM_THRESHOLD_"])
    assert set(plain_client.run(_environ).values()) == {expected} and expected == (str(32 << 20), str(32 << 20))
    assert set(plain_client.run(_mmapped_by_malloc).values()) == {False}         # set in the allocator itself
    plain_client.cluster.scale(2)
    plain_client.wait_for_workers(2)
    assert list(plain_client.run(_environ).values()) == [expected] * 2           # a worker that joins later
    assert set(plain_client.run(_mmapped_by_malloc).values()) == {False}
    dask_client(plain_client)                                                    # registered once, idempotent
    assert list(plain_client.run(_environ).values()) == [expected] * 2


def test_the_settings_can_be_turned_off(plain_client):
    import dask
    with dask.config.set({"svmmap.worker-settings": False}):
        dask_client(plain_client)
    assert set(plain_client.run(_environ).values()) == {(None, "65536")}


def test_a_worker_in_the_users_process_is_left_alone(in_process_worker, monkeypatch):
    """LocalCluster(processes=False): the workers are threads of the caller's process, whose allocator and
    environment stay the caller's."""
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    before = dict(os.environ)
    dask_client(in_process_worker)
    assert in_process_worker.run(_environ) and dict(os.environ) == before
