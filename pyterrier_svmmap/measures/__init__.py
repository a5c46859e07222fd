"""IR measures on concatenated queries (numpy, vectorised), used for model selection and training.

They agree with ir_measures (trec_eval) on the same ranking: AP divides by the number of relevant
documents in the qrels (``n_relevant``, which may exceed the relevant candidates), nDCG@k uses binary
gains and the 1/log2(rank + 1) discount, RR@k is 1/rank of the first relevant document within k.
Ties in scores are broken by candidate order (stable sort); trec_eval breaks them by docno, so give
distinct scores where exact agreement on ties matters.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

import pyterrier_svmmap._jit as _jit
from pyterrier_svmmap.queries import query_ids


def rank_within_queries(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Permutation that sorts candidates by query, then by decreasing score (stable: ties by position).

    A compiled mergesort per query (:mod:`._order_kernels`; 1.5–5× faster than a lexsort on queries of 10 to
    2,000 candidates); scores with a NaN take ``np.lexsort`` instead (NaN after every number)."""
    scores = np.asarray(scores, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    if not np.isnan(scores).any():
        order = np.empty(len(scores), dtype=np.int64)
        _jit.load("measures._order_kernels").score_order(np.ascontiguousarray(scores), np.ascontiguousarray(offsets),
                                                        order)
        return order
    return np.lexsort((-scores, query_ids(offsets)))


def ranks_within_queries(scores: np.ndarray, offsets: np.ndarray):
    """(order, rank): :func:`rank_within_queries`, and each candidate's 0-based rank in its query (ties by
    position, as ``pt.model.add_ranks``)."""
    order = rank_within_queries(scores, offsets)
    offsets = np.asarray(offsets, dtype=np.int64)
    q = query_ids(offsets)[order]
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - offsets[:-1][q]
    return order, rank


def _ranks(offsets: np.ndarray) -> np.ndarray:
    """1-based rank of every position of the grouped order (position − its query's offset + 1)."""
    return np.arange(offsets[-1]) - np.asarray(offsets)[:-1][query_ids(offsets)] + 1


def _ranked_relevance(order, labels, offsets):
    return (np.asarray(labels)[order] > 0).astype(float), _ranks(offsets), query_ids(offsets)


def average_precision(scores, labels, offsets, n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """AP per query. ``n_relevant`` (per query) defaults to the relevant candidates' count."""
    return ranked_average_precision(rank_within_queries(scores, offsets), labels, offsets, n_relevant)


def ranked_average_precision(order, labels, offsets, n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`average_precision` of the ranking ``order`` (candidates by query, best first, as
    :func:`rank_within_queries` gives them), for a caller that has the order already."""
    rel, rank, qid = _ranked_relevance(order, labels, offsets)
    n_q = len(offsets) - 1
    hits = np.cumsum(rel)
    hits -= np.concatenate([[0.0], hits])[np.asarray(offsets)[:-1]][qid]  # restart the count per query
    prec_sum = np.bincount(qid, weights=rel * hits / rank, minlength=n_q)
    if n_relevant is None:
        n_relevant = np.bincount(qid, weights=rel, minlength=n_q)
    n_relevant = np.asarray(n_relevant, dtype=float)
    return np.divide(prec_sum, n_relevant, out=np.zeros(n_q), where=n_relevant > 0)


def dcg_at(scores, gains, offsets, k: Optional[int] = None) -> np.ndarray:
    """DCG@k per query of the ranking by ``scores``: Σ gain/log2(rank + 1) over ranks ≤ k (None: all).
    Gains are per candidate, so binary (nDCG here) and graded (ApproxNDCG's 2^r − 1) share it."""
    order = rank_within_queries(scores, offsets)
    qid, rank = query_ids(offsets), _ranks(offsets)
    disc = 1.0 / np.log2(rank + 1)
    if k is not None:
        disc = np.where(rank <= k, disc, 0.0)
    return np.bincount(qid, weights=np.asarray(gains, dtype=float)[order] * disc, minlength=len(offsets) - 1)


def ndcg_at(scores, labels, offsets, k: Optional[int] = None,
            n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """nDCG@k per query with binary gains (k=None: no cutoff). The ideal ranking puts
    ``n_relevant`` (default: the relevant candidates) relevant documents first."""
    rel = (np.asarray(labels) > 0).astype(float)
    n_q = len(offsets) - 1
    cut = np.inf if k is None else k
    dcg = dcg_at(scores, rel, offsets, k)
    if n_relevant is None:
        n_relevant = np.bincount(query_ids(offsets), weights=rel, minlength=n_q)
    n_ideal = np.minimum(np.asarray(n_relevant, dtype=float), cut)
    max_n = int(n_ideal.max()) if n_q else 0
    prefix = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, max_n + 2)))])
    idcg = prefix[n_ideal.astype(int)]
    return np.divide(dcg, idcg, out=np.zeros(n_q), where=idcg > 0)


