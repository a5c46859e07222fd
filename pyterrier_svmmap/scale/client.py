"""The one factory of Dask clients: what ``executor=``, ``svmmap learn --workers/--scheduler`` and
``svmmap reproduce --workers/--scheduler`` connect with (``pip install 'pyterrier-svmmap[dask]'``)."""
from __future__ import annotations

import contextlib
import os
import signal
import warnings
from typing import Any, Iterator, Optional, Tuple

#: glibc's allocator thresholds of the workers of ``executor="local"`` (:func:`local_worker_environ`): blocks
#: below 32 MiB come from the heap, which is trimmed when more than 32 MiB are free at its top. Dask's own
#: ``MALLOC_TRIM_THRESHOLD_=65536`` also turns off glibc's dynamic mmap threshold, so that every iteration's
#: arrays above 128 kB are fresh mmaps whose pages fault in again (docs/performance.md, "Dask").
WORKER_ENVIRON = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024), "MALLOC_TRIM_THRESHOLD_": str(32 * 1024 * 1024)}

DASK_HINT = "training on a Dask cluster (--workers/--scheduler, executor=) needs dask.distributed: " \
            "pip install 'pyterrier-svmmap[dask]'"


def is_dask_client(obj: Any) -> bool:
    """Whether ``obj`` is a ``dask.distributed.Client`` (without importing Dask when it is not loaded)."""
    return any(c.__name__ == "Client" and c.__module__.split(".")[0] == "distributed" for c in type(obj).__mro__)


def dask_client(executor: Any = "local", workers: Optional[int] = None) -> Tuple[Any, bool]:
    """(client, owned): a ``dask.distributed.Client`` for ``executor``, and whether it was made here (then
    :func:`close_client` closes it).

    ``executor`` is a Client (used as it is), a scheduler address (20 s timeout), or ``"local"``: a new
    LocalCluster of ``workers`` single-threaded processes (default one per core), without a dashboard, with
    :data:`WORKER_ENVIRON`, started with SIGINT ignored so that Ctrl-C reaches this process only; what Dask's
    nannies write into ``os.environ`` is taken out again. ValueError without dask.distributed
    (:data:`DASK_HINT`), for an unreachable scheduler or any other ``executor``.
    """
    if is_dask_client(executor):
        return executor, False
    if not isinstance(executor, str):
        raise ValueError(f"executor must be None, 'local', a scheduler address or a dask.distributed.Client, "
                         f"got {executor!r}")
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError(DASK_HINT) from None
    if executor != "local":
        try:
            return Client(executor, timeout="20s"), True
        except (OSError, TimeoutError) as e:
            raise ValueError(f"cannot reach the Dask scheduler at {executor}: {e}") from None
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with warnings.catch_warnings(), local_worker_environ():
            warnings.filterwarnings("ignore", message="Port .* is already in use")   # Dask takes a free one
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
    finally:
        signal.signal(signal.SIGINT, previous)
    return Client(cluster), True


def close_client(client) -> None:
    """Close ``client`` and its LocalCluster if it has one, ``os.environ`` kept as it was."""
    cluster = getattr(client, "cluster", None)
    with environ_kept():
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def local_worker_environ() -> Iterator[None]:
    """Workers of a LocalCluster started inside the block get :data:`WORKER_ENVIRON`: set in Dask's
    ``pre-spawn-environ`` and in ``os.environ`` (which wins over it), both as they were after the block."""
    import dask
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_ENVIRON}
    with environ_kept(), dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        os.environ.update(WORKER_ENVIRON)
        yield


@contextlib.contextmanager
def environ_kept() -> Iterator[None]:
    """``os.environ`` restored on exit to what it was on entry."""
    before = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)
