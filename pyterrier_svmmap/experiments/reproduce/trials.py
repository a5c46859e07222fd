"""The trials of ``svmmap reproduce`` (:func:`run_trials`): in each, every learned system fitted on the split's
training (and validation) queries and ranking its test queries' candidates; the rows of the base functions, of
the base chosen per split on its training and validation queries (:func:`choose_bases`, kind "chosen") and of the
unsupervised fusions (kind "unsupervised"). The trials run one after another, in forked worker processes (their
thread pools limited, the numba kernels compiled before: :func:`_warm_up`) or as Dask tasks.

Checkpoints of the trials (:class:`TrialStore`): every (trial, learned system) result written to
``OUT/trials/<key>.pkl`` as soon as it is computed, keyed on everything that determines it, so that an
interrupted ``svmmap reproduce`` resumes where it stopped, with the same results.

The unsupervised fusions of the base functions (:data:`FUSIONS`, the rows ``fusion-rrf`` and ``fusion-combsum``):
what a user without relevance judgments tries first. Both combine each candidate's scores (``raw``: candidates ×
functions, NaN where a function did not retrieve the candidate; ``offsets``: query boundaries) without learning:
reciprocal rank fusion (Cormack, Clarke & Büttcher 2009) and CombSUM (Fox & Shaw 1994) of per-query min–max
normalised scores.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import multiprocessing
import os
import pickle
import re
import signal
import time
import warnings
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from pyterrier_svmmap.experiments.reproduce.base_runs import digest, read_keyed, write_pickle
from pyterrier_svmmap.experiments.reproduce.evaluation import MEASURES, Evaluator, cut_depth
from pyterrier_svmmap.features.transforms import minmax_normalise
from pyterrier_svmmap.frames import candidates_from_frame
from pyterrier_svmmap.measures import ranks_within_queries
from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.string_codes import sorted_string_codes
from pyterrier_svmmap.threads import limit as threads_limit

logger = logging.getLogger(__name__)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def estimator_signature(est: object) -> str:
    """What identifies an unfitted estimator: its class, ``repr`` and public attributes (``repr`` alone omits
    some), memory addresses removed so that the signature is the same in every process."""
    params = {k: v for k, v in sorted(vars(est).items()) if not k.startswith("_") and not k.endswith("_")} \
        if hasattr(est, "__dict__") else {}
    cls = type(est)
    return _ADDRESS.sub("", f"{cls.__module__}.{cls.__qualname__}|{est!r}|{params!r}")


class TrialStore:
    """Checkpoints of (trial, system) results under ``directory``: each keyed on ``context`` (what all trials
    share: collection content, base runs, depth), the split, the system's name and estimator
    (:func:`estimator_signature`), the measures and the package version; with the per-query measures, the fit
    seconds and, for the first trial, the model."""

    def __init__(self, directory: Path, context: str):
        self.directory, self.context = Path(directory), context

    def key(self, split, name: str, est: object) -> str:
        from pyterrier_svmmap._version import __version__     # read when called (a test changes it)
        return digest("trial", self.context, split.trial, list(split.train), list(split.valid),
                      list(split.test), name, estimator_signature(est), __version__, sorted(MEASURES))

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def load(self, key: str) -> Optional[dict]:
        """The checkpoint of ``key``, or None when absent, unreadable (warned) or malformed."""
        obj = read_keyed(self.path(key), key)
        if obj is None:
            return None
        pq = obj.get("per_query")
        if not isinstance(pq, pd.DataFrame) or list(pq.columns) != list(MEASURES):
            logger.warning("checkpoint %s is malformed: recomputing it", self.path(key))
            return None
        return obj

    def save(self, key: str, per_query: pd.DataFrame, seconds: float, model: object = None) -> None:
        """Write one result atomically; the model only if it can be pickled (else it is left out)."""
        if model is not None:
            try:
                pickle.dumps(model)
            except Exception as e:                       # pragma: no cover - depends on the estimator
                logger.debug("model not checkpointed (%s)", e)
                model = None
        write_pickle(self.path(key), {"key": key, "per_query": per_query, "fit_seconds": float(seconds),
                                      "model": model})

    def remove_temporaries(self) -> None:
        """Delete the temporary files of writes that never finished (before the trials start)."""
        for f in self.directory.glob(".*.tmp") if self.directory.is_dir() else ():
            f.unlink(missing_ok=True)

    def finished(self, splits, systems: Dict[str, Callable]) -> int:
        """How many of ``splits`` have a checkpoint for every system of ``systems``."""
        return 0 if not systems else sum(all(self.path(self.key(s, n, f())).exists() for n, f in systems.items())
                                         for s in splits)


def _subset(frame: pd.DataFrame, groups: Dict[str, np.ndarray], qids: Sequence[str]) -> pd.DataFrame:
    rows = [groups[q] for q in qids if q in groups]
    return frame.iloc[np.concatenate(rows)] if rows else frame.iloc[:0]


class _Trials:
    """What every trial needs (candidates and qrels grouped by query, the systems, the evaluator), so
    that one trial is one call; worker processes inherit it by ``fork``."""

    def __init__(self, candidates: pd.DataFrame, qrels: pd.DataFrame, systems: Dict[str, Callable],
                 depth: Optional[int], store: Optional[TrialStore] = None):
        self.candidates, self.qrels, self.systems, self.depth, self.store = candidates, qrels, systems, depth, store
        self.evaluator = Evaluator(qrels)
        self.cand_groups = {q: np.asarray(ix) for q, ix in candidates.groupby("qid", sort=False).indices.items()}
        self.qrel_groups = {q: np.asarray(ix) for q, ix in qrels.groupby("qid", sort=False).indices.items()}

    def __getstate__(self):
        """What a Dask worker receives (``client.scatter``): the inputs, not the store (the client
        writes the checkpoints) nor the evaluator and groups (rebuilt on arrival, once per worker)."""
        return self.candidates, self.qrels, self.systems, self.depth

    def __setstate__(self, state):
        self.__init__(*state)

    def run(self, split, keep_models: bool) -> Tuple[List[pd.DataFrame], Dict[str, float], Dict[str, object]]:
        """Fit every system on ``split``; (per-query rows, fit seconds, the models if ``keep_models``).
        With a store, a system with a checkpoint is not refitted and each fit is checkpointed at once."""
        results, todo = self.checkpointed(split, keep_models)
        results.update(self.compute(split, todo, keep_models, on_result=self.save))
        return self.assemble(split, results)

    def checkpointed(self, split, keep_models: bool) -> Tuple[Dict[str, tuple], List[str]]:
        """``{name: (per_query, fit_seconds, model or None)}`` of the systems checkpointed for ``split``, and
        the names of the others."""
        found: Dict[str, tuple] = {}
        for name in self.systems:
            done = None if self.store is None else self.store.load(self.store.key(split, name, self.systems[name]()))
            if done is not None:
                logger.debug("trial %d %s: reused the checkpoint", split.trial, name)
                found[name] = done["per_query"], done["fit_seconds"], done.get("model") if keep_models else None
        return found, [name for name in self.systems if name not in found]

    def save(self, split, name: str, result: tuple) -> None:
        """Checkpoint one ``(per_query, fit_seconds, model or None)``."""
        if self.store is not None:
            self.store.save(self.store.key(split, name, self.systems[name]()), *result)

    def compute(self, split, names: Sequence[str], keep_models: bool, on_result: Optional[Callable] = None
                ) -> Dict[str, tuple]:
        """Fit the systems ``names`` on ``split``: ``{name: (per_query, fit_seconds, model or None)}``;
        ``on_result(split, name, result)`` is called after each fit (checkpointing)."""
        if not names:
            return {}
        test = list(split.test)
        tr, va, te = (_subset(self.candidates, self.cand_groups, q) for q in (split.train, split.valid, test))
        qtr, qva = (_subset(self.qrels, self.qrel_groups, q) for q in (split.train, split.valid))
        out = {}
        converted: Dict[object, object] = {}      # the split's frames as Candidates, shared by the estimators
        for name in names:
            est = self.systems[name]()
            pq, sec = self._fit_and_test(est, split, tr, qtr, va, qva, te, test, converted)
            out[name] = (pq, sec, est if keep_models else None)
            if on_result is not None:
                on_result(split, name, out[name])
            logger.debug("trial %d %s: fit %.2fs, test MAP %.4f", split.trial, name, sec, pq["map"].mean())
        return out

    def assemble(self, split, results: Dict[str, tuple]):
        """``run``'s return value from ``{name: (per_query, fit_seconds, model or None)}``, in system order."""
        rows = [results[n][0].reset_index().assign(system=n, kind="learned", trial=split.trial) for n in self.systems]
        models = {n: results[n][2] for n in self.systems if results[n][2] is not None}
        return rows, {n: results[n][1] for n in self.systems}, models

    def _fit_and_test(self, est, split, tr, qtr, va, qva, te, test, converted: Optional[dict] = None
                      ) -> Tuple[pd.DataFrame, float]:
        """Fit ``est`` on the split's training (and validation) queries: its per-query test measures and the fit's
        seconds; by :meth:`_fit_and_test_candidates` if it has that path and ``converted`` is given."""
        if converted is not None and hasattr(est, "fit_candidates") and hasattr(est, "score_candidates") \
                and len(tr) and len(te):
            return self._fit_and_test_candidates(est, split, tr, qtr, va, qva, te, test, converted)
        t = time.perf_counter()
        est.fit(tr, qtr, *((va, qva) if len(split.valid) else ()))
        seconds = time.perf_counter() - t
        return self.evaluator.per_query(cut_depth(est.transform(te), self.depth), test), seconds

    def _fit_and_test_candidates(self, est, split, tr, qtr, va, qva, te, test, converted: dict
                                 ) -> Tuple[pd.DataFrame, float]:
        """:meth:`_fit_and_test` through ``fit_candidates`` and ``score_candidates`` (the same measures), the
        split's frames converted once per ``rel`` and shared in ``converted``."""
        rel = getattr(est, "rel", 1.0)
        if ("train", rel) not in converted:
            train = candidates_from_frame(tr, qtr, rel=rel)
            converted["train", rel] = train, (candidates_from_frame(va, qva, n_functions=train.raw.shape[1], rel=rel)
                                              if len(split.valid) and len(va) else None)
        train, valid = converted["train", rel]
        if "test" not in converted:         # with the evaluator's codes of its rows' qid and docno
            cands = candidates_from_frame(te, n_functions=train.raw.shape[1])
            converted["test"] = cands, (sorted_string_codes(cands.qids[query_ids(cands.offsets)]),
                                        sorted_string_codes(cands.frame["docno"]))
        cands, ((q_code, q_strings), (d_code, d_strings)) = converted["test"]
        t = time.perf_counter()
        est.fit_candidates(train, valid, feature_names=tr.attrs.get("feature_names"))
        seconds = time.perf_counter() - t
        scores = est.score_candidates(cands)
        keep = ranks_within_queries(scores, cands.offsets)[1] < self.depth if self.depth is not None else slice(None)
        pq = self.evaluator.per_query_codes(q_code[keep], q_strings, d_code[keep], d_strings, scores[keep], test)
        return pq, seconds


