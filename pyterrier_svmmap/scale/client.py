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
    """(client, owned): a ``dask.distributed.Client`` for ``executor``, and whether it was made here (then the
    caller closes it with :func:`close_client`).

    ``executor`` is a Client (returned as it is), a scheduler address (connected with a 20 s timeout), or
    ``"local"``: a new LocalCluster of ``workers`` single-threaded worker processes (default: one per core),
    without a dashboard, with :data:`WORKER_ENVIRON` in the workers' environment, started with SIGINT ignored
    (the workers inherit it, so that Ctrl-C reaches this process only). Dask's nannies write their workers'
    settings (``OMP_NUM_THREADS=1``, ``OPENBLAS_NUM_THREADS=1``, ...) into this process's ``os.environ``
    before they spawn; they are taken out again, so that the caller's later subprocesses keep the caller's
    settings. A cluster given as a client or an address is used as it is: nothing is registered on it and
    its workers' settings are left alone. ValueError, in one line, without dask.distributed
    (:data:`DASK_HINT`), for an unreachable scheduler or for any other ``executor``.
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
            client = Client(executor, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise ValueError(f"cannot reach the Dask scheduler at {executor}: {e}") from None
        return client, True
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
    """Close ``client`` and, if it started one, its LocalCluster (a nanny that restarted a lost worker wrote
    its settings into ``os.environ`` again: taken out as in :func:`dask_client`)."""
    cluster = getattr(client, "cluster", None)
    with environ_kept():
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def local_worker_environ() -> Iterator[None]:
    """Workers of a LocalCluster started inside the block get :data:`WORKER_ENVIRON`; this process's
    ``os.environ`` and Dask's configuration are as they were after the block.

    The nannies read ``distributed.nanny.pre-spawn-environ``, but a variable already in ``os.environ`` wins
    over it, and an earlier LocalCluster of this process left Dask's own ``MALLOC_TRIM_THRESHOLD_`` there: so
    the values are set in both for the block (:func:`environ_kept` restores ``os.environ``).
    """
    import dask
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_ENVIRON}
    with environ_kept(), dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        os.environ.update(WORKER_ENVIRON)
        yield


@contextlib.contextmanager
def environ_kept() -> Iterator[None]:
    """``os.environ`` as it was on entry, restored on exit (what was added removed, what was changed reset)."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(before):
            del os.environ[key]
        for key, value in before.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
