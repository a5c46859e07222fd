"""Running the trials of ``svmmap reproduce``: one after another, in forked worker processes, or as Dask tasks
(:func:`run_trials`), with their results checkpointed (:class:`.trials.TrialStore`) as they come; the workers'
thread limits, and the numba kernels compiled before the trials (:func:`_warm_up`)."""
from __future__ import annotations

import copy
import dataclasses
import logging
import os
import signal
import time
import warnings
from contextlib import contextmanager, suppress
from typing import Callable, Dict, List, Optional

import numpy as np
import pandas as pd

from pyterrier_svmmap.experiments.reproduce.evaluation import MEASURES
from pyterrier_svmmap.experiments.reproduce.trials import TrialStore, _base_rows, _fusion_rows, _Trials
from pyterrier_svmmap.threads import limit as threads_limit

logger = logging.getLogger(__name__)


_WORKER_TRIALS: Optional[_Trials] = None      # set in the parent before forking the workers
_WORKER_THREADS = 1                            # threads per worker (ours, BLAS, OpenMP): cores // jobs


@contextmanager
def _thread_limit(threads: int):
    """Cap the package's threads and OpenMP's (LightGBM) at ``threads`` and BLAS at one (with threadpoolctl),
    so that ``jobs`` workers do not oversubscribe the cores. BLAS has one thread wherever a trial runs: a
    threaded BLAS sums in pieces that depend on its thread count, which changes svm-acc3's and svm-acc4's
    models in the last bits, so that the results would depend on ``--jobs`` and the machine. LightGBM is imported
    first, as threadpoolctl limits the libraries loaded when it is entered only (its learners also set their
    threads, ``systems.LIGHTGBM_PARAMS``)."""
    with threads_limit(threads):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:                                  # pragma: no cover
            yield
            return
        with suppress(ImportError):
            import lightgbm  # noqa: F401
        with threadpool_limits(limits={"blas": 1, "openmp": threads}):
            yield


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


#: queries per role of the warm-up's tiny split (see :func:`_warm_up`)
_WARM_UP_QUERIES = (3, 2, 2)


def _smallest_c(factory: Callable[[], object]) -> Callable[[], object]:
    """``factory`` whose estimator keeps only the two smallest values of its C grid (if it has one), for
    the warm-up: the kernels are the same at every C (two keep the choice on the validation queries),
    while the large C take most cutting-plane iterations."""
    def make():
        est = factory()
        grid = getattr(est, "C", None)
        if np.ndim(grid) == 1 and len(grid) > 2:
            est.C = sorted(grid)[:2]
        return est
    return make


def _warm_up(part: int, split) -> float:
    """Compile the numba kernels in two workers at once, before the trials: part 0 the dual QP and the
    working set's compaction (~23 s cold), part 1 every other kernel (~30 s), by fitting every system on
    a tiny split (a few of ``split``'s queries, the two smallest C of its grid: :func:`_smallest_c`); other
    parts do nothing. The tiny fits need the QP too: part 1 loads it from numba's cache when part 0 has
    written it by then, or compiles it as well. Each kernel is then compiled once and cached on disk, and
    the trials load it (without this, every worker compiled them all in its first trial: ~70 s).
    Kernels already cached just load; nothing here is kept or checkpointed, and a failure only logs (the
    trial that needs the system reports it). Returns the seconds it took."""
    from pyterrier_svmmap.svm.qp import compiled, solve_dual
    t = time.perf_counter()
    package_log = logging.getLogger("pyterrier_svmmap")
    level = package_log.level
    try:
        with _thread_limit(_WORKER_THREADS):
            if part == 0:                                                # the QP and the working set's compaction
                solve_dual(np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([1.0, 0.5]), np.zeros(2, dtype=np.int64),
                           np.array([1.0]), np.zeros(2))
                compiled().compact_working_set(np.eye(2), np.eye(2), np.array([1]))
            elif part == 1:
                train, valid, test = _WARM_UP_QUERIES
                tiny = dataclasses.replace(split, train=tuple(split.train)[:train],
                                           valid=tuple(split.valid)[:valid], test=tuple(split.test)[:test])
                package_log.setLevel(logging.WARNING)                # the tiny fits' INFO lines are noise
                trials = copy.copy(_WORKER_TRIALS)
                trials.systems = {name: _smallest_c(factory) for name, factory in trials.systems.items()}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for name in trials.systems:
                        try:
                            trials.compute(tiny, [name], keep_models=False)
                        except Exception as e:                       # noqa: BLE001 (a warm-up only)
                            logger.debug("warm-up of %s failed (its trials will report it): %r", name, e)
    except Exception as e:                                           # noqa: BLE001 (a warm-up only)
        logger.debug("kernel warm-up part %d failed (the trials compile what they need): %r", part, e)
    finally:
        package_log.setLevel(level)
    return time.perf_counter() - t


