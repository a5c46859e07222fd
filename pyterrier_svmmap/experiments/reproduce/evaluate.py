"""Running the trials and aggregating them as in Yue et al. (2007) §5.

Per trial, every learned system is fitted on the training queries (choosing its hyper-parameters on
the validation queries) and ranks the candidates of the test queries; every base function's ranking
of a test query is its own run. Per-query AP, nDCG@10 and RR@10 are computed as ``ir_measures``
computes them, in one vectorised pass per run (:class:`Evaluator`), against the full qrels (relevant
documents outside the candidates count as missed; a test query a system returns nothing for scores 0).
Learned rankings are cut at ``depth`` (1000, the base runs' depth). The estimators with an array-level
path (every :class:`~pyterrier_svmmap.estimators.structsvm.RankerEstimator`) share one conversion of each split's
frames (``fit_candidates`` / ``score_candidates``); any other ``pt.Estimator`` gets the frames.

Aggregation, per system: each query's values are averaged over the trials in which it was tested;
MAP (etc.) is the mean over those queries. Against the reference system (``svm-map``): W = queries on
which the reference's averaged AP is higher, L = lower, and the two-sided Wilcoxon signed-rank p-value
on the per-query averaged APs.

The base function chosen per split on its training and validation queries (:func:`choose_bases`) is
one more row, ``base-chosen-on-training`` (kind "chosen"), aggregated like a learned system.

Checkpoints: with a :class:`TrialStore`, every (trial, learned system) result — per-query measures,
fit seconds and, for the first trial, the model — is written atomically to ``OUT/trials/<key>.pkl``
as soon as it is computed (by the worker process that computed it; with Dask, by the client as each
trial's task finishes), keyed by everything that
determines it: the caller's context (collection content, base runs, depth), the split, the system's
name, its estimator's class and parameters, and the package version. A later run with the same inputs
reuses them, so an interrupted ``svmmap reproduce`` resumes where it stopped, with the same results.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import os
import pickle
import re
import signal
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from pyterrier_svmmap.string_codes import sorted_string_codes

logger = logging.getLogger(__name__)

#: results.json key -> ir_measures measure name
MEASURES = {"map": "AP", "ndcg_cut_10": "nDCG@10", "recip_rank_10": "RR@10"}


class Evaluator:
    """Per-query measures of runs (qid, docno, score) against fixed qrels (qid, docno, label).

    ``AP``, ``nDCG@10`` and ``RR@10`` (relevant: label ≥ 1) exactly as ``ir_measures`` computes them, in
    one vectorised pass over the run (:mod:`pyterrier_svmmap.measures` on the run sorted once), with
    ir_measures' semantics (tests/test_frames_fast.py compares them per query on Vaswani runs):

    * AP and nDCG@10 come from trec_eval (ir_measures' pytrec_eval backend): scores compared as float32,
      equal ones ordered by docno descending; AP divides by all relevant documents in the qrels (those
      not retrieved count as missed); nDCG's gain is the label (negative labels 0), the ideal ranking is
      the qrels' labels sorted;
    * RR@10 comes from ir_measures' msmarco backend: scores compared as doubles, equal ones ordered by
      docno ascending;
    * a query without results, or without qrels, scores 0; a document listed twice for a query keeps
      its last score; a (qid, docno) twice in the qrels keeps its last label.
    """

    #: relevance threshold of AP and RR@10 (ir_measures' default rel=1) and nDCG's cutoff
    REL = 1
    NDCG_K = 10
    RR_K = 10

    def __init__(self, qrels: pd.DataFrame):
        q = pd.DataFrame({"qid": qrels["qid"].astype(str).to_numpy(), "docno": qrels["docno"].astype(str).to_numpy(),
                          "label": qrels["label"].astype(int).to_numpy()})
        q = q.drop_duplicates(["qid", "docno"], keep="last")
        q_code, qids = pd.factorize(q["qid"])
        d_code, docnos = pd.factorize(q["docno"])
        self._qids, self._docnos = pd.Index(qids), pd.Index(docnos)
        key = q_code.astype(np.int64) * max(len(docnos), 1) + d_code
        order = np.argsort(key, kind="stable")
        self._keys, self._labels = key[order], q["label"].to_numpy()[order]
        labels = q["label"].to_numpy()
        self._n_relevant = np.bincount(q_code, weights=labels >= self.REL, minlength=len(qids))
        # ideal DCG@k per query: the positive labels sorted, the first k discounted
        gains = np.maximum(labels, 0).astype(float)
        ideal = np.lexsort((-gains, q_code))
        starts = np.searchsorted(q_code[ideal], np.arange(len(qids)))
        rank = np.arange(len(ideal)) - starts[q_code[ideal]]
        disc = np.where(rank < self.NDCG_K, 1.0 / np.log2(rank + 2.0), 0.0)
        self._idcg = np.bincount(q_code[ideal], weights=gains[ideal] * disc, minlength=len(qids))

    def per_query(self, run: pd.DataFrame, qids: Sequence[str]) -> pd.DataFrame:
        """Frame indexed by ``qids`` with one column per measure; queries without results get 0."""
        q_code, q_strings = sorted_string_codes(run["qid"])
        d_code, d_strings = sorted_string_codes(run["docno"])
        return self._per_query(q_code, q_strings, d_code, d_strings, run["score"].astype(float).to_numpy(), qids)

    def per_query_arrays(self, row_qids: np.ndarray, docnos: np.ndarray, scores: np.ndarray,
                         qids: Sequence[str]) -> pd.DataFrame:
        """:meth:`per_query` of a run given as arrays (qid and docno of each row, as str, and its score)."""
        q_code, q_strings = sorted_string_codes(row_qids)
        d_code, d_strings = sorted_string_codes(docnos)
        return self.per_query_codes(q_code, q_strings, d_code, d_strings, scores, qids)

    def per_query_codes(self, q_code, q_strings, d_code, d_strings, score, qids) -> pd.DataFrame:
        """:meth:`per_query` of a run whose qids and docnos are given as :func:`sorted_string_codes` of
        them (codes per row, the sorted distinct strings): for runs over the same rows, coded once."""
        return self._per_query(q_code, q_strings, d_code, d_strings, np.asarray(score, dtype=float), qids)

    def _per_query(self, q_code, q_strings, d_code, d_strings, score, qids) -> pd.DataFrame:
        from pyterrier_svmmap.measures import average_precision, dcg_at, reciprocal_rank_at
        qids = [str(q) for q in qids]
        wanted = pd.Index(pd.unique(np.asarray(qids, dtype=object)))
        out = np.zeros((len(wanted), len(MEASURES)))
        qi = wanted.get_indexer(q_strings)[q_code]
        keep = qi >= 0
        n_docs = max(len(d_strings), 1)
        # a document listed twice for a query keeps its last score
        keep &= ~pd.Index(np.where(keep, qi.astype(np.int64) * n_docs + d_code, -1 - np.arange(len(qi)))
                          ).duplicated(keep="last")
        if keep.any():
            qi, d_code, score = qi[keep], d_code[keep], score[keep]
            # each row's label from the qrels (0 when unjudged)
            rq = self._qids.get_indexer(wanted)[qi]
            rd = self._docnos.get_indexer(d_strings)[d_code]
            label = np.zeros(len(qi))
            judged = (rq >= 0) & (rd >= 0)
            key = rq[judged].astype(np.int64) * max(len(self._docnos), 1) + rd[judged]
            at = np.minimum(np.searchsorted(self._keys, key), max(len(self._keys) - 1, 0))
            hit = self._keys[at] == key if len(self._keys) else np.zeros(len(key), bool)
            label[np.flatnonzero(judged)[hit]] = self._labels[at[hit]]
            known = self._qids.get_indexer(wanted)            # -1 (no qrels) picks the appended 0
            n_rel = np.append(self._n_relevant, 0.0)[known]
            idcg = np.append(self._idcg, 0.0)[known]
            doc_rank = d_code                            # codes order docnos as their strings do
            offsets = np.concatenate([[0], np.cumsum(np.bincount(qi, minlength=len(wanted)))])
            position = -np.arange(len(qi), dtype=float)          # scores that keep a given order
            # trec_eval's ranking (AP, nDCG@10): float32 scores descending, then docno descending
            trec = np.lexsort((-doc_rank, -score.astype(np.float32), qi))
            out[:, 0] = average_precision(position, label[trec] >= self.REL, offsets, n_rel)
            dcg = dcg_at(position, np.maximum(label[trec], 0.0), offsets, self.NDCG_K)
            out[:, 1] = np.divide(dcg, idcg, out=np.zeros(len(wanted)), where=idcg > 0)
            # ir_measures' msmarco ranking (RR@10): double scores descending, then docno ascending
            msmarco = np.lexsort((doc_rank, -score, qi))
            out[:, 2] = reciprocal_rank_at(position, label[msmarco] >= self.REL, offsets, self.RR_K)
        frame = pd.DataFrame(out, index=wanted, columns=list(MEASURES))
        return frame.reindex(pd.Index(qids, name="qid"))


def cut_depth(res: pd.DataFrame, depth: Optional[int]) -> pd.DataFrame:
    """The top ``depth`` rows of every query by score (all rows when ``depth`` is None)."""
    if depth is None:
        return res
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    res = res.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    return res[res.groupby("qid", sort=False).cumcount() < depth]


def _subset(frame: pd.DataFrame, groups: Dict[str, np.ndarray], qids: Sequence[str]) -> pd.DataFrame:
    rows = [groups[q] for q in qids if q in groups]
    return frame.iloc[np.concatenate(rows)] if rows else frame.iloc[:0]


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def estimator_signature(est: object) -> str:
    """What identifies an unfitted estimator: its class, ``repr`` and public attributes (the
    constructor's parameters; ``repr`` alone omits some, e.g. StructSVM's binning), memory addresses
    removed so that the signature is the same in every process."""
    params = {k: v for k, v in sorted(vars(est).items()) if not k.startswith("_") and not k.endswith("_")} \
        if hasattr(est, "__dict__") else {}
    cls = type(est)
    return _ADDRESS.sub("", f"{cls.__module__}.{cls.__qualname__}|{est!r}|{params!r}")


class TrialStore:
    """Checkpoints of (trial, system) results under a folder (see the module's docstring).

    ``context`` is the key of everything shared by all trials (collection content, base runs, depth);
    :meth:`key` adds the split, the system and the package version."""

    def __init__(self, directory: Path, context: str):
        self.directory, self.context = Path(directory), context

    def key(self, split, name: str, est: object) -> str:
        from pyterrier_svmmap._version import __version__
        from pyterrier_svmmap.experiments.reproduce.base_runs import digest
        return digest("trial", self.context, split.trial, list(split.train), list(split.valid),
                      list(split.test), name, estimator_signature(est), __version__, sorted(MEASURES))

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def load(self, key: str) -> Optional[dict]:
        """The checkpoint of ``key``, or None when absent, unreadable (warned) or malformed."""
        from pyterrier_svmmap.experiments.reproduce.base_runs import read_keyed
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
        from pyterrier_svmmap.experiments.reproduce.base_runs import write_pickle
        if model is not None:
            try:
                pickle.dumps(model)
            except Exception as e:                       # pragma: no cover - depends on the estimator
                logger.debug("model not checkpointed (%s)", e)
                model = None
        write_pickle(self.path(key), {"key": key, "per_query": per_query, "fit_seconds": float(seconds),
                                      "model": model})

    def remove_temporaries(self) -> int:
        """Delete the temporary files of writes that never finished (a worker ended by Ctrl-C);
        call it before the trials start, never while another run writes to the same folder."""
        stale = list(self.directory.glob(".*.tmp")) if self.directory.is_dir() else []
        for f in stale:
            f.unlink(missing_ok=True)
        return len(stale)

    def finished(self, splits, systems: Dict[str, Callable]) -> int:
        """How many of ``splits`` have a checkpoint for every system of ``systems``."""
        if not systems:
            return 0
        return sum(all(self.path(self.key(s, n, f())).exists() for n, f in systems.items()) for s in splits)


class TrialsInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_trials`; ``finished`` trials are checkpointed in the store."""

    def __init__(self, finished: int):
        super().__init__(f"{finished} finished trials checkpointed")
        self.finished = finished


class _Trials:
    """What every trial needs (candidates and qrels grouped by query, the systems, the evaluator), so
    that one trial is one call; worker processes inherit it by ``fork``."""

    def __init__(self, candidates: pd.DataFrame, qrels: pd.DataFrame, systems: Dict[str, Callable],
                 depth: Optional[int], store: Optional[TrialStore] = None):
        self.candidates, self.qrels, self.systems, self.depth = candidates, qrels, systems, depth
        self.store = store
        self.evaluator = Evaluator(qrels)
        self.cand_groups = {q: np.asarray(ix) for q, ix in candidates.groupby("qid", sort=False).indices.items()}
        self.qrel_groups = {q: np.asarray(ix) for q, ix in qrels.groupby("qid", sort=False).indices.items()}

    def __getstate__(self):
        """What a Dask worker receives (``client.scatter``): the inputs, not the store (the client
        writes the checkpoints) nor the evaluator and groups (rebuilt on arrival, once per worker)."""
        return {"candidates": self.candidates, "qrels": self.qrels, "systems": self.systems,
                "depth": self.depth}

    def __setstate__(self, state):
        self.__init__(state["candidates"], state["qrels"], state["systems"], state["depth"], None)

    def run(self, split, keep_models: bool) -> Tuple[List[pd.DataFrame], Dict[str, float], Dict[str, object]]:
        """Fit every system on ``split``; (per-query rows, fit seconds, the models if ``keep_models``).
        With a store, a system with a checkpoint is not refitted and each fit is checkpointed at once."""
        results = {}
        todo = []
        for name in self.systems:
            done = self.load(split, name, keep_models)
            if done is not None:
                results[name] = done
            else:
                todo.append(name)
        for name, (pq, sec, est) in self.compute(split, todo, keep_models, on_result=self.save).items():
            results[name] = (pq, sec, est)
        return self.assemble(split, results, keep_models)

    def load(self, split, name: str, keep_models: bool) -> Optional[tuple]:
        """``(per_query, fit_seconds, model or None)`` from the store's checkpoint, or None."""
        if self.store is None:
            return None
        done = self.store.load(self.store.key(split, name, self.systems[name]()))
        if done is None:
            return None
        logger.debug("trial %d %s: reused the checkpoint", split.trial, name)
        return done["per_query"], done["fit_seconds"], done.get("model") if keep_models else None

    def save(self, split, name: str, result: tuple, keep_models: bool) -> None:
        """Checkpoint one ``(per_query, fit_seconds, model)`` (the model only if ``keep_models``)."""
        if self.store is not None:
            pq, sec, est = result
            self.store.save(self.store.key(split, name, self.systems[name]()), pq, sec,
                            est if keep_models else None)

    def compute(self, split, names: Sequence[str], keep_models: bool, on_result: Optional[Callable] = None
                ) -> Dict[str, tuple]:
        """Fit the systems ``names`` on ``split``: ``{name: (per_query, fit_seconds, model or None)}``;
        ``on_result(split, name, result, keep_models)`` is called after each fit (checkpointing)."""
        if not names:
            return {}
        test = list(split.test)
        tr, va, te = (_subset(self.candidates, self.cand_groups, split.train),
                      _subset(self.candidates, self.cand_groups, split.valid),
                      _subset(self.candidates, self.cand_groups, test))
        qtr = _subset(self.qrels, self.qrel_groups, split.train)
        qva = _subset(self.qrels, self.qrel_groups, split.valid)
        out = {}
        converted: Dict[object, object] = {}      # the split's frames as Candidates, shared by the estimators
        for name in names:
            est = self.systems[name]()
            pq, sec = self._fit_and_test(est, split, tr, qtr, va, qva, te, test, converted)
            out[name] = (pq, sec, est if keep_models else None)
            if on_result is not None:
                on_result(split, name, out[name], keep_models)
            logger.debug("trial %d %s: fit %.2fs, test MAP %.4f", split.trial, name, sec, pq["map"].mean())
        return out

    def assemble(self, split, results: Dict[str, tuple], keep_models: bool):
        """``run``'s return value from ``{name: (per_query, fit_seconds, model)}``, in system order."""
        rows, seconds, models = [], {}, {}
        for name in self.systems:
            pq, seconds[name], est = results[name]
            if keep_models and est is not None:
                models[name] = est
            rows.append(pq.reset_index().assign(system=name, kind="learned", trial=split.trial))
        return rows, seconds, models

    def _fit_and_test(self, est, split, tr, qtr, va, qva, te, test, converted: Optional[dict] = None
                      ) -> Tuple[pd.DataFrame, float]:
        """Fit ``est`` on the split's training (and validation) queries; its per-query test measures
        and the fit's seconds. An estimator with an array-level path takes it, sharing the conversions
        of the split's frames in ``converted`` (see :meth:`_fit_and_test_candidates`)."""
        if converted is not None and hasattr(est, "fit_candidates") and hasattr(est, "score_candidates") \
                and len(tr) and len(te):
            return self._fit_and_test_candidates(est, split, tr, qtr, va, qva, te, test, converted)
        t = time.perf_counter()
        if len(split.valid):
            est.fit(tr, qtr, va, qva)
        else:
            est.fit(tr, qtr)
        seconds = time.perf_counter() - t
        return self.evaluator.per_query(cut_depth(est.transform(te), self.depth), test), seconds

    def _fit_and_test_candidates(self, est, split, tr, qtr, va, qva, te, test, converted: dict
                                 ) -> Tuple[pd.DataFrame, float]:
        """:meth:`_fit_and_test` for an estimator with an array-level path (``fit_candidates`` and
        ``score_candidates``, as every :class:`~pyterrier_svmmap.estimators.structsvm.RankerEstimator`): the split's
        frames are converted once (per relevance threshold ``rel``) and kept in ``converted`` for the
        split's other estimators; the same model, scores and measures as ``fit`` and ``transform``. The
        test rows are cut at ``depth`` by score (the tie policy makes a query's scores distinct, so the
        cut is the one :func:`cut_depth` makes on ``transform``'s output)."""
        from pyterrier_svmmap.queries import query_ids
        from pyterrier_svmmap.frames import candidates_from_frame
        from pyterrier_svmmap.measures import ranks_within_queries
        rel = getattr(est, "rel", 1.0)
        if ("train", rel) not in converted:
            train = candidates_from_frame(tr, qtr, rel=rel)
            valid = None
            if len(split.valid) and len(va):
                valid = candidates_from_frame(va, qva, n_functions=train.raw.shape[1], rel=rel)
            converted["train", rel] = (train, valid)
        train, valid = converted["train", rel]
        if "test" not in converted:
            cands = candidates_from_frame(te, n_functions=train.raw.shape[1])
            converted["test"] = cands
            # the evaluator's codes of the test rows' qid and docno, shared by the split's estimators
            converted["test codes"] = (sorted_string_codes(cands.qids[query_ids(cands.offsets)]),
                                       sorted_string_codes(cands.frame["docno"]))
        cands = converted["test"]
        (q_code, q_strings), (d_code, d_strings) = converted["test codes"]
        t = time.perf_counter()
        est.fit_candidates(train, valid, feature_names=tr.attrs.get("feature_names"))
        seconds = time.perf_counter() - t
        scores = est.score_candidates(cands)
        keep = np.ones(len(scores), dtype=bool)
        if self.depth is not None:
            keep = ranks_within_queries(scores, cands.offsets)[1] < self.depth
        pq = self.evaluator.per_query_codes(q_code[keep], q_strings, d_code[keep], d_strings, scores[keep], test)
        return pq, seconds


_WORKER_TRIALS: Optional[_Trials] = None      # set in the parent before forking the workers
_WORKER_THREADS = 1                            # BLAS / OpenMP threads per worker: cores // jobs


def _thread_limit(threads: int):
    """Cap BLAS and OpenMP (LightGBM) thread pools at ``threads`` if threadpoolctl is installed (it comes
    with scikit-learn, the ``peers`` extra): without it, each of ``jobs`` workers would start a pool
    of every core's threads, and the oversubscribed cores would slow the fits and inflate fit_seconds."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                                  # pragma: no cover
        from contextlib import nullcontext
        return nullcontext()
    _load_thread_pools()
    return threadpool_limits(limits=threads)


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


#: queries per role of the warm-up's tiny split (see :func:`_warm_up`)
_WARM_UP_QUERIES = (3, 2, 2)


def _smallest_c(factory: Callable[[], object]) -> Callable[[], object]:
    """``factory`` whose estimator keeps only the two smallest values of its C grid (if it has one), for
    the warm-up: the kernels are the same at every C (two keep the choice on the validation queries),
    while the large C take most cutting-plane iterations, on the QP's numpy path there (~14 s of 16 tiny
    fits with the whole grid)."""
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
    a tiny split (a few of ``split``'s queries, the two smallest C of its grid: :func:`_smallest_c`) with
    the QP's numpy path; other parts do nothing. Each kernel is then compiled once and cached on disk,
    and the trials load it (without this, every worker compiled them all in its first trial: ~70 s).
    Kernels already cached just load; nothing here is kept or checkpointed, and a failure only logs (the
    trial that needs the system reports it). Returns the seconds it took."""
    import pyterrier_svmmap._jit as _jit
    from pyterrier_svmmap.svm.qp import compiled, solve_dual
    t = time.perf_counter()
    if compiled() is None:                                           # no numba: nothing to compile
        return 0.0
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
                with _jit.without("svm._qp_kernels"), warnings.catch_warnings():
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


#: name of the row of the base function chosen per split on the split's non-test queries
CHOSEN_BASE = "base-chosen-on-training"


def choose_bases(base_pq: Dict[str, pd.DataFrame], splits) -> Dict[int, str]:
    """Per split (by ``trial``): the base function whose MAP over the split's training *and*
    validation queries — every judged query the learners were given — is highest; ties go to the
    first in ``base_pq``'s order. This is the choice a user without a learner can make: its test
    measures are the honest counterpart of the best base function in hindsight (chosen on the test
    queries)."""
    chosen = {}
    for split in splits:
        seen = list(split.train) + list(split.valid)
        best, best_map = None, -np.inf
        for name, pq in base_pq.items():
            m = float(pq.loc[seen, "map"].mean())
            if m > best_map:
                best, best_map = name, m
        chosen[split.trial] = best
    return chosen


def _base_rows(base_runs: Dict[str, pd.DataFrame], splits, evaluator: "Evaluator",
               chosen: Optional[Dict[int, str]]) -> List[pd.DataFrame]:
    """Per split, each base run's test rows and those of the base chosen on the split's training
    and validation queries (:func:`choose_bases`; ``chosen`` receives ``{trial: name}``)."""
    if not base_runs:
        return []
    all_qids = sorted({q for s in splits for q in (*s.train, *s.valid, *s.test)})
    base_pq = {name: evaluator.per_query(run, all_qids) for name, run in base_runs.items()}
    picks = choose_bases(base_pq, splits)
    if chosen is not None:
        chosen.update(picks)
    rows: List[pd.DataFrame] = []
    for split in splits:
        test = list(split.test)
        for name, pq in base_pq.items():
            rows.append(pq.loc[test].reset_index().assign(system=name, kind="base", trial=split.trial))
        rows.append(base_pq[picks[split.trial]].loc[test].reset_index().assign(
            system=CHOSEN_BASE, kind="chosen", trial=split.trial))
    return rows


def run_trials(candidates: pd.DataFrame, qrels: pd.DataFrame, splits, systems: Dict[str, Callable],
               base_runs: Dict[str, pd.DataFrame], depth: Optional[int] = 1000,
               progress: bool = True, first_models: Optional[Dict[str, object]] = None, jobs: int = 1,
               store: Optional[TrialStore] = None, client=None, chosen: Optional[Dict[int, str]] = None):
    """Per-trial per-query measures of the learned ``systems``, the ``base_runs`` and the base run
    chosen per split on its training and validation queries (:data:`CHOSEN_BASE`, kind "chosen").

    ``jobs`` > 1 runs that many trials at once in forked worker processes, each with its BLAS and
    OpenMP thread pools capped at cores // jobs (so the fit times are not inflated by oversubscribed
    cores); results do not depend on it.
    ``client`` (a ``dask.distributed.Client``; ``jobs`` is then ignored) runs every trial as one Dask
    task instead: the trials' inputs are scattered to every worker once, checkpoints are read and
    written here (workers need no access to the store's folder), results as with ``jobs``.
    ``first_models`` (a dict) receives each system's model of the first split; ``chosen`` (a dict)
    receives ``{trial: chosen base function}``.
    ``store`` (a :class:`TrialStore`) checkpoints each (trial, system) result and reuses those already
    there; Ctrl-C raises :class:`TrialsInterrupted` (a KeyboardInterrupt) after stopping the workers.

    Returns ``(per_trial, fit_seconds)``: a long frame with columns system, kind, trial, qid and one
    per measure, and ``{system: [seconds per fit]}`` in split order.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    trials = _Trials(candidates, qrels, systems, depth, store)
    rows: List[pd.DataFrame] = _base_rows(base_runs, splits, trials.evaluator, chosen)
    fit_seconds: Dict[str, List[float]] = {n: [] for n in systems}
    if systems:
        keep = [first_models is not None and i == 0 for i in range(len(splits))]
        bar = dict(desc="trials", unit="trial", total=len(splits), disable=not progress)
        import multiprocessing
        if client is None and jobs > 1 and "fork" not in multiprocessing.get_all_start_methods():
            logger.warning("jobs=%d needs the 'fork' start method, which this platform lacks: running the "
                           "trials one after another", jobs)
            jobs = 1
        try:
            if client is not None:
                results = _execute_dask(trials, splits, keep, client, bar)
            else:
                results = _execute(trials, splits, keep, jobs, bar)
        except KeyboardInterrupt:
            raise TrialsInterrupted(store.finished(splits, systems) if store is not None else 0) from None
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
    """``trials.run`` of every split, in split order: here, or in ``jobs`` forked worker processes
    that ignore SIGINT and are stopped (pending trials cancelled) when the parent is interrupted or a
    trial fails."""
    import multiprocessing
    import pyterrier as pt
    global _WORKER_TRIALS, _WORKER_THREADS
    if jobs <= 1 or len(splits) <= 1:
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


def _dask_trial(trials: _Trials, split, names: List[str], keep_models: bool) -> Dict[str, tuple]:
    """A Dask task: fit the systems ``names`` on ``split`` (``trials`` is the scattered copy)."""
    with _thread_limit(1):
        return trials.compute(split, names, keep_models)


def _execute_dask(trials: _Trials, splits, keep: List[bool], client, bar: dict) -> list:
    """``trials.run`` of every split as Dask tasks on ``client``'s cluster, in split order.

    Checkpointed (trial, system) results are loaded here; every split with systems left becomes one
    task, whose results are checkpointed here as each task finishes. ``trials`` (candidates, qrels,
    systems) is scattered to every worker once. Interrupted (Ctrl-C) or failed: the pending tasks are
    cancelled and the exception propagates; finished tasks are already checkpointed."""
    import pyterrier as pt
    from dask.distributed import as_completed
    found: List[Dict[str, tuple]] = []
    todo: Dict[int, List[str]] = {}
    for i, split in enumerate(splits):
        found.append({})
        for name in trials.systems:
            done = trials.load(split, name, keep[i])
            if done is not None:
                found[i][name] = done
            else:
                todo.setdefault(i, []).append(name)
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


def per_query_means(per_trial: pd.DataFrame) -> pd.DataFrame:
    """Each (system, qid)'s measures averaged over the trials in which the query was tested."""
    return per_trial.groupby(["system", "qid"], sort=False)[list(MEASURES)].mean()


def compare(ref: pd.Series, other: pd.Series) -> dict:
    """W/L of ``ref`` over ``other`` (aligned per-query values) and the two-sided Wilcoxon p-value."""
    from scipy.stats import wilcoxon
    ref, other = ref.align(other, join="inner")
    diff = ref.values - other.values
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    if wins + losses == 0:
        p = 1.0
    else:
        p = float(wilcoxon(ref.values, other.values, alternative="two-sided").pvalue)
    return {"wins": wins, "losses": losses, "p_value": p}


#: the order of the kinds of systems in the summary (then by decreasing MAP within a kind)
KIND_ORDER = {"learned": 0, "chosen": 1, "base": 2}


def aggregate(per_trial: pd.DataFrame, reference: Optional[str], fit_seconds: Dict[str, List[float]]
              ) -> pd.DataFrame:
    """One row per system: kind, the measures' means over queries, W/L and p-value vs ``reference``
    (0, 0, 1.0 for the reference itself or when there is none) and the median fit time (learned
    systems); learned systems first, then the chosen base, then the base functions, each by MAP."""
    pq = per_query_means(per_trial)
    kinds = per_trial.drop_duplicates("system").set_index("system")["kind"]
    ref_ap = pq.loc[reference, "map"] if reference is not None else None
    rows = []
    for system in kinds.index:
        vals = pq.loc[system]
        row = {"name": system, "kind": kinds[system], **{m: float(vals[m].mean()) for m in MEASURES},
               "n_queries": int(len(vals))}
        if ref_ap is None or system == reference:
            row.update(wins=0, losses=0, p_value=1.0)
        else:
            row.update(compare(ref_ap, vals["map"]))
        if kinds[system] == "learned":
            secs = fit_seconds.get(system) or [float("nan")]
            row["fit_seconds"] = float(np.median(secs))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["_order"] = out["kind"].map(KIND_ORDER).fillna(len(KIND_ORDER))
    out = out.sort_values(["_order", "map"], ascending=[True, False], kind="stable")
    return out.drop(columns="_order").reset_index(drop=True)
