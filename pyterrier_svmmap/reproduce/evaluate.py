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
import time
from typing import Callable, Dict, List, Optional, Sequence

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


def run_trials(candidates: pd.DataFrame, qrels: pd.DataFrame, splits, systems: Dict[str, Callable],
               base_runs: Dict[str, pd.DataFrame], depth: Optional[int] = 1000,
               progress: bool = True, first_models: Optional[Dict[str, object]] = None):
    """Per-trial per-query measures of the learned ``systems`` and the ``base_runs``.

    Returns ``(per_trial, fit_seconds)``: a long frame with columns system, kind, trial, qid and one
    per measure, and ``{system: [seconds per fit]}``.
    """
    import pyterrier as pt
    ev = Evaluator(qrels)
    all_qids = sorted({q for s in splits for q in s.test})
    base_pq = {name: ev.per_query(run, all_qids) for name, run in base_runs.items()}
    cand_groups = {q: np.asarray(ix) for q, ix in candidates.groupby("qid", sort=False).indices.items()}
    qrel_groups = {q: np.asarray(ix) for q, ix in qrels.groupby("qid", sort=False).indices.items()}
    rows: List[pd.DataFrame] = []
    fit_seconds: Dict[str, List[float]] = {n: [] for n in systems}
    it = pt.tqdm(splits, desc="trials", unit="trial", disable=not progress)
    for split in it:
        test = list(split.test)
        for name, pq in base_pq.items():
            rows.append(pq.loc[test].reset_index().assign(system=name, kind="base", trial=split.trial))
        if not systems:
            continue
        tr, va, te = (_subset(candidates, cand_groups, split.train),
                      _subset(candidates, cand_groups, split.valid),
                      _subset(candidates, cand_groups, test))
        qtr, qva = _subset(qrels, qrel_groups, split.train), _subset(qrels, qrel_groups, split.valid)
        for name, factory in systems.items():
            est = factory()
            t = time.perf_counter()
            if len(split.valid):
                est.fit(tr, qtr, va, qva)
            else:
                est.fit(tr, qtr)
            fit_seconds[name].append(time.perf_counter() - t)
            if first_models is not None and name not in first_models:
                first_models[name] = est
            out = cut_depth(est.transform(te), depth)
            pq = ev.per_query(out, test)
            rows.append(pq.reset_index().assign(system=name, kind="learned", trial=split.trial))
            logger.debug("trial %d %s: fit %.2fs, test MAP %.4f", split.trial, name,
                         fit_seconds[name][-1], pq["map"].mean())
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
