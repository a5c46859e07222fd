"""IR measures on concatenated queries as ir_measures computes them (ties by candidate order), and LETOR 4.0's
Eval-Score-4.0.pl measures (docs/experiments.md)."""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.queries import query_ids


def rank_within_queries(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Permutation by query, then decreasing score, ties by position, NaN last: ``np.lexsort((-scores,
    query_ids(offsets)))``, by a compiled stable bucket sort per query (:func:`._kernels.descending_order`), in
    blocks of queries on :func:`~pyterrier_svmmap.threads.current` threads (a query's order depends on it alone)."""
    order, sort = score_sorter(scores, offsets)
    threads.run_query_blocks(sort, offsets)
    return order


def score_sorter(scores: np.ndarray, offsets: np.ndarray) -> Tuple[np.ndarray, Callable[[int, int], None]]:
    """(order, sort): ``sort(lo, hi)`` fills ``order`` with :func:`rank_within_queries`' order of the queries
    lo..hi − 1, for callers that sort block by block (the losses' batches sort each block where they use it)."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)       # the one signature of the kernel
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    order = np.empty(len(scores), dtype=np.int64)
    descending_order = _jit.load("measures._kernels").descending_order
    return order, lambda lo, hi: descending_order(scores, offsets, lo, hi, order)


def ranks_within_queries(scores: np.ndarray, offsets: np.ndarray):
    """(order, rank): :func:`rank_within_queries` and each candidate's 0-based rank in its query."""
    order = rank_within_queries(scores, offsets)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = _ranks(offsets) - 1                  # the order keeps each query's rows in its own range
    return order, rank


def _ranks(offsets: np.ndarray) -> np.ndarray:
    """1-based rank of every position of the grouped order."""
    return np.arange(offsets[-1]) - np.asarray(offsets)[:-1][query_ids(offsets)] + 1


def _ranked_relevance(order, labels, offsets):
    return (np.asarray(labels)[order] > 0).astype(float), _ranks(offsets), query_ids(offsets)


def average_precision(scores, labels, offsets, n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """AP per query. ``n_relevant`` (per query) defaults to the relevant candidates' count."""
    return ranked_average_precision(rank_within_queries(scores, offsets), labels, offsets, n_relevant)


def ranked_average_precision(order, labels, offsets, n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`average_precision` of the ranking ``order`` already computed."""
    rel, rank, qid = _ranked_relevance(order, labels, offsets)
    n_q = len(offsets) - 1
    hits = np.cumsum(rel)
    hits -= np.concatenate([[0.0], hits])[np.asarray(offsets)[:-1]][qid]  # restart the count per query
    prec_sum = np.bincount(qid, weights=rel * hits / rank, minlength=n_q)
    if n_relevant is None:
        n_relevant = np.bincount(qid, weights=rel, minlength=n_q)
    n_relevant = np.asarray(n_relevant, dtype=float)
    return np.divide(prec_sum, n_relevant, out=np.zeros(n_q), where=n_relevant > 0)


def tie_ordered_average_precision(scores, labels, offsets, position: np.ndarray,
                                   n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`average_precision` with ties ordered by ``position`` instead of by row: each candidate's row in a tie
    order that keeps the queries in place (a permutation of its query's rows). Bit for bit the AP of the ranking
    ``base[rank_within_queries(scores[base], offsets)]``, ``position[base] = arange(n)``; the relevant
    candidates' ranks are counted without sorting the query (compiled, :func:`._kernels.tie_ordered_ap`)."""
    scores = np.ascontiguousarray(scores, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    rel = np.ascontiguousarray(np.asarray(labels) > 0)
    if np.isnan(scores).any():                                  # NaN last, as rank_within_queries puts it
        base = np.argsort(position, kind="stable")
        return ranked_average_precision(base[rank_within_queries(scores[base], offsets)], labels, offsets,
                                        n_relevant)
    n_q = len(offsets) - 1
    if n_relevant is None:
        n_relevant = np.bincount(query_ids(offsets), weights=rel, minlength=n_q)
    out = np.empty(n_q)
    _jit.load("measures._kernels").tie_ordered_ap(scores, rel, np.ascontiguousarray(position, dtype=np.int64),
                                                   offsets, np.ascontiguousarray(n_relevant, dtype=float), out)
    return out


def dcg_at(scores, gains, offsets, k: Optional[int] = None) -> np.ndarray:
    """DCG@k per query of the ranking by ``scores`` (gains per candidate; k None: all ranks)."""
    order = rank_within_queries(scores, offsets)
    qid, rank = query_ids(offsets), _ranks(offsets)
    disc = 1.0 / np.log2(rank + 1)
    if k is not None:
        disc = np.where(rank <= k, disc, 0.0)
    return np.bincount(qid, weights=np.asarray(gains, dtype=float)[order] * disc, minlength=len(offsets) - 1)


def ndcg_at(scores, labels, offsets, k: Optional[int] = None,
            n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """nDCG@k per query with binary gains, the ideal ranking of ``n_relevant`` relevant documents."""
    rel = (np.asarray(labels) > 0).astype(float)
    n_q = len(offsets) - 1
    dcg = dcg_at(scores, rel, offsets, k)
    if n_relevant is None:
        n_relevant = np.bincount(query_ids(offsets), weights=rel, minlength=n_q)
    n_ideal = np.minimum(np.asarray(n_relevant, dtype=float), np.inf if k is None else k)
    max_n = int(n_ideal.max()) if n_q else 0
    prefix = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, max_n + 2)))])
    idcg = prefix[n_ideal.astype(int)]
    return np.divide(dcg, idcg, out=np.zeros(n_q), where=idcg > 0)


def reciprocal_rank_at(scores, labels, offsets, k: Optional[int] = None) -> np.ndarray:
    """RR@k per query: 1/rank of the first relevant candidate if within k, else 0."""
    rel, rank, qid = _ranked_relevance(rank_within_queries(scores, offsets), labels, offsets)
    cut = np.inf if k is None else k
    rr = np.where((rel > 0) & (rank <= cut), 1.0 / rank, 0.0)
    out = np.zeros(len(offsets) - 1)
    np.maximum.at(out, qid, rr)
    return out


# LETOR 4.0's evaluation as Eval-Score-4.0.pl computes it (docs/experiments.md)
_LETOR_DISCOUNTS = ("letor", "trec")
_LETOR_GAINS = ("exp", "linear")
_SHORT_QUERY = ("zero", "score")


def letor_average_precision(scores, labels, offsets, rel: float = 1) -> np.ndarray:
    """AP per query as Eval-Score-4.0.pl computes it (``label >= rel``); average over all queries for LETOR's MAP."""
    return average_precision(scores, np.asarray(labels) >= rel, offsets)


def precision_at(scores, labels, offsets, k: int, rel: float = 1) -> np.ndarray:
    """P@k per query (``label >= rel``), divided by k even for shorter queries (as Eval-Score-4.0.pl and trec_eval)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    offsets = np.asarray(offsets)
    order = rank_within_queries(scores, offsets)
    hit = (np.asarray(labels)[order] >= rel) & (_ranks(offsets) <= k)
    return np.bincount(query_ids(offsets), weights=hit, minlength=len(offsets) - 1) / k


def letor_ndcg_at(scores, labels, offsets, k: int, discount: str = "letor", gain: str = "exp",
                  short_query: str = "zero") -> np.ndarray:
    """NDCG@k per query, Eval-Score-4.0.pl's by default (``"trec", "linear", "score"``: ir_measures' without ties)."""
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
    """MAP as Eval-Score-4.0.pl computes it (every query counted, ties in file order)."""
    return float(letor_average_precision(scores, labels, offsets, rel=rel).mean())
