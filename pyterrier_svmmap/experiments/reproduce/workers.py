"""What runs in the worker processes of ``svmmap reproduce``: the trials they compute (set in the parent before
it forks them) and the limits on their thread pools."""
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
    """Cap the package's own threads (:func:`pyterrier_svmmap.threads.limit`, whatever ``n_jobs`` the learners
    ask for) and the OpenMP (LightGBM) thread pool at ``threads``, and BLAS at one thread, the latter two if
    threadpoolctl is installed (it comes with scikit-learn, the ``peers`` extra). Without the caps each of
    ``jobs`` workers would start a pool of every core's threads, and the oversubscribed cores would slow the
    fits and inflate fit_seconds. BLAS gets one thread wherever a trial runs (here, in a worker, on Dask):
    a threaded BLAS sums a matrix product in pieces that depend on its thread count, and the classification
    baselines' models (svm-acc3, svm-acc4) change with those last bits, so the results would depend on
    ``--jobs`` and on the machine's cores."""
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
    """Import LightGBM (if installed) before the limit is set: threadpoolctl limits only the libraries
    loaded when it is entered, and LightGBM, imported lazily inside the first LambdaMART fit, would
    otherwise start a pool of every core's threads in each worker. This alone did not keep LightGBM's
    OpenMP pool from stalling in the forked workers (fits of ~1 s took 30–70 s); the comparison's
    LightGBM learners also set their thread count (``systems.LIGHTGBM_PARAMS``)."""
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        pass


def _ignore_sigint() -> None:
    """Worker initialiser: Ctrl-C reaches the whole process group; only the parent handles it (it
    stops the workers), so an idle worker does not die with a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(pool) -> None:
    """Cancel the pending trials of ``pool`` and end its workers now (their finished (trial, system)
    results are already checkpointed)."""
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
