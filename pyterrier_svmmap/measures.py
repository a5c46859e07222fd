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

from .features import query_ids


def rank_within_queries(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Permutation that sorts candidates by query, then by decreasing score (stable)."""
    qid = query_ids(offsets)
    return np.lexsort((np.arange(len(scores)), -np.asarray(scores, float), qid))


def _ranked_relevance(scores, labels, offsets):
    order = rank_within_queries(scores, offsets)
    rel = (np.asarray(labels)[order] > 0).astype(float)
    qid = query_ids(offsets)
    rank = np.arange(len(order)) - np.asarray(offsets)[:-1][qid] + 1     # 1-based rank within query
    return rel, rank, qid


def average_precision(scores, labels, offsets, n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """AP per query. ``n_relevant`` (per query) defaults to the relevant candidates' count."""
    rel, rank, qid = _ranked_relevance(scores, labels, offsets)
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
    qid = query_ids(offsets)
    rank = np.arange(len(order)) - np.asarray(offsets)[:-1][qid] + 1     # 1-based rank within query
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
    rel, rank, qid = _ranked_relevance(scores, labels, offsets)
    n_q = len(offsets) - 1
    cut = np.inf if k is None else k
    rr = np.where((rel > 0) & (rank <= cut), 1.0 / rank, 0.0)
    out = np.zeros(n_q)
    np.maximum.at(out, qid, rr)
    return out
