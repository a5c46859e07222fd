"""Measuring rankings (:class:`Evaluator`: per-query AP, nDCG@10 and RR@10 as ``ir_measures`` computes them)
and aggregating trials as Yue et al. (2007) §5 do (:func:`aggregate`): each query's values averaged over the
trials that tested it, the means over those queries, and against the reference system the queries it wins
and loses on AP with a two-sided Wilcoxon signed-rank p-value.

The results tables — all systems (Yue et al. 2007, Table 6 form, :func:`format_table`), the learners against
SVM-map (their Table 9, :func:`format_learner_table`), the test measures per training loss (Chakrabarti et al.
2008, Figure 9, :func:`format_loss_table`), the three in ``OUT/tables.md`` (:func:`tables_markdown`) — and
``OUT/results.json`` (:func:`results_dict`).
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

from pyterrier_svmmap.io.model_files import jsonable
from pyterrier_svmmap.string_codes import sorted_string_codes

#: results.json key -> ir_measures measure name
MEASURES = {"map": "AP", "ndcg_cut_10": "nDCG@10", "recip_rank_10": "RR@10"}


class Evaluator:
    """Per-query measures of runs (qid, docno, score) against fixed qrels (qid, docno, label), in one vectorised
    pass per run, as ``ir_measures`` computes them (tests/frames/test_frames.py compares them on Vaswani runs).

    AP and nDCG@10 are trec_eval's: scores compared as float32, equal ones by docno descending, AP over all
    relevant documents of the qrels, nDCG's gain the label (negative 0). RR@10 is ir_measures' msmarco backend's:
    scores as doubles, equal ones by docno ascending. A query without results or qrels scores 0; a document
    listed twice keeps its last score, a (qid, docno) twice in the qrels its last label.
    """

    #: relevance threshold of AP and RR@10 (ir_measures' default rel=1) and nDCG's cutoff
    REL = 1
    NDCG_K = 10
    RR_K = 10

    def __init__(self, qrels: pd.DataFrame):
        q = qrels[["qid", "docno", "label"]].astype({"qid": str, "docno": str, "label": int}).drop_duplicates(
            ["qid", "docno"], keep="last")
        q_code, qids = pd.factorize(q["qid"])
        d_code, docnos = pd.factorize(q["docno"])
        self._qids, self._docnos = pd.Index(qids), pd.Index(docnos)
        labels = q["label"].to_numpy()
        self._keys, self._labels = pd.Index(q_code.astype(np.int64) * max(len(docnos), 1) + d_code), labels
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
        return self.per_query_arrays(run["qid"], run["docno"], run["score"].astype(float).to_numpy(), qids)

    def per_query_arrays(self, row_qids: np.ndarray, docnos: np.ndarray, scores: np.ndarray,
                         qids: Sequence[str]) -> pd.DataFrame:
        """:meth:`per_query` of a run given as arrays (qid and docno of each row, as str, and its score)."""
        return self.per_query_codes(*sorted_string_codes(row_qids), *sorted_string_codes(docnos), scores, qids)

    def per_query_codes(self, q_code, q_strings, d_code, d_strings, score, qids) -> pd.DataFrame:
        """:meth:`per_query` of a run whose qids and docnos are given as :func:`sorted_string_codes` of them."""
        from pyterrier_svmmap.measures import average_precision, dcg_at, reciprocal_rank_at
        score = np.asarray(score, dtype=float)
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
            known = self._qids.get_indexer(wanted)            # -1 (no qrels) picks the appended 0 below
            rq = known[qi]
            rd = self._docnos.get_indexer(d_strings)[d_code]
            label = np.zeros(len(qi))
            judged = (rq >= 0) & (rd >= 0)
            at = self._keys.get_indexer(rq[judged].astype(np.int64) * max(len(self._docnos), 1) + rd[judged])
            label[np.flatnonzero(judged)[at >= 0]] = self._labels[at[at >= 0]]
            n_rel = np.append(self._n_relevant, 0.0)[known]
            idcg = np.append(self._idcg, 0.0)[known]
            offsets = np.concatenate([[0], np.cumsum(np.bincount(qi, minlength=len(wanted)))])
            position = -np.arange(len(qi), dtype=float)          # scores that keep a given order
            # trec_eval's ranking (AP, nDCG@10): float32 scores descending, then docno descending
            trec = np.lexsort((-d_code, -score.astype(np.float32), qi))      # codes order docnos as strings do
            out[:, 0] = average_precision(position, label[trec] >= self.REL, offsets, n_rel)
            dcg = dcg_at(position, np.maximum(label[trec], 0.0), offsets, self.NDCG_K)
            out[:, 1] = np.divide(dcg, idcg, out=np.zeros(len(wanted)), where=idcg > 0)
            # ir_measures' msmarco ranking (RR@10): double scores descending, then docno ascending
            msmarco = np.lexsort((d_code, -score, qi))
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


def per_query_means(per_trial: pd.DataFrame) -> pd.DataFrame:
    """Each (system, qid)'s measures averaged over the trials in which the query was tested."""
    return per_trial.groupby(["system", "qid"], sort=False)[list(MEASURES)].mean()


