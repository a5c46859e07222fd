"""Δ_map = 1 − AP with the pairwise joint feature map: SVM-map (Yue et al., SIGIR 2007).

Ψ(x, y) = 1/(|P|·|N|) Σ_{i∈P} Σ_{j∈N} y_ij (φ(x, d_i) − φ(x, d_j))            (§3, the combined
feature function), so the coefficient of a relevant document is (|N| − 2·a_i)/(|P||N|), a_i being the
number of non-relevant documents ranked above it, and that of a non-relevant document is
−(2·b_j − |P|)/(|P||N|), b_j being the number of relevant documents above it.

The most violated constraint is found by Algorithm 2: sort P and N by score (Observation 1), then give
every non-relevant document j the slot opt_j = argmax_k δ_j(k, |P|+1) (Eq. 5, 6, 13); Theorem 2 shows the
slots are non-decreasing in j, so the independent choices form a valid ranking.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from .base import Loss

#: entries of the (non-relevant × relevant) gain table built at once; bounds memory on big queries
_CHUNK_ENTRIES = 1 << 22


def average_precision_of_ranking(ranking: np.ndarray, labels: np.ndarray) -> float:
    """AP of a ranking over the query's candidates (relevant = label > 0), 0 when none is relevant."""
    rel = np.asarray(labels)[ranking] > 0
    n_rel = int(rel.sum())
    if n_rel == 0:
        return 0.0
    hits = np.cumsum(rel)
    ranks = np.arange(1, len(rel) + 1)
    return float((hits[rel] / ranks[rel]).sum() / n_rel)


def pairwise_psi_coef(ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Coefficients of the normalised pairwise map Ψ (shared by the MAP, ROC and NDCG losses)."""
    labels = np.asarray(labels)
    rel_in_order = labels[ranking] > 0
    n_pos = int(rel_in_order.sum())
    n_neg = len(ranking) - n_pos
    coef = np.zeros(len(ranking))
    if n_pos == 0 or n_neg == 0:
        return coef
    neg_above = np.cumsum(~rel_in_order) - (~rel_in_order)
    pos_above = np.cumsum(rel_in_order) - rel_in_order
    in_order = np.where(rel_in_order, n_neg - 2.0 * neg_above, -(2.0 * pos_above - n_pos))
    coef[ranking] = in_order / (n_pos * n_neg)
    return coef


def interleave(pos_sorted: np.ndarray, neg_sorted: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Ranking from sorted relevant / non-relevant index lists and slots.

    ``slots[j]`` (0-based, in 0..|P|) is the number of relevant documents ranked above the j-th
    non-relevant one; ``slots`` must be non-decreasing.
    """
    n_pos = len(pos_sorted)
    key = np.concatenate([np.arange(n_pos, dtype=float), slots - 0.5])
    order = np.argsort(key, kind="stable")
    return np.concatenate([pos_sorted, neg_sorted])[order]


def map_slots(pos_scores: np.ndarray, neg_scores: np.ndarray) -> np.ndarray:
    """Algorithm 2, lines 5–7: for sorted (descending) scores, the optimal slot of each non-relevant doc.

    Returns 0-based slots (number of relevant documents ranked above), non-decreasing.
    O(|P|·|N|) time, computed in chunks of non-relevant documents.
    """
    n_pos, n_neg = len(pos_scores), len(neg_scores)
    slots = np.empty(n_neg, dtype=np.int64)
    i = np.arange(1, n_pos + 1, dtype=float)[None, :]             # relevant index k (1-based)
    chunk = max(1, _CHUNK_ENTRIES // max(n_pos, 1))
    for start in range(0, n_neg, chunk):
        j = np.arange(start + 1, min(start + chunk, n_neg) + 1, dtype=float)[:, None]
        s_neg = neg_scores[start:start + chunk, None]
        # δ_j(k, k+1), Eq. (5)
        step = (j / (j + i) - (j - 1) / (j + i - 1)) / n_pos - 2.0 * (pos_scores[None, :] - s_neg) / (n_pos * n_neg)
        # δ_j(k, |P|+1) = Σ_{i=k}^{|P|} δ_j(i, i+1), Eq. (6); column |P| is the "stay below all" slot (0)
        gains = np.zeros((step.shape[0], n_pos + 1))
        gains[:, :n_pos] = np.cumsum(step[:, ::-1], axis=1)[:, ::-1]
        slots[start:start + chunk] = np.argmax(gains, axis=1)     # first maximum: keeps Theorem 2's order
    # Theorem 2 guarantees monotone slots; rounding in near-ties must not break the interleaving.
    return np.maximum.accumulate(slots) if n_neg else slots


def sort_by_score(indices: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``indices`` ordered by decreasing score (stable)."""
    return indices[np.argsort(-scores[indices], kind="stable")]


class MAPLoss(Loss):
    """Δ = 1 − AP(y) over the query's candidates; SVM-map's loss (Yue et al. 2007, §2 and §3.2)."""

    name = "map"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - average_precision_of_ranking(ranking, labels)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return pairwise_psi_coef(ranking, labels)

    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        scores = np.asarray(scores, dtype=float)
        rel = np.asarray(labels) > 0
        idx = np.arange(len(scores))
        pos = sort_by_score(idx[rel], scores)
        neg = sort_by_score(idx[~rel], scores)
        if len(pos) == 0 or len(neg) == 0:
            return np.concatenate([pos, neg])
        return interleave(pos, neg, map_slots(scores[pos], scores[neg]))

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        """Δ(ŷ) and c(y*) − c(ŷ) straight from the slots: 2a_i/(|P||N|) for relevant document i
        (a_i non-relevant above it), −2·(relevant below j)/(|P||N|) for non-relevant document j."""
        scores = np.asarray(scores, dtype=float)
        rel = np.asarray(labels) > 0
        idx = np.arange(len(scores))
        pos = sort_by_score(idx[rel], scores)
        neg = sort_by_score(idx[~rel], scores)
        n_pos, n_neg = len(pos), len(neg)
        coef = np.zeros(len(scores))
        if n_pos == 0 or n_neg == 0:
            return 0.0, coef
        slots = map_slots(scores[pos], scores[neg])
        neg_above = np.searchsorted(slots, np.arange(n_pos), side="right")   # a_i for the i-th relevant
        ap = np.sum(np.arange(1, n_pos + 1) / (np.arange(1, n_pos + 1) + neg_above)) / n_pos
        norm = 2.0 / (n_pos * n_neg)
        coef[pos] = norm * neg_above
        coef[neg] = -norm * (n_pos - slots)
        return 1.0 - float(ap), coef
