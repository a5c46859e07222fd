"""Compiled per-query ÂP / N̂DCG and their gradients (numba), and the exact AP / NDCG@n of :mod:`.ranker`.

The formulas of Qin et al. (Eqs. (20), (22), (44)–(47) for ÂP; Eqs. (20), (21), (41)–(43) for N̂DCG), written
as loops over the m relevant × n candidates instead of (m × n) pair matrices (memory O(m + n)). The position terms
σ(−α(s_x − s_y)) = 1 / (1 + e^{α(s_x − s_c)} e^{α(s_c − s_y)}) (s_c the middle of the query's scores)
take one exponential per candidate instead of one per pair, so the pairs cost a multiplication and a
division, and the backward pass (Eq. (42)) recomputes them instead of storing them. Rounding: the
exponent α(s_x − s_c) carries an error of about α·|s_x − s_c|·2⁻⁵³, so the terms agree with the
pair-by-pair σ to ~1e-13 relative at α·(max s − min s) = 1400; queries with a wider spread (where a
factor could overflow), or with non-finite scores, take one exponential per pair.

Imported lazily by :mod:`.ranker` (:func:`.ranker.jit`); cached on disk (``cache=True``). The tests compare
these kernels with the numpy reference implementation of ``tests/oracles/approx_reference.py``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pyterrier_svmmap.measures._kernels import relevant_ranks


#: largest α·(max s − min s) for which the factored form is used: each factor e^{±α(s − c)} stays
#: below e^{700} (finite); wider queries take the per-pair exponential
FACTOR_SPAN = 1400.0


@njit(cache=True, nogil=True, inline="always")
def _expit(z):
    """σ(z) = 1 / (1 + e^{−z}), as ``scipy.special.expit`` computes it (0 and 1 at the extremes)."""
    return 1.0 / (1.0 + math.exp(-z))


@njit(cache=True, nogil=True)
def _factors(s, rel, alpha, E, F):
    """E_y = e^{α(c − s_y)}, F_x = e^{α(s_x − c)} (c the middle of the scores), so that the position
    term of Eq. (20) is σ(−α(s_x − s_y)) = 1 / (1 + F_x E_y) with one exponential per candidate instead
    of one per pair. False (nothing filled) when α·(max s − min s) > FACTOR_SPAN or a score is not finite."""
    lo = s.min()                                         # NaN if a score is NaN
    hi = s.max()
    if not (alpha * (hi - lo) <= FACTOR_SPAN):          # also False for NaN / inf
        return False
    c = 0.5 * (lo + hi)
    for y in range(s.shape[0]):
        E[y] = math.exp(alpha * (c - s[y]))
    for i in range(rel.shape[0]):
        F[i] = math.exp(alpha * (s[rel[i]] - c))
    return True


@njit(cache=True, nogil=True, inline="always")
def _position_term(s, x, y, alpha, factored, Fx, E):
    """σ(−α(s_x − s_y)): 1 / (1 + F_x E_y) when ``factored`` (:func:`_factors`), else pair by pair."""
    return 1.0 / (1.0 + Fx * E[y]) if factored else _expit((s[x] - s[y]) * -alpha)


@njit(cache=True, nogil=True)
def _positions(s, rel, alpha, factored, E, F, pi, wsum):
    """π̂(x) = 1 + Σ_{y≠x} σ(−α(s_x − s_y)) for x in ``rel`` (Eq. (20)) into ``pi``, and
    Σ_{y≠x} W_xy (W = σ(1 − σ)) into ``wsum``."""
    for i in range(rel.shape[0]):
        x = rel[i]
        acc_p = 0.0
        acc_w = 0.0
        for y in range(s.shape[0]):
            if y != x:
                p = _position_term(s, x, y, alpha, factored, F[i], E)
                acc_p += p
                acc_w += p * (1.0 - p)
        pi[i] = 1.0 + acc_p
        wsum[i] = acc_w


@njit(cache=True, nogil=True)
def _backward(s, rel, alpha, factored, E, F, g_pi, wsum, grad):
    """∂M/∂s from ∂M/∂π̂ (Eq. (42)): grad_y = α Σ_x g_x W_xy − [y ∈ rel] α g_y Σ_z W_yz."""
    n = s.shape[0]
    m = rel.shape[0]
    for y in range(n):
        grad[y] = 0.0
    for i in range(m):
        g = g_pi[i]
        x = rel[i]
        for y in range(n):
            if y != x:
                p = _position_term(s, x, y, alpha, factored, F[i], E)
                grad[y] += g * (p * (1.0 - p))
    for i in range(m):
        grad[rel[i]] -= g_pi[i] * wsum[i]
    for y in range(n):
        grad[y] *= alpha


@njit(cache=True, nogil=True)
def _query_positions(s, rel, alpha):
    """The shared start of both measures: the exponential factors and the relevant candidates' π̂
    (Eq. 20) with their sums for the backward pass: (factored, E, F, π̂, wsum)."""
    pi = np.empty(rel.shape[0])
    wsum = np.empty(rel.shape[0])
    E = np.empty(s.shape[0])
    F = np.empty(rel.shape[0])
    factored = _factors(s, rel, alpha, E, F)
    _positions(s, rel, alpha, factored, E, F, pi, wsum)
    return factored, E, F, pi, wsum


@njit(cache=True, nogil=True)
def ap_query(s, rel, alpha, beta, n_rel, want_grad, grad):
    """ÂP of Eq. (22) for one query with relevant candidates ``rel`` (m ≥ 1) and |D+| = ``n_rel`` > 0;
    with ``want_grad``, ∂ÂP/∂s (Eqs. (44)–(47)) into ``grad`` (n cells)."""
    m = rel.shape[0]
    factored, E, F, pi, wsum = _query_positions(s, rel, alpha)
    inv_pi = np.empty(m)
    for i in range(m):
        inv_pi[i] = 1.0 / pi[i]
    # truncation terms over relevant pairs: T[y, x] = σ(β(π̂(y) − π̂(x))), x ≠ y
    a = np.zeros(m)
    tp_row = np.zeros(m)
    tp_col = np.zeros(m)
    for yi in range(m):
        py = pi[yi]
        acc = 0.0
        acc_tp = 0.0
        for xi in range(m):
            if xi == yi:
                continue
            t = _expit((py - pi[xi]) * beta)
            acc += t
            if want_grad:
                tp = t * (1.0 - t)
                acc_tp += tp
                tp_col[xi] += inv_pi[yi] * tp
        a[yi] = acc
        tp_row[yi] = acc_tp
    value = 0.0
    for i in range(m):
        value += (1.0 + a[i]) * inv_pi[i]
    value /= n_rel
    if not want_grad:
        return value
    g_pi = np.empty(m)
    for i in range(m):
        g_pi[i] = (-(1.0 + a[i]) * (inv_pi[i] * inv_pi[i]) + beta * inv_pi[i] * tp_row[i]
                   - beta * tp_col[i]) / n_rel
    _backward(s, rel, alpha, factored, E, F, g_pi, wsum, grad)
    return value


@njit(cache=True, nogil=True)
def ndcg_query(s, rel, gains, alpha, idcg, want_grad, grad):
    """N̂DCG of Eq. (21) for one query with relevant candidates ``rel`` (m ≥ 1) of gains ``gains``
    (2^r − 1, one per relevant) and N_n = ``idcg`` > 0; with ``want_grad``, ∂N̂DCG/∂s (Eqs. (41)–(43))
    into ``grad``."""
    m = rel.shape[0]
    factored, E, F, pi, wsum = _query_positions(s, rel, alpha)
    value = 0.0
    ln2 = math.log(2.0)
    g_pi = np.empty(m)
    for i in range(m):
        lt = math.log2(1.0 + pi[i])
        value += gains[i] / lt
        g_pi[i] = -gains[i] / (lt * lt * (1.0 + pi[i]) * ln2) / idcg
    value /= idcg
    if want_grad:
        _backward(s, rel, alpha, factored, E, F, g_pi, wsum, grad)
    return value


# exact AP and DCG of the ranking by the scores (model selection), without sorting the candidates
@njit(cache=True, nogil=True)
def exact_ap(scores, offsets, rel_flat, rel_offsets, n_relevant, out):
    """AP per query as :func:`.measures.average_precision` computes it, bit for bit: Σ over the relevant
    candidates in rank order of hits/rank, divided by ``n_relevant`` (0 where it is 0). ``rel_flat``:
    each query's relevant candidates (local indices), delimited by ``rel_offsets``. Finite scores only."""
    for q in range(offsets.shape[0] - 1):
        r = rel_flat[rel_offsets[q]:rel_offsets[q + 1]]
        m = r.shape[0]
        rank = np.empty(m, dtype=np.int64)
        relevant_ranks(scores, offsets[q], offsets[q + 1], r, rank)
        rank.sort()
        acc = 0.0
        for i in range(m):
            acc += (i + 1.0) / rank[i]
        out[q] = acc / n_relevant[q] if n_relevant[q] > 0 else 0.0


@njit(cache=True, nogil=True)
def exact_dcg(scores, offsets, rel_flat, rel_offsets, rel_gains, disc, out):
    """DCG@n per query as :func:`.measures.dcg_at` computes it, bit for bit: Σ over the candidates with a
    non-zero gain, in rank order, of gain · disc[rank − 1] (``disc``: numpy's 1/log2(rank + 1) table).
    Candidates with the same rank order as in ``dcg_at`` (ties by candidate order). Finite scores only."""
    for q in range(offsets.shape[0] - 1):
        lo = rel_offsets[q]
        r = rel_flat[lo:rel_offsets[q + 1]]
        m = r.shape[0]
        rank = np.empty(m, dtype=np.int64)
        relevant_ranks(scores, offsets[q], offsets[q + 1], r, rank)
        order = np.argsort(rank)
        acc = 0.0
        for j in range(m):
            i = order[j]
            acc += rel_gains[lo + i] * disc[rank[i] - 1]
        out[q] = acc