def compare(ref: pd.Series, other: pd.Series) -> dict:
    """W/L of ``ref`` over ``other`` (aligned per-query values) and the two-sided Wilcoxon p-value."""
    from scipy.stats import wilcoxon
    ref, other = ref.align(other, join="inner")
    diff = ref.values - other.values
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    p = float(wilcoxon(ref.values, other.values, alternative="two-sided").pvalue) if wins + losses else 1.0
    return {"wins": wins, "losses": losses, "p_value": p}


#: the order of the kinds of systems in the summary (then by decreasing MAP within a kind)
KIND_ORDER = {"learned": 0, "unsupervised": 1, "chosen": 2, "base": 3}


def aggregate(per_trial: pd.DataFrame, reference: Optional[str], fit_seconds: Dict[str, List[float]],
              first_stage: Optional[str] = None) -> pd.DataFrame:
    """One row per system, by :data:`KIND_ORDER`, then by MAP: kind, the measures' means over queries, W/L and
    p-value against ``reference`` (0, 0, 1.0 for itself or without one), the median fit seconds (learned
    systems), and the MAP gain (``gain_vs_chosen``) with W/L and p-value (``vs_chosen``) of the learned and
    unsupervised systems over the chosen base; likewise ``gain_vs_first``, ``vs_first`` of every row but the
    base functions' over ``first_stage``."""
    pq = per_query_means(per_trial)
    kinds = per_trial.drop_duplicates("system").set_index("system")["kind"]
    ref_ap = pq.loc[reference, "map"] if reference is not None else None
    chosen = [s for s in kinds.index if kinds[s] == "chosen"]
    chosen_ap = pq.loc[chosen[0], "map"] if chosen else None
    first_ap = pq.loc[first_stage, "map"] if first_stage is not None and first_stage in kinds.index else None
    rows = []
    for system in kinds.index:
        vals = pq.loc[system]
        row = {"name": system, "kind": kinds[system], **{m: float(vals[m].mean()) for m in MEASURES},
               "n_queries": int(len(vals))}
        row.update(dict(wins=0, losses=0, p_value=1.0) if ref_ap is None or system == reference
                   else compare(ref_ap, vals["map"]))
        if kinds[system] == "learned":
            row["fit_seconds"] = float(np.median(fit_seconds.get(system) or [float("nan")]))
        for versus, other, shown in (("chosen", chosen_ap, kinds[system] in ("learned", "unsupervised")),
                                     ("first", first_ap, kinds[system] != "base")):
            if other is not None and shown:
                row[f"gain_vs_{versus}"] = float(vals["map"].mean() - other.mean())
                row[f"vs_{versus}"] = compare(vals["map"], other)
        rows.append(row)
    out = pd.DataFrame(rows)
    order = np.lexsort((-out["map"].to_numpy(), out["kind"].map(KIND_ORDER).fillna(len(KIND_ORDER)).to_numpy()))
    return out.iloc[order].reset_index(drop=True)


def best_base(summary: pd.DataFrame) -> Optional[str]:
    base = summary[summary["kind"] == "base"]
    return None if base.empty else str(base.sort_values("map", ascending=False, kind="stable").iloc[0]["name"])


