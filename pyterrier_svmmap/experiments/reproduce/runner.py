"""Running the trials of ``svmmap reproduce``: one after another, in forked worker processes, or as Dask tasks
(:func:`run_trials`), with their results checkpointed (:mod:`.checkpoints`) as they come."""
from __future__ import annotations

import logging
import os
from typing import Callable, Dict, List, Optional

import pandas as pd

import pyterrier_svmmap.experiments.reproduce.workers as workers
from pyterrier_svmmap.experiments.reproduce.checkpoints import TrialStore
from pyterrier_svmmap.experiments.reproduce.evaluation import MEASURES
from pyterrier_svmmap.experiments.reproduce.trials import _base_rows, _fusion_rows, _Trials
from pyterrier_svmmap.experiments.reproduce.warm_up import _warm_up

logger = logging.getLogger(__name__)


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
    import multiprocessing
    import pyterrier as pt
    if jobs <= 1 or len(splits) <= 1:
        with workers._thread_limit(os.cpu_count() or 1):          # BLAS on one thread, as in the workers
            return [trials.run(s, k) for s, k in pt.tqdm(list(zip(splits, keep)), **bar)]
    from concurrent.futures import ProcessPoolExecutor
    workers._WORKER_TRIALS = trials
    workers._WORKER_THREADS = max(1, (os.cpu_count() or 1) // jobs)
    try:
        pool = ProcessPoolExecutor(min(jobs, len(splits)), mp_context=multiprocessing.get_context("fork"),
                                   initializer=workers._ignore_sigint)
        try:
            warm = [pool.submit(_warm_up, part, splits[0]) for part in range(min(jobs, 2))]
            results = list(pt.tqdm(pool.map(workers._run_in_worker, splits, keep), **bar))
            logger.debug("kernel warm-up: %s s", [round(w.result(), 1) for w in warm])
        except BaseException:
            workers._stop_pool(pool)
            raise
        pool.shutdown()
        return results
    finally:
        workers._WORKER_TRIALS = None


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
                futures = {client.submit(workers._dask_trial, shared, splits[i], names, keep[i], pure=False): i
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