#: name of the row of the base function chosen per split on the split's non-test queries
CHOSEN_BASE = "base-chosen-on-training"


def choose_bases(base_pq: Dict[str, pd.DataFrame], splits) -> Dict[int, str]:
    """Per split (by ``trial``): the base function with the highest MAP over the split's training and
    validation queries (the first of equal ones): what a user without a learner can choose."""
    return {s.trial: max(base_pq, key=lambda name: float(base_pq[name].loc[[*s.train, *s.valid], "map"].mean()),
                         default=None) for s in splits}


def _test_rows(pq: pd.DataFrame, split, system: str, kind: str) -> pd.DataFrame:
    """The per-query measures ``pq`` of ``split``'s test queries, as rows of ``system`` in that trial."""
    return pq.loc[list(split.test)].reset_index().assign(system=system, kind=kind, trial=split.trial)


#: RRF's constant (Cormack et al. 2009)
RRF_K = 60.0


def competition_ranks(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per candidate, 1 + the number of candidates of its query with a higher score; NaN scores get NaN."""
    q = query_ids(np.asarray(offsets, dtype=np.int64))
    return pd.Series(np.asarray(scores, dtype=float)).groupby(q).rank(method="min", ascending=False).to_numpy()


def reciprocal_rank_fusion(raw: np.ndarray, offsets: np.ndarray, k: float = RRF_K) -> np.ndarray:
    """RRF scores: Σ_f 1/(k + rank_f(d)) over the functions that retrieved d, equal scores sharing the best rank
    (so that the fusion does not depend on the order of the rows)."""
    raw = np.asarray(raw, dtype=float)
    out = np.zeros(len(raw))
    for f in range(raw.shape[1]):
        ranks = competition_ranks(raw[:, f], offsets)
        out += np.where(np.isnan(ranks), 0.0, 1.0 / (k + np.nan_to_num(ranks)))
    return out


def comb_sum(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """CombSUM of the scores min–max normalised per query and function, missing scores counting 0 (a function
    with one score in the query counting 1 for the candidates it retrieved)."""
    raw = np.asarray(raw, dtype=float)
    if not len(raw):
        return np.zeros(0)
    return np.nan_to_num(minmax_normalise(raw, offsets), nan=0.0).sum(axis=1)


#: the ``svmmap reproduce`` rows of the fusions: name → fusion
FUSIONS: Dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"fusion-rrf": reciprocal_rank_fusion,
                                                                      "fusion-combsum": comb_sum}


def _fusion_rows(candidates: pd.DataFrame, splits, evaluator: "Evaluator") -> List[pd.DataFrame]:
    """Per split, the test rows of every fusion of :data:`FUSIONS` (one run over all queries)."""
    if candidates is None or not len(candidates):
        return []
    cands = candidates_from_frame(candidates)
    qid, docno, qids = cands.frame["qid"].to_numpy(), cands.frame["docno"].to_numpy(), _all_qids(splits)
    pqs = {name: evaluator.per_query_arrays(qid, docno, fusion(cands.raw, cands.offsets), qids)
           for name, fusion in FUSIONS.items()}
    return [_test_rows(pq, split, name, "unsupervised") for name, pq in pqs.items() for split in splits]


def _base_rows(base_runs: Dict[str, pd.DataFrame], splits, evaluator: "Evaluator",
               chosen: Optional[Dict[int, str]]) -> List[pd.DataFrame]:
    """Per split, each base run's test rows and those of the base chosen on the split's training and validation
    queries (:func:`choose_bases`; ``chosen`` receives ``{trial: name}``)."""
    if not base_runs:
        return []
    qids = _all_qids(splits)
    base_pq = {name: evaluator.per_query(run, qids) for name, run in base_runs.items()}
    picks = choose_bases(base_pq, splits)
    if chosen is not None:
        chosen.update(picks)
    rows: List[pd.DataFrame] = []
    for split in splits:
        rows += [_test_rows(pq, split, name, "base") for name, pq in base_pq.items()]
        rows.append(_test_rows(base_pq[picks[split.trial]], split, CHOSEN_BASE, "chosen"))
    return rows


def _all_qids(splits) -> List[str]:
    return sorted({q for s in splits for q in (*s.train, *s.valid, *s.test)})


_WORKER_TRIALS: Optional[_Trials] = None      # set in the parent before forking the workers
_WORKER_THREADS = 1                            # threads per worker (ours, BLAS, OpenMP): cores // jobs


@contextmanager
def _thread_limit(threads: int):
    """Cap the package's threads and OpenMP's (LightGBM) at ``threads`` and BLAS at one (a threaded BLAS sums in
    pieces that depend on its thread count: svm-acc3's and svm-acc4's models would depend on ``--jobs``).
    LightGBM is imported first: threadpoolctl limits only the libraries loaded when it is entered."""
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


def _stop_pool(pool) -> None:
    """Cancel the pending trials of ``pool`` and end its workers now (finished results are checkpointed)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())   # shutdown() forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()                                       # a no-op for a process that has ended
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
_WARM_UP_QUERIES = {"train": 3, "valid": 2, "test": 2}


