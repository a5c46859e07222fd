"""Reference implementation in numpy of ÂP and N̂DCG (Qin, Liu & Li 2010) with their gradients: the oracle the
tests compare the compiled kernels of :mod:`pyterrier_svmmap.approx._kernels` with. The (m × n) pair matrices are
built in row chunks of at most ``max_entries`` cells (recomputed for the backward pass when there is more than one).
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import numpy as np
from scipy.special import expit

from pyterrier_svmmap.approx.ranker import DEFAULT_MAX_ENTRIES, ApproxRanker, gains, ideal_dcg


def _pair_chunks(s: np.ndarray, rows: np.ndarray, alpha: float,
                 max_entries: int) -> Iterator[Tuple[slice, np.ndarray, np.ndarray]]:
    """Yield (slice of ``rows``, those rows, P) with P[i, y] = σ(−α(s_rows[i] − s_y)), P[i, i] = 0."""
    n = len(s)
    step = max(1, int(max_entries) // max(n, 1))
    for lo in range(0, len(rows), step):
        r = rows[lo:lo + step]
        z = np.subtract.outer(s[r], s)
        z *= -alpha
        p = expit(z, out=z)
        p[np.arange(len(r)), r] = 0.0
        yield slice(lo, lo + len(r)), r, p


def approx_positions(s: np.ndarray, rows: np.ndarray, alpha: float,
                     max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """π̂ of Eq. (20) for the candidates ``rows`` of one query with scores ``s``."""
    out = np.empty(len(rows))
    for sl, _, p in _pair_chunks(np.asarray(s, float), np.asarray(rows), alpha, max_entries):
        out[sl] = 1.0 + p.sum(axis=1)
    return out


class _Positions:
    """π̂ for rows R of one query, remembering what the backward pass through Eq. (42) needs."""

    def __init__(self, s: np.ndarray, rows: np.ndarray, alpha: float, max_entries: int, keep: bool):
        self.s, self.rows, self.alpha, self.max_entries = s, rows, alpha, max_entries
        self.pi = np.empty(len(rows))
        self._kept: Optional[List] = [] if keep else None
        n_chunks = 0
        for sl, r, p in _pair_chunks(s, rows, alpha, max_entries):
            self.pi[sl] = 1.0 + p.sum(axis=1)
            n_chunks += 1
            if self._kept is not None:
                self._kept.append((sl, r, p))
        if n_chunks > 1:           # too big to keep: recompute in backward
            self._kept = None

    def backward(self, g_pi: np.ndarray) -> np.ndarray:
        """∂M/∂s from ∂M/∂π̂(R), Eq. (42): ∂π̂(x)/∂s_x = −α Σ_y W_xy, ∂π̂(x)/∂s_y = α W_xy,
        W = σ(1 − σ) of the pair. Returns a gradient over all n candidates."""
        grad = np.zeros(len(self.s))
        chunks = self._kept if self._kept is not None else \
            _pair_chunks(self.s, self.rows, self.alpha, self.max_entries)
        for sl, r, p in chunks:
            w = p * (1.0 - p)                     # diagonal stays 0 (p = 0 there)
            g = g_pi[sl]
            grad += g @ w
            grad[r] -= g * w.sum(axis=1)          # rows are distinct candidates
        grad *= self.alpha
        return grad


def approx_ap_query(s: np.ndarray, labels: np.ndarray, alpha: float, beta: float,
                    n_relevant: Optional[float] = None, grad: bool = True,
                    max_entries: int = DEFAULT_MAX_ENTRIES) -> Tuple[float, Optional[np.ndarray]]:
    """ÂP of Eq. (22) for one query and (if ``grad``) ∂ÂP/∂s by Eqs. (44)–(47).

    ``n_relevant`` is |D+| (default: the relevant candidates); like trec_eval's AP it may count
    relevant documents that are not among the candidates.
    """
    s = np.asarray(s, dtype=float)
    rel = np.flatnonzero(np.asarray(labels) > 0)
    n_rel = float(len(rel) if n_relevant is None else n_relevant)
    if len(rel) == 0 or n_rel <= 0:
        return 0.0, (np.zeros(len(s)) if grad else None)
    pos = _Positions(s, rel, alpha, max_entries, keep=grad)
    pi = pos.pi
    m = len(rel)
    # truncation terms over relevant pairs, Eq. (22): T[y, x] = σ(β(π̂(y) − π̂(x))), x ≠ y
    a = np.zeros(m)             # A_y = Σ_x T[y, x]
    tp_row = np.zeros(m)        # Σ_x T'[y, x],           T' = T(1 − T) (symmetric)
    tp_col = np.zeros(m)        # Σ_y T'[y, x] / π̂(y)
    step = max(1, int(max_entries) // m)
    inv_pi = 1.0 / pi
    for lo in range(0, m, step):
        sl = slice(lo, min(m, lo + step))
        t = np.subtract.outer(pi[sl], pi)
        t *= beta
        t = expit(t, out=t)
        idx = np.arange(sl.stop - sl.start)
        t[idx, idx + lo] = 0.0
        a[sl] = t.sum(axis=1)
        if grad:
            tp = t * (1.0 - t)
            tp_row[sl] = tp.sum(axis=1)
            tp_col += inv_pi[sl] @ tp
    value = float(np.sum((1.0 + a) * inv_pi) / n_rel)
    if not grad:
        return value, None
    # ∂ÂP/∂π̂(z): Eq. (44) first term and Eq. (47) (z as y), Eq. (46) (z as x)
    g_pi = (-(1.0 + a) * inv_pi ** 2 + beta * inv_pi * tp_row - beta * tp_col) / n_rel
    return value, pos.backward(g_pi)


def approx_ndcg_query(s: np.ndarray, labels: np.ndarray, alpha: float,
                      idcg: Optional[float] = None, grad: bool = True,
                      max_entries: int = DEFAULT_MAX_ENTRIES) -> Tuple[float, Optional[np.ndarray]]:
    """N̂DCG of Eq. (21) for one query and (if ``grad``) ∂N̂DCG/∂s by Eqs. (41)–(43).

    ``idcg`` is N_n (default: the ideal DCG of these candidates' labels).
    """
    s = np.asarray(s, dtype=float)
    g_all = gains(labels)
    rel = np.flatnonzero(g_all > 0)
    if idcg is None:
        idcg = float(ideal_dcg(labels, np.array([0, len(s)]))[0])
    if len(rel) == 0 or idcg <= 0:
        return 0.0, (np.zeros(len(s)) if grad else None)
    pos = _Positions(s, rel, alpha, max_entries, keep=grad)
    pi, gr = pos.pi, g_all[rel]
    log_term = np.log2(1.0 + pi)
    value = float(np.sum(gr / log_term) / idcg)
    if not grad:
        return value, None
    g_pi = -gr / (log_term ** 2 * (1.0 + pi) * np.log(2.0)) / idcg      # Eq. (43)
    return value, pos.backward(g_pi)


def approx_ap(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, alpha: float, beta: float,
              n_relevant: Optional[np.ndarray] = None,
              max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """ÂP (Eq. (22)) per query of concatenated queries."""
    offsets = np.asarray(offsets)
    return np.array([approx_ap_query(scores[lo:hi], labels[lo:hi], alpha, beta,
                                     None if n_relevant is None else n_relevant[q], grad=False,
                                     max_entries=max_entries)[0]
                     for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:]))])


def approx_ndcg(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, alpha: float,
                n_relevant: Optional[np.ndarray] = None,
                max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """N̂DCG (Eq. (21)) per query of concatenated queries (N_n as :func:`ideal_dcg`)."""
    offsets = np.asarray(offsets)
    idcg = ideal_dcg(labels, offsets, None, n_relevant)
    return np.array([approx_ndcg_query(scores[lo:hi], labels[lo:hi], alpha, idcg[q], grad=False,
                                       max_entries=max_entries)[0]
                     for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:]))])


def reference_query(ranker: ApproxRanker, qs, q: int, s: np.ndarray, alpha: float, beta: float,
                    grad: bool) -> Tuple[float, Optional[np.ndarray]]:
    """``ApproxRanker._query`` from this reference: (M̂, ∂M̂/∂s) of query q of ``qs`` at scores ``s``
    (monkeypatch it onto :class:`ApproxRanker` to fit with the reference)."""
    o = qs.offsets
    labels = qs.labels[o[q]:o[q + 1]]
    if ranker.measure == "ap":
        n_rel = None if qs.n_relevant is None else qs.n_relevant[q]
        return approx_ap_query(s, labels, alpha, beta, n_rel, grad, ranker.max_entries)
    return approx_ndcg_query(s, labels, alpha, qs.idcg[q], grad, ranker.max_entries)
