"""PyTerrier frames ⇄ the numeric core's arrays (the only place that knows both).

The numeric core wants candidates grouped by query (contiguous, delimited by ``offsets``), a matrix of
base-function scores (NaN where a function did not retrieve the candidate) and, for training, labels
and the number of relevant documents per query in the qrels. This module builds that from a result
frame with a ``features`` column (as :class:`~pyterrier_svmmap.RunFeatures` makes) and checks the input
at the door, with messages that say what to do.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from .features import query_ids


@dataclass
class Candidates:
    """A result frame as arrays, rows by qid then docno (``frame`` is the re-ordered input): a canonical
    order, so that training and scoring do not depend on the frame's row order."""
    frame: pd.DataFrame
    raw: np.ndarray                       # (n, F) base scores, NaN = not retrieved
    offsets: np.ndarray                   # (Q + 1,) query boundaries
    qids: np.ndarray                      # (Q,) qid of each query
    labels: Optional[np.ndarray] = None   # (n,) relevance labels (0 when not in the qrels)
    n_relevant: Optional[np.ndarray] = None  # (Q,) relevant documents per query in the qrels

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    def subset(self, query_mask: np.ndarray) -> "Candidates":
        """The candidates of the queries where ``query_mask`` is True."""
        sizes = np.diff(self.offsets)[query_mask]
        rows = np.flatnonzero(np.asarray(query_mask)[query_ids(self.offsets)])
        return Candidates(frame=self.frame.iloc[rows], raw=self.raw[rows],
                          offsets=np.concatenate([[0], np.cumsum(sizes)]), qids=self.qids[query_mask],
                          labels=None if self.labels is None else self.labels[rows],
                          n_relevant=None if self.n_relevant is None else self.n_relevant[query_mask])


def check_qrels(qrels: pd.DataFrame, context=None) -> pd.DataFrame:
    """qrels with columns qid, docno, label (numeric); str qid/docno; one row per (qid, docno).

    A (qid, docno) listed more than once counts once (``pd.concat([qrels, qrels])`` must not double the
    relevant count); when its labels disagree, the last one is used — as trec_eval and ir_measures do —
    with a warning that counts the pairs."""
    if not isinstance(qrels, pd.DataFrame):
        raise TypeError(f"qrels must be a DataFrame with columns qid, docno, label; got {type(qrels).__name__}")
    missing = [c for c in ("qid", "docno", "label") if c not in qrels.columns]
    if missing:
        hint = " (ir_datasets-style names? rename query_id→qid, doc_id→docno, relevance→label)" \
            if {"query_id", "doc_id", "relevance"} & set(qrels.columns) else ""
        raise ValueError(f"qrels lack column(s) {missing}; found {list(qrels.columns)}{hint}")
    labels = pd.to_numeric(qrels["label"], errors="coerce")
    if labels.isna().any():
        bad = qrels["label"][labels.isna()].iloc[0]
        raise ValueError(f"qrels column 'label' must be numeric; found {bad!r}")
    out = pd.DataFrame({"qid": qrels["qid"].astype(str).to_numpy(), "docno": qrels["docno"].astype(str).to_numpy(),
                        "label": labels.to_numpy(dtype=float)})
    dup = out.duplicated(["qid", "docno"], keep=False)
    if dup.any():
        labels_per_pair = out[dup].groupby(["qid", "docno"])["label"].nunique()
        conflicts = labels_per_pair[labels_per_pair > 1]
        if len(conflicts):
            q, d = conflicts.index[0]
            warnings.warn(f"{len(conflicts)} (qid, docno) pairs have different labels in the qrels (e.g. qid {q!r} "
                          f"docno {d!r}); the last label of each is used, as trec_eval and ir_measures do",
                          stacklevel=4)
        out = out.drop_duplicates(["qid", "docno"], keep="last").reset_index(drop=True)
    return out