def reciprocal_rank_at(scores, labels, offsets, k: Optional[int] = None) -> np.ndarray:
    """RR@k per query: 1/rank of the first relevant candidate if within k, else 0."""
    rel, rank, qid = _ranked_relevance(rank_within_queries(scores, offsets), labels, offsets)
    n_q = len(offsets) - 1
    cut = np.inf if k is None else k
    rr = np.where((rel > 0) & (rank <= cut), 1.0 / rank, 0.0)
    out = np.zeros(n_q)
    np.maximum.at(out, qid, rr)
    return out


# LETOR 4.0's evaluation as its official script, Eval-Score-4.0.pl, computes it (docs/experiments.md): ties keep
# file order, a query without a relevant document scores 0 and counts in the mean, P@k divides by k, NDCG has gain
# 2^label − 1, ranks 1–2 undiscounted, and is 0 for a query of fewer than k documents.
_LETOR_DISCOUNTS = ("letor", "trec")
_LETOR_GAINS = ("exp", "linear")
_SHORT_QUERY = ("zero", "score")


def letor_average_precision(scores, labels, offsets, rel: float = 1) -> np.ndarray:
    """AP per query as Eval-Score-4.0.pl computes it (relevant: ``label >= rel``): ir_measures' ``AP(rel=rel)``
    when the qrels are the candidates and no scores tie. Average it over *all* queries for LETOR's MAP."""
    relevant = np.asarray(labels) >= rel
    return average_precision(scores, relevant, offsets)


def precision_at(scores, labels, offsets, k: int, rel: float = 1) -> np.ndarray:
    """P@k per query: relevant (``label >= rel``) candidates in the top k, divided by k even when the
    query has fewer than k candidates (as Eval-Score-4.0.pl and trec_eval do)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    offsets = np.asarray(offsets)
    order = rank_within_queries(scores, offsets)
    hit = (np.asarray(labels)[order] >= rel) & (_ranks(offsets) <= k)
    return np.bincount(query_ids(offsets), weights=hit, minlength=len(offsets) - 1) / k


def letor_ndcg_at(scores, labels, offsets, k: int, discount: str = "letor", gain: str = "exp",
                  short_query: str = "zero") -> np.ndarray:
    """NDCG@k per query, Eval-Score-4.0.pl's by default: ``discount`` "letor" (1 at ranks 1–2, then 1/log2(rank))
    or "trec" (1/log2(rank + 1)); ``gain`` "exp" (2^label − 1) or "linear"; ``short_query`` "zero" (0 for a query
    of fewer than k candidates) or "score". 0 without a relevant candidate. ``"trec", "linear", "score"`` is
    ir_measures' ``nDCG@k`` without ties."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if discount not in _LETOR_DISCOUNTS or gain not in _LETOR_GAINS or short_query not in _SHORT_QUERY:
        raise ValueError(f"discount in {_LETOR_DISCOUNTS}, gain in {_LETOR_GAINS}, short_query in "
                         f"{_SHORT_QUERY}; got {discount!r}, {gain!r}, {short_query!r}")
    offsets = np.asarray(offsets)
    n_q = len(offsets) - 1
    qid = query_ids(offsets)
    rank = _ranks(offsets)
    disc = np.where(rank <= k, 1.0 / np.log2(np.maximum(rank, 2) if discount == "letor" else rank + 1), 0.0)
    g = np.maximum(np.asarray(labels, dtype=float), 0.0)         # negative judgements count 0
    g = np.exp2(g) - 1.0 if gain == "exp" else g
    dcg = np.bincount(qid, weights=g[rank_within_queries(scores, offsets)] * disc, minlength=n_q)
    ideal = np.lexsort((-g, qid))                       # by query, then decreasing gain
    idcg = np.bincount(qid, weights=g[ideal] * disc, minlength=n_q)
    ndcg = np.divide(dcg, idcg, out=np.zeros(n_q), where=idcg > 0)
    if short_query == "zero":
        ndcg[np.diff(offsets) < k] = 0.0
    return ndcg


def letor_mean_average_precision(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
                                 rel: float = 1) -> float:
    """MAP as Eval-Score-4.0.pl computes it (:func:`letor_average_precision`: ``label >= rel`` relevant,
    every query counted, ties in file order)."""
    return float(letor_average_precision(scores, labels, offsets, rel=rel).mean())