def format_table(summary: pd.DataFrame, reference: Optional[str], title: str = "") -> str:
    """Learned systems, fusions, the chosen base, then base functions by MAP, with the reference's W/L."""
    s = pd.concat([summary[summary["kind"] == k] for k in ("learned", "unsupervised", "chosen")]
                  + [summary[summary["kind"] == "base"].sort_values("map", ascending=False, kind="stable")])
    width = max([len("system")] + [len(n) for n in s["name"]])
    kw = max([len("kind")] + [len(k) for k in s["kind"]])
    head = (f"{'system':<{width}}  {'kind':<{kw}}  {'MAP':>6}  {'nDCG@10':>7}  {'RR@10':>6}  "
            + (f"W/L vs {reference}" if reference else "W/L"))
    rows = [f"{r['name']:<{width}}  {r['kind']:<{kw}}  {r['map']:6.4f}  {r['ndcg_cut_10']:7.4f}  "
            f"{r['recip_rank_10']:6.4f}  {_wl(r, reference)}" for _, r in s.iterrows()]
    note = (f"W/L: queries where {reference} has the higher / lower AP (averaged over the trials that tested the "
            "query); ** p < 0.05, two-sided Wilcoxon signed-rank." if reference else
            "no learned reference system: W/L not computed.")
    return _table(title, head, rows, [note], s)


def _table(title: str, head: str, rows: list, notes: list, s: pd.DataFrame) -> str:
    """``title``, ``head`` underlined, the ``rows``, a blank line, the ``notes`` and those on the chosen base and
    the fusions when rows of theirs are in ``s``."""
    kinds = [note for kind, note in _KIND_NOTES.items() if (s["kind"] == kind).any()]
    return "\n".join(([title] if title else []) + [head, "-" * len(head), *rows, "", *notes, *kinds])


_KIND_NOTES = {"chosen": "base-chosen-on-training: in each trial, the base function with the best MAP on its "
                         "training and validation queries, evaluated on its test queries.",
               "unsupervised": "unsupervised: fusions of the same base functions without judgments — fusion-rrf, "
                               "reciprocal rank fusion (k = 60); fusion-combsum, CombSUM of per-query min-max "
                               "normalised scores."}


def _wl(r, reference: Optional[str]) -> str:
    if reference is None or r["name"] == reference:
        return "-"
    return f"{int(r['wins'])}/{int(r['losses'])}" + (" **" if r["p_value"] < 0.05 else "")


def _learned(summary: pd.DataFrame) -> pd.DataFrame:
    """The learned systems, the fusions and the chosen base, by MAP."""
    return summary[summary["kind"].isin(["learned", "unsupervised", "chosen"])].sort_values(
        "map", ascending=False, kind="stable")


def format_learner_table(summary: pd.DataFrame, reference: Optional[str], title: str = "") -> str:
    """Table 9 form: every learned system's MAP and W/L against ``reference``, fit seconds and gains."""
    s = _learned(summary)
    width = max([len("learner")] + [len(n) for n in s["name"]])
    shown = [v for v in _VERSUS if f"gain_vs_{v}" in s.columns and s[f"gain_vs_{v}"].notna().any()]
    head = (f"{'learner':<{width}}  {'MAP':>6}  W/L vs {reference or '-'}  fit s"
            + "".join(f"  gain vs {_VERSUS[v][0]} (W/L)" for v in shown))
    rows = []
    for _, r in s.iterrows():
        fit = r.get("fit_seconds", float("nan"))
        fit = f"{fit:.2f}" if isinstance(fit, float) and math.isfinite(fit) else "-"
        wl = f"{_wl(r, reference):<{len('W/L vs ') + len(reference or '-')}}"
        line = f"{r['name']:<{width}}  {r['map']:6.4f}  {wl}  {fit:>5}"
        for v in shown:
            g = r.get(f"gain_vs_{v}", float("nan"))
            gain = _gain(g, r["map"], r[f"vs_{v}"]) if isinstance(g, float) and math.isfinite(g) else "-"
            line += f"  {gain:<{GAIN_WIDTH}}"
        rows.append(line.rstrip())
    notes = [f"W/L: queries where {reference} has the higher / lower AP than the learner (AP averaged over the "
             "trials that tested the query); ** p < 0.05, two-sided Wilcoxon signed-rank; fit s: median seconds "
             "per fit." if reference else "no reference system: W/L not computed."]
    return _table(title, head, rows, notes + [f"gain vs {_VERSUS[v][0]}: {_VERSUS[v][1]}" for v in shown], s)