def candidates_from_frame(res: pd.DataFrame, qrels: Optional[pd.DataFrame] = None,
                          n_functions: Optional[int] = None, context=None, rel: float = 1.0) -> Candidates:
    """Validate a result frame with ``features`` and turn it into :class:`Candidates`.

    NaN features are legitimate (a base function missed the candidate); inf is an error. With
    ``qrels``, labels are joined on (qid, docno), unjudged candidates get 0, training queries absent from
    the qrels are warned about, and ``n_relevant`` counts the qrels' documents with label ≥ ``rel`` (the
    package's relevance rule, ir_measures' ``AP(rel=1)`` by default).
    """
    pt.validate.result_frame(res, extra_columns=["features"], context=context)
    res = res.reset_index(drop=True)
    if "score" in res.columns and len(res):
        score = pd.to_numeric(res["score"], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(score).all():
            r = int(np.flatnonzero(~np.isfinite(score))[0])
            raise ValueError(f"column 'score' is {res['score'].iloc[r]} for qid={res['qid'].iloc[r]!r} "
                             f"docno={res['docno'].iloc[r]!r}: a retriever's score must be a finite number "
                             "(only features may be NaN, for a base function that missed the document)")
    if len(res):
        dup = res.duplicated(["qid", "docno"])
        if dup.any():
            row = res.loc[dup.idxmax(), ["qid", "docno"]]
            raise ValueError(f"{int(dup.sum())} duplicate (qid, docno) rows, e.g. qid={row.qid!r} "
                             f"docno={row.docno!r}; each candidate must appear once per query "
                             "(deduplicate, e.g. res.drop_duplicates(['qid', 'docno']))")
    qid_str = res["qid"].astype(str).to_numpy()
    # by query, then by docno: a canonical order, so that no learner depends on the frame's row order
    order = np.lexsort((res["docno"].astype(str).to_numpy(), qid_str))
    res = res.iloc[order].reset_index(drop=True)
    qid_str = qid_str[order]
    if len(res):
        ndims = res["features"].map(np.ndim).to_numpy()
        if (ndims > 1).any():
            r = int(np.argmax(ndims > 1))
            raise ValueError(f"features of qid={qid_str[r]!r} docno={res['docno'].iloc[r]!r} has shape "
                             f"{np.shape(res['features'].iloc[r])}; each row needs a flat array with one value per "
                             "base function")
        lengths = res["features"].map(np.size).to_numpy()
        if (lengths != lengths[0]).any():
            raise ValueError(f"rows have features of different lengths ({sorted(set(lengths.tolist()))}); "
                             "every row needs one value per base function")
        raw = np.stack(res["features"].to_numpy()).astype(float).reshape(len(res), -1)
    else:
        raw = np.zeros((0, n_functions or 0))
    if np.isinf(raw).any():
        r, c = np.argwhere(np.isinf(raw))[0]
        raise ValueError(f"feature {c} is infinite for qid={qid_str[r]!r} docno={res['docno'].iloc[r]!r}; "
                         "features must be finite (NaN marks a document a base function did not retrieve)")
    if n_functions is not None and len(res) and raw.shape[1] != n_functions:
        raise ValueError(f"the model was trained with {n_functions} features per row but these rows have "
                         f"{raw.shape[1]}; use the same RunFeatures (same base functions) as in training")
    qids, starts = np.unique(qid_str, return_index=True)
    offsets = np.append(starts, len(res)).astype(np.int64)
    cands = Candidates(frame=res, raw=raw, offsets=offsets, qids=qids)
    if qrels is not None:
        qrels = check_qrels(qrels)
        key = pd.MultiIndex.from_arrays([qid_str, res["docno"].astype(str).to_numpy()])
        judged = pd.Series(qrels["label"].to_numpy(), index=pd.MultiIndex.from_frame(qrels[["qid", "docno"]]))
        judged = judged[~judged.index.duplicated(keep="last")]
        cands.labels = judged.reindex(key).fillna(0.0).to_numpy()
        rel_counts = qrels[qrels["label"] >= rel].groupby("qid").size()
        cands.n_relevant = rel_counts.reindex(qids).fillna(0).to_numpy(dtype=float)
        absent = np.setdiff1d(qids, qrels["qid"].unique())
        if len(absent):
            warnings.warn(f"{len(absent)} of {len(qids)} queries have no qrels at all (e.g. qid "
                          f"{absent[0]!r}); all their candidates count as non-relevant", stacklevel=3)
    return cands