def _smallest_c(factory: Callable[[], object]) -> Callable[[], object]:
    """``factory`` with only the two smallest C of its grid: the warm-up's kernels are the same at every C."""
    def make():
        est = factory()
        grid = getattr(est, "C", None)
        if np.ndim(grid) == 1 and len(grid) > 2:
            est.C = sorted(grid)[:2]
        return est
    return make


def _warm_up(part: int, split) -> float:
    """Compile the numba kernels in two workers before the trials (else every worker compiled them all in its
    first trial, ~70 s): part 0 the dual QP (~23 s cold), part 1 the rest by fitting every system on a tiny
    split of ``split`` (:func:`_smallest_c`); nothing is kept, a failure only logs. Returns the seconds."""
    import pyterrier_svmmap.svm.qp as qp
    t = time.perf_counter()
    package_log = logging.getLogger("pyterrier_svmmap")
    level = package_log.level
    try:
        with _thread_limit(_WORKER_THREADS):
            if part == 0:                                                # the QP and the working set's compaction
                qp.warm_up()
            elif part == 1:
                tiny = dataclasses.replace(split, **{role: tuple(getattr(split, role))[:n]
                                                     for role, n in _WARM_UP_QUERIES.items()})
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
    if jobs <= 1 or len(splits) <= 1:
        with _thread_limit(os.cpu_count() or 1):          # BLAS on one thread, as in the workers
            return [trials.run(s, k) for s, k in pt.tqdm(list(zip(splits, keep)), **bar)]
    from concurrent.futures import ProcessPoolExecutor
    _WORKER_TRIALS = trials
    _WORKER_THREADS = max(1, (os.cpu_count() or 1) // jobs)
    try:
        pool = ProcessPoolExecutor(min(jobs, len(splits)), mp_context=multiprocessing.get_context("fork"),
                                   initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))
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
    """``trials.run`` of every split as Dask tasks (one per split with systems left), checkpointed here as each
    finishes; interrupted or failed, the pending tasks are cancelled."""
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
                        trials.save(splits[i], name, result)
                        found[i][name] = result
                    progress.update(1)
    except BaseException:
        if futures:
            client.cancel(list(futures))
        raise
    return [trials.assemble(split, found[i]) for i, split in enumerate(splits)]