def run_trials(candidates: pd.DataFrame, qrels: pd.DataFrame, splits, systems: Dict[str, Callable],
               base_runs: Dict[str, pd.DataFrame], depth: Optional[int] = 1000,
               progress: bool = True, first_models: Optional[Dict[str, object]] = None, jobs: int = 1,
               store: Optional[TrialStore] = None, client=None, chosen: Optional[Dict[int, str]] = None):
    """``(per_trial, fit_seconds)``: the per-query measures of every split's test queries (a long frame:
    system, kind, trial, qid, one column per measure) of the learned ``systems``, the ``base_runs``, the base
    chosen per split (kind "chosen") and the unsupervised fusions, and ``{system: [seconds per fit]}``.

    ``jobs`` > 1 runs that many trials at once in forked processes, each with its thread pools capped at
    cores // jobs; ``client`` (a ``dask.distributed.Client``) runs every trial as a Dask task, checkpointed
    here. Results do not depend on either. ``first_models`` receives each system's model of the first split,
    ``chosen`` ``{trial: chosen base function}``; ``store`` checkpoints each (trial, system) result and reuses
    those already there. Ctrl-C stops the workers and propagates.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    trials = _Trials(candidates, qrels, systems, depth, store)
    rows: List[pd.DataFrame] = _base_rows(base_runs, splits, trials.evaluator, chosen)
    if base_runs:
        rows += _fusion_rows(candidates, splits, trials.evaluator)
    fit_seconds: Dict[str, List[float]] = {n: [] for n in systems}
    if systems:
        keep = [first_models is not None and i == 0 for i in range(len(splits))]
        bar = dict(desc="trials", unit="trial", total=len(splits), disable=not progress)
        import multiprocessing
        if client is None and jobs > 1 and "fork" not in multiprocessing.get_all_start_methods():
            logger.warning("jobs=%d needs the 'fork' start method, which this platform lacks: running the "
                           "trials one after another", jobs)
            jobs = 1
        results = _execute_dask(trials, splits, keep, client, bar) if client is not None \
            else _execute(trials, splits, keep, jobs, bar)
        for trial_rows, seconds, models in results:
            rows.extend(trial_rows)
            for name, sec in seconds.items():
                fit_seconds[name].append(sec)
            if models:
                first_models.update(models)
    columns = ["system", "kind", "trial", "qid", *MEASURES]
    per_trial = pd.concat(rows, ignore_index=True)[columns] if rows else pd.DataFrame(columns=columns)
    return per_trial, fit_seconds


def _execute(trials: _Trials, splits, keep: List[bool], jobs: int, bar: dict) -> list:
    """``trials.run`` of every split, in split order: here, or in ``jobs`` forked processes that ignore SIGINT
    and are stopped when the parent is interrupted or a trial fails."""
    global _WORKER_TRIALS, _WORKER_THREADS
    import multiprocessing
    import pyterrier as pt
    if jobs <= 1 or len(splits) <= 1:
        with _thread_limit(os.cpu_count() or 1):          # BLAS on one thread, as in the workers
            return [trials.run(s, k) for s, k in pt.tqdm(list(zip(splits, keep)), **bar)]
    from concurrent.futures import ProcessPoolExecutor
    _WORKER_TRIALS = trials
    _WORKER_THREADS = max(1, (os.cpu_count() or 1) // jobs)
    try:
        pool = ProcessPoolExecutor(min(jobs, len(splits)), mp_context=multiprocessing.get_context("fork"),
                                   initializer=_ignore_sigint)
        try:
            warm = [pool.submit(_warm_up, part, splits[0]) for part in range(min(jobs, 2))]
            results = list(pt.tqdm(pool.map(_run_in_worker, splits, keep), **bar))
            logger.debug("kernel warm-up: %s s", [round(w.result(), 1) for w in warm])
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown()
        return results
    finally:
        _WORKER_TRIALS = None


def _execute_dask(trials: _Trials, splits, keep: List[bool], client, bar: dict) -> list:
    """``trials.run`` of every split, in split order, as Dask tasks: one task per split with systems left
    (``trials`` scattered to every worker once), checkpointed here as each finishes; interrupted or failed,
    the pending tasks are cancelled."""
    import pyterrier as pt
    from dask.distributed import as_completed
    found, todo = [], {}
    for i, split in enumerate(splits):
        done, left = trials.checkpointed(split, keep[i])
        found.append(done)
        if left:
            todo[i] = left
    futures = {}
    try:
        with pt.tqdm(**bar) as progress:
            progress.update(len(splits) - len(todo))
            if todo:
                shared = client.scatter(trials, broadcast=True, hash=False)
                futures = {client.submit(_dask_trial, shared, splits[i], names, keep[i], pure=False): i
                           for i, names in todo.items()}
                for future in as_completed(list(futures)):
                    i = futures[future]
                    for name, result in future.result().items():
                        trials.save(splits[i], name, result, keep[i])
                        found[i][name] = result
                    progress.update(1)
    except BaseException:
        if futures:
            client.cancel(list(futures))
        raise
    return [trials.assemble(split, found[i], keep[i]) for i, split in enumerate(splits)]
