"""What runs in the worker processes of ``svmmap reproduce``: the trials (set in the parent before it forks
them) and the limits on their thread pools."""
from __future__ import annotations

import logging
import signal
from contextlib import contextmanager
from typing import Dict, List, Optional

from pyterrier_svmmap.experiments.reproduce.trials import _Trials
from pyterrier_svmmap.threads import limit as threads_limit

logger = logging.getLogger(__name__)


_WORKER_TRIALS: Optional[_Trials] = None      # set in the parent before forking the workers
_WORKER_THREADS = 1                            # threads per worker (ours, BLAS, OpenMP): cores // jobs


@contextmanager
def _thread_limit(threads: int):
    """Cap the package's threads and OpenMP's (LightGBM) at ``threads`` and BLAS at one (with threadpoolctl),
    so that ``jobs`` workers do not oversubscribe the cores. BLAS has one thread wherever a trial runs: a
    threaded BLAS sums in pieces that depend on its thread count, which changes svm-acc3's and svm-acc4's
    models in the last bits, so that the results would depend on ``--jobs`` and the machine."""
    with threads_limit(threads):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:                                  # pragma: no cover
            yield
            return
        _load_thread_pools()
        with threadpool_limits(limits={"blas": 1, "openmp": threads}):
            yield


def _load_thread_pools() -> None:
    """Import LightGBM (if installed) before the limit is set: threadpoolctl limits only the libraries loaded
    when it is entered (LightGBM's learners also set their threads, ``systems.LIGHTGBM_PARAMS``)."""
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        pass


def _ignore_sigint() -> None:
    """Worker initialiser: only the parent handles Ctrl-C (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(pool) -> None:
    """Cancel the pending trials of ``pool`` and end its workers now (finished results are checkpointed)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())   # shutdown() forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=5)


def _run_in_worker(split, keep_models: bool):
    with _thread_limit(_WORKER_THREADS):
        return _WORKER_TRIALS.run(split, keep_models)


def _dask_trial(trials: _Trials, split, names: List[str], keep_models: bool) -> Dict[str, tuple]:
    """A Dask task: fit the systems ``names`` on ``split`` (``trials`` is the scattered copy)."""
    with _thread_limit(1):
        return trials.compute(split, names, keep_models)
