"""Running the trials and aggregating them as in Yue et al. (2007) §5.

Per trial, every learned system is fitted on the training queries (choosing its hyper-parameters on
the validation queries) and ranks the candidates of the test queries; every base function's ranking
of a test query is its own run. Per-query AP, nDCG@10 and RR@10 come from ``ir_measures`` against the
full qrels (relevant documents outside the candidates count as missed; a test query a system returns
nothing for scores 0). Learned rankings are cut at ``depth`` (1000, the base runs' depth).

Aggregation, per system: each query's values are averaged over the trials in which it was tested;
MAP (etc.) is the mean over those queries. Against the reference system (``svm-map``): W = queries on
which the reference's averaged AP is higher, L = lower, and the two-sided Wilcoxon signed-rank p-value
on the per-query averaged APs.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

#: results.json key -> ir_measures measure name
MEASURES = {"map": "AP", "ndcg_cut_10": "nDCG@10", "recip_rank_10": "RR@10"}


class Evaluator:
    """Per-query measures of runs (qid, docno, score) against fixed qrels (qid, docno, label)."""

    def __init__(self, qrels: pd.DataFrame):
        import ir_measures
        self._names = {ir_measures.parse_measure(v): k for k, v in MEASURES.items()}
        q = pd.DataFrame({"query_id": qrels["qid"].astype(str), "doc_id": qrels["docno"].astype(str),
                          "relevance": qrels["label"].astype(int)})
        self._evaluator = ir_measures.evaluator(list(self._names), q)

    def per_query(self, run: pd.DataFrame, qids: Sequence[str]) -> pd.DataFrame:
        """Frame indexed by ``qids`` with one column per measure; queries without results get 0."""
        wanted = set(qids)
        r: Dict[str, Dict[str, float]] = {}       # dict of dicts: ir_measures' fastest input
        for q, d, sc in zip(run["qid"].astype(str).values, run["docno"].astype(str).values,
                            run["score"].astype(float).values):
            if q in wanted:
                r.setdefault(q, {})[d] = sc
        out = pd.DataFrame(0.0, index=pd.Index(list(qids), name="qid"), columns=list(MEASURES))
        if r:
            for m in self._evaluator.iter_calc(r):
                if m.query_id in out.index:
                    out.at[m.query_id, self._names[m.measure]] = float(m.value)
        return out


def cut_depth(res: pd.DataFrame, depth: Optional[int]) -> pd.DataFrame:
    """The top ``depth`` rows of every query by score (all rows when ``depth`` is None)."""
    if depth is None:
        return res
    res = res.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    return res[res.groupby("qid", sort=False).cumcount() < depth]


def _subset(frame: pd.DataFrame, groups: Dict[str, np.ndarray], qids: Sequence[str]) -> pd.DataFrame:
    rows = [groups[q] for q in qids if q in groups]
    return frame.iloc[np.concatenate(rows)] if rows else frame.iloc[:0]


class _Trials:
    """What every trial needs (candidates and qrels grouped by query, the systems, the evaluator), so
    that one trial is one call; worker processes inherit it by ``fork``."""

    def __init__(self, candidates: pd.DataFrame, qrels: pd.DataFrame, systems: Dict[str, Callable],
                 depth: Optional[int]):
        self.candidates, self.qrels, self.systems, self.depth = candidates, qrels, systems, depth
        self.evaluator = Evaluator(qrels)
        self.cand_groups = {q: np.asarray(ix) for q, ix in candidates.groupby("qid", sort=False).indices.items()}
        self.qrel_groups = {q: np.asarray(ix) for q, ix in qrels.groupby("qid", sort=False).indices.items()}

    def run(self, split, keep_models: bool) -> Tuple[List[pd.DataFrame], Dict[str, float], Dict[str, object]]:
        """Fit every system on ``split``; (per-query rows, fit seconds, the models if ``keep_models``)."""
        test = list(split.test)
        tr, va, te = (_subset(self.candidates, self.cand_groups, split.train),
                      _subset(self.candidates, self.cand_groups, split.valid),
                      _subset(self.candidates, self.cand_groups, test))
        qtr = _subset(self.qrels, self.qrel_groups, split.train)
        qva = _subset(self.qrels, self.qrel_groups, split.valid)
        rows, seconds, models = [], {}, {}
        for name, factory in self.systems.items():
            est = factory()
            t = time.perf_counter()
            if len(split.valid):
                est.fit(tr, qtr, va, qva)
            else:
                est.fit(tr, qtr)
            seconds[name] = time.perf_counter() - t
            if keep_models:
                models[name] = est
            pq = self.evaluator.per_query(cut_depth(est.transform(te), self.depth), test)
            rows.append(pq.reset_index().assign(system=name, kind="learned", trial=split.trial))
            logger.debug("trial %d %s: fit %.2fs, test MAP %.4f", split.trial, name, seconds[name],
                         pq["map"].mean())
        return rows, seconds, models


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
    return threadpool_limits(limits=threads)


def _run_in_worker(split, keep_models: bool):
    with _thread_limit(_WORKER_THREADS):
        return _WORKER_TRIALS.run(split, keep_models)


def run_trials(candidates: pd.DataFrame, qrels: pd.DataFrame, splits, systems: Dict[str, Callable],
               base_runs: Dict[str, pd.DataFrame], depth: Optional[int] = 1000,
               progress: bool = True, first_models: Optional[Dict[str, object]] = None, jobs: int = 1):
    """Per-trial per-query measures of the learned ``systems`` and the ``base_runs``.

    ``jobs`` > 1 runs that many trials at once in forked worker processes, each with its BLAS and
    OpenMP thread pools capped at cores // jobs (so the fit times are not inflated by oversubscribed
    cores); results do not depend on it.
    ``first_models`` (a dict) receives each system's model of the first split.

    Returns ``(per_trial, fit_seconds)``: a long frame with columns system, kind, trial, qid and one
    per measure, and ``{system: [seconds per fit]}`` in split order.
    """
    import pyterrier as pt
    global _WORKER_TRIALS, _WORKER_THREADS
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    trials = _Trials(candidates, qrels, systems, depth)
    all_qids = sorted({q for s in splits for q in s.test})
    base_pq = {name: trials.evaluator.per_query(run, all_qids) for name, run in base_runs.items()}
    rows: List[pd.DataFrame] = []
    for split in splits:
        for name, pq in base_pq.items():
            rows.append(pq.loc[list(split.test)].reset_index().assign(system=name, kind="base", trial=split.trial))
    fit_seconds: Dict[str, List[float]] = {n: [] for n in systems}
    if systems:
        keep = [first_models is not None and i == 0 for i in range(len(splits))]
        bar = dict(desc="trials", unit="trial", total=len(splits), disable=not progress)
        import multiprocessing
        if jobs > 1 and "fork" not in multiprocessing.get_all_start_methods():
            logger.warning("jobs=%d needs the 'fork' start method, which this platform lacks: running the "
                           "trials one after another", jobs)
            jobs = 1
        if jobs > 1 and len(splits) > 1:
            from concurrent.futures import ProcessPoolExecutor
            _WORKER_TRIALS = trials
            _WORKER_THREADS = max(1, (os.cpu_count() or 1) // jobs)
            try:
                with ProcessPoolExecutor(min(jobs, len(splits)),
                                         mp_context=multiprocessing.get_context("fork")) as pool:
                    results = list(pt.tqdm(pool.map(_run_in_worker, splits, keep), **bar))
            finally:
                _WORKER_TRIALS = None
        else:
            results = [trials.run(s, k) for s, k in pt.tqdm(list(zip(splits, keep)), **bar)]
        for trial_rows, seconds, models in results:
            rows.extend(trial_rows)
            for name, sec in seconds.items():
                fit_seconds[name].append(sec)
            if models:
                first_models.update(models)
    per_trial = pd.concat(rows, ignore_index=True)[["system", "kind", "trial", "qid", *MEASURES]]
    return per_trial, fit_seconds


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


def aggregate(per_trial: pd.DataFrame, reference: Optional[str], fit_seconds: Dict[str, List[float]]
              ) -> pd.DataFrame:
    """One row per system: kind, the measures' means over queries, W/L and p-value vs ``reference``
    (0, 0, 1.0 for the reference itself or when there is none) and the median fit time."""
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
    out["_learned"] = out["kind"] == "learned"
    out = out.sort_values(["_learned", "map"], ascending=[False, False], kind="stable")
    return out.drop(columns="_learned").reset_index(drop=True)