#: the learners' table's "gain vs ..." columns: their row's ``gain_vs_<key>`` → (the column's title, its note)
_VERSUS = {"chosen": ("chosen base", "the learner's MAP minus base-chosen-on-training's, and the queries where the "
                      "learner has the higher / lower AP than it (** p < 0.05, Wilcoxon)."),
           "first": ("first stage", "the same against the first stage (--first-stage), the ranking a user would "
                     "have without learning.")}

#: the width of a "gain vs ..." column of the learners' table (``+0.0123 (+4.1%, 20/10 **)`` and a margin)
GAIN_WIDTH = 26


def _gain(g: float, value: float, versus: dict) -> str:
    """``+0.0123 (+4.1%, 20/10 **)``: a MAP gain, relative to the other's MAP, and the W/L of ``versus``."""
    return (f"{g:+.4f} ({100 * g / (value - g):+.1f}%, {versus['wins']}/{versus['losses']}"
            + (" **" if versus["p_value"] < 0.05 else "") + ")")


def format_loss_table(summary: pd.DataFrame, title: str = "") -> str:
    """Figure 9 form: rows = training loss / learner, columns = test MAP, nDCG@10, RR@10; * each column's best."""
    s = _learned(summary)
    cols = [("map", "MAP"), ("ndcg_cut_10", "nDCG@10"), ("recip_rank_10", "RR@10")]
    best = {c: s[c].max() for c, _ in cols} if len(s) else {}
    width = max([len("training loss / learner")] + [len(n) for n in s["name"]])
    rows = [f"{r['name']:<{width}}" + "".join(f"  {(f'{r[c]:.4f}' + ('*' if r[c] == best[c] else ' ')):>8}"
                                              for c, _ in cols) for _, r in s.iterrows()]
    return _table(title, f"{'training loss / learner':<{width}}" + "".join(f"  {h:>8}" for _, h in cols), rows,
                  ["test measures of each learner; * the best of the column."], s)


def tables_markdown(summary: pd.DataFrame, reference: Optional[str], title: str = "") -> str:
    """The three tables as one Markdown document (fixed-width blocks)."""
    parts = [f"# {title}" if title else "# svmmap reproduce"]
    if (summary["kind"] == "learned").any():
        parts += ["## Learners against SVM-map (Yue et al. 2007, Table 9 form)",
                  "```\n" + format_learner_table(summary, reference) + "\n```",
                  "## Test measures by training loss (Chakrabarti et al. 2008, Figure 9 form)",
                  "```\n" + format_loss_table(summary) + "\n```"]
    parts += ["## All systems and base functions (Yue et al. 2007, Table 6 form)",
              "```\n" + format_table(summary, reference) + "\n```"]
    return "\n\n".join(parts) + "\n"


def results_dict(summary: pd.DataFrame, *, collection: str, trials: int, train: Optional[int],
                 valid: Optional[int], seed: int, reference: Optional[str], extra: Optional[dict] = None) -> dict:
    """The summary as results.json's dict: the run's settings (``trials``: the number of splits; ``train`` and
    ``valid`` None for k-fold splits), ``best_base`` (the best base function in hindsight), one entry per system
    and ``extra``, as strict-JSON values (:func:`~pyterrier_svmmap.io.model_files.jsonable`)."""
    systems = []
    for _, r in summary.iterrows():
        d = {k: r[k] for k in ("name", "kind", *MEASURES, "wins", "losses", "p_value")}
        if r["kind"] == "learned":
            d["fit_seconds"] = r["fit_seconds"]
        for gain, versus in (("gain_vs_chosen", "vs_chosen"), ("gain_vs_first", "vs_first")):
            g = r.get(gain, float("nan"))
            if isinstance(g, float) and math.isfinite(g):
                d[gain], d[versus] = g, r[versus]
        systems.append(d)
    return jsonable({"collection": collection, "trials": trials, "train": train, "valid": valid, "seed": seed,
                     "best_base": best_base(summary), "reference": reference, "systems": systems, **(extra or {})})
