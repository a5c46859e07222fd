"""Δ_mrr = 1 − RR@k with the feature map φ_mrr: SVM-MRR (Chakrabarti et al., KDD 2008, §3.1.2 and §3.6).

RR@k follows ir_measures: 1/(1 + r) when the first relevant candidate is at 0-based rank r < k, else 0
(``k=None``: no cutoff). φ_mrr (their Eq. 5) only looks at the documents above the top-ranked good one
g0(y): Ψ(x, y) = Σ_{b∈N ranked before g0(y)} (φ(b) − φ(g0(y))), unnormalised, so the coefficients are
+1 for those bad candidates, −(their number) for g0(y) and 0 elsewhere, and Ψ(x, y*) = 0.

Most violated constraint (Figure 3, Fact 3.5): group rankings by r, the number of bad candidates above
g0(y). Within a group the best ranking puts the r highest-scoring bad candidates on top and the
lowest-scoring good candidate g_min right after them (what follows g0 is immaterial to Ψ), giving
H(r) = Δ(r) + Σ_{l<r} s_{b_l} − r·s_{g_min}, Δ(r) = 1 − 1/(1 + r) for r < k, 1 otherwise.
For r ≥ k, H(r) is concave (Figure 3, line 12: all bad candidates scoring above g_min); we simply
evaluate H(r) for every r = 0..|N| from prefix sums, which is the same maximum in O(n) after the
O(n log n) sort.

:meth:`MRRLoss.batch_violation` runs the compiled :func:`._rank_kernels.mrr_batch` when numba is available,
else a vectorised numpy version (:meth:`MRRLoss.batch_violation_numpy`); both reproduce
:meth:`MRRLoss.violation` (the reference), ties included.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from pyterrier_svmmap.queries import query_ids
import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import CutoffLoss, split_by_relevance
from pyterrier_svmmap.svm.losses.roc import segment_exclusive_cumsum


def reciprocal_rank(ranking: np.ndarray, labels: np.ndarray, k: Optional[int] = None) -> float:
    """1/(1 + r) for the 0-based rank r of the first relevant candidate if r < k, else 0."""
    rel = np.asarray(labels)[ranking] > 0
    if not rel.any():
        return 0.0
    r = int(np.argmax(rel))
    return 0.0 if (k is not None and r >= k) else 1.0 / (1 + r)


class MRRLoss(_numba.CompiledBatch, CutoffLoss):
    """Δ = 1 − RR@k, Ψ = φ_mrr (Chakrabarti et al. Eq. 5), exact argmax of their Figure 3."""

    name = "mrr"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - reciprocal_rank(ranking, labels, self.k)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        ranking = np.asarray(ranking)
        rel = np.asarray(labels)[ranking] > 0
        coef = np.zeros(len(ranking))
        if not rel.any():
            return coef
        r = int(np.argmax(rel))
        coef[ranking[:r]] = 1.0
        coef[ranking[r]] = -float(r)
        return coef

    def ideal_psi_coef(self, labels: np.ndarray) -> np.ndarray:
        return np.zeros(len(labels))

    def _delta_by_r(self, n_neg: int) -> np.ndarray:
        r = np.arange(n_neg + 1)
        d = 1.0 - 1.0 / (1.0 + r)
        if self.k is not None:
            d[r >= self.k] = 1.0
        return d

    def argmax_reference(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The exact argmax in numpy: the reference of the compiled :meth:`argmax`."""
        scores, pos, neg = split_by_relevance(scores, labels)
        if len(pos) == 0 or len(neg) == 0:
            return np.concatenate([pos, neg])
        r = self._best_r(scores[neg], scores[pos[-1]])
        # top r bad, then g_min, then the rest in score order (immaterial to Δ and Ψ)
        rest = np.concatenate([pos[:-1], neg[r:]])
        rest = rest[np.argsort(-scores[rest], kind="stable")]
        return np.concatenate([neg[:r], pos[-1:], rest])

    def _best_r(self, neg_scores: np.ndarray, s_gmin: float) -> int:
        pref = np.concatenate([[0.0], np.cumsum(neg_scores)])
        h = self._delta_by_r(len(neg_scores)) + pref - np.arange(len(pref)) * s_gmin
        return int(np.argmax(h))

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        """Δ(r̂) and c(y*) − c(ŷ) = −c(ŷ): −1 for the r̂ bad candidates on top, +r̂ for g_min."""
        scores, pos, neg = split_by_relevance(scores, labels)
        coef = np.zeros(len(scores))
        if len(pos) == 0 or len(neg) == 0:
            return 0.0, coef
        r = self._best_r(scores[neg], scores[pos[-1]])
        coef[neg[:r]] = -1.0
        coef[pos[-1]] = float(r)
        return float(self._delta_by_r(len(neg))[r]), coef

    def batch_violation_fallback(self, scores: np.ndarray, labels: np.ndarray,
                                 offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Without numba: :meth:`batch_violation_numpy`."""
        return self.batch_violation_numpy(scores, labels, offsets)

    def ranking_call(self, n: int) -> Optional[_numba.KernelCall]:
        """The compiled single-query argmax (:func:`._rank_kernels.mrr_ranking`), or None without numba."""
        jit = _numba.kernels()
        return None if jit is None else (jit.mrr_ranking, (_numba.as_int(self.k),))

    def kernel_call(self, n_max: int) -> Optional[_numba.KernelCall]:
        """The compiled batch (:func:`._rank_kernels.mrr_batch`), or None without numba."""
        jit = _numba.kernels()
        return None if jit is None else (jit.mrr_batch, (_numba.as_int(self.k),))

    def batch_violation_numpy(self, scores: np.ndarray, labels: np.ndarray,
                              offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`violation` for all queries at once, vectorised numpy.

        One lexsort puts each query's bad candidates first, by decreasing score; bad candidate number t
        (0-based) then stands for r = t + 1, with H(r) = Δ(r) + Σ_{l ≤ t} s_{b_l} − (t + 1)·s_{g_min};
        r = 0 (H = 0) wins unless some H(r) is strictly larger, as in :meth:`_best_r`.
        """
        scores = np.asarray(scores, dtype=float)
        rel_all = np.asarray(labels) > 0
        offsets = np.asarray(offsets, dtype=np.int64)
        n_q = len(offsets) - 1
        sizes = np.diff(offsets)
        qid = query_ids(offsets)
        n_pos = np.bincount(qid, weights=rel_all, minlength=n_q).astype(np.int64)
        ok = (n_pos > 0) & (n_pos < sizes)
        g_min_score = np.full(n_q, np.inf)
        np.minimum.at(g_min_score, qid[rel_all], scores[rel_all])
        g_min = np.full(n_q, -1)
        # the lowest-scoring relevant candidate (the last in stable decreasing-score order)
        order_rel = np.lexsort((-np.arange(len(scores)), scores, ~rel_all, qid))
        first_in_q = offsets[:-1]
        g_min[ok] = order_rel[first_in_q[ok]]
        g_min_score = np.where(ok, g_min_score, 0.0)
        # bad candidates of each query, by decreasing score (stable)
        order = np.lexsort((-scores, rel_all, qid))
        bad = ~rel_all[order]
        t = segment_exclusive_cumsum(bad.astype(float), offsets)            # index among the bad ones
        pref = segment_exclusive_cumsum(np.where(bad, scores[order], 0.0), offsets) + scores[order]
        r = t + 1
        d = 1.0 - 1.0 / (1.0 + r)
        if self.k is not None:
            d[r >= self.k] = 1.0
        h = np.where(bad & ok[qid], d + pref - r * g_min_score[qid], -np.inf)
        best = np.full(n_q, -np.inf)
        np.maximum.at(best, qid, h)
        # the first position attaining the query's best H (ties: the smallest r, as np.argmax does)
        hit = (h == best[qid]) & (best[qid] > 0.0)
        pos_hit = np.where(hit, np.arange(len(h)), len(h))
        first_hit = np.full(n_q, len(h))
        np.minimum.at(first_hit, qid, pos_hit)
        r_hat = np.where(first_hit < len(h), t[np.minimum(first_hit, len(h) - 1)] + 1, 0).astype(np.int64)
        r_hat[~ok] = 0
        coef = np.zeros(len(scores))
        take = bad & (t < r_hat[qid])
        coef[order[take]] = -1.0
        coef[g_min[ok]] = r_hat[ok].astype(float)
        deltas = np.where(r_hat > 0, 1.0 - 1.0 / (1.0 + r_hat), 0.0)
        if self.k is not None:
            deltas[r_hat >= self.k] = 1.0
        deltas[~ok] = 0.0
        return deltas, coef
