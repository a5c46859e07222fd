"""Compiled dual QP of the 1-slack structural SVM (numba), the solver of :mod:`.qp`.

Loaded by :func:`.qp.compiled` (never imported at package import time); :func:`solve_dual` here takes
the same steps as the numpy reference implementation of the tests (``tests/oracles/qp_reference.py``) —
the active-set method of
Nocedal & Wright (Alg. 16.3) on the dual of Joachims, Finley & Yu (MLJ 2009, OP 4), one unused-budget
variable per slack group, equilibrated KKT solves by LU with a least-squares fallback, then SMO pair
steps — with loops in place of numpy's fancy indexing. A numpy version spends ~0.3 ms of interpreter
overhead per active-set round on working sets of a few hundred constraints; here a round costs its
arithmetic (one LU of the support's KKT system, O(m·|support|) for the outside gradients).

Arguments are contiguous float64 arrays (``group`` int64); :func:`.qp.solve_dual` converts them.
``tests/svm/test_qp.py`` compares this module with the reference on random and recorded instances.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.np.linalg import _LAPACK, F_INT_nptype, _dummy_liveness_func as _alive

#: numba's own LAPACK entry points, those ``np.linalg.solve`` and ``np.linalg.lstsq`` call (dgesv; dgelsd with its
#: workspace query), called as they call them (``_alive`` keeps the arrays through the call, as there): the same
#: bits, without their generic checks and copies, which took most of the QP's compiling (7.5 s of CPU against 1.7)
_GESV = _LAPACK().numba_xgesv(types.float64)
_GELSD = _LAPACK().numba_ez_gelsd(types.float64)
_DOUBLE = ord("d")


@njit(cache=True, nogil=True)
def gradient_scale(G, b, alpha):
    """max(|b|, |G|·α) over the rows: the magnitude at which the gradient b − Gα is computed
    (``gradient_scale`` of the reference implementation)."""
    m = b.shape[0]
    s = 0.0
    for i in range(m):
        s = max(s, abs(b[i]))
    pos = np.flatnonzero(alpha > 0)
    for i in range(m):
        acc = 0.0
        for j in pos:
            acc += abs(G[i, j]) * alpha[j]
        s = max(s, acc)
    return s if s > 0 else 1.0


@njit(cache=True, nogil=True)
def _norm(v):
    """Euclidean norm of a vector (as ``np.linalg.norm``)."""
    return np.sqrt(np.sum(v * v))


@njit(cache=True, nogil=True)
def _kkt_solve(K, r):
    """A solution of K z = r: LU when its residual is at rounding level, else minimum-norm least
    squares with numpy's default cut-off (ε·n), as the reference's ``_kkt_solve``; ``np.linalg``'s
    LAPACK calls (:data:`_GESV`, :data:`_GELSD`) on column-major copies, and its error for non-finite input."""
    n = r.shape[0]
    if n == 0:
        return np.zeros(0)
    for i in range(n):
        if not np.isfinite(r[i]) or not np.isfinite(K[i]).all():
            raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    lu, z = K.T.copy(), r.copy()                        # K's columns in lu's rows: LAPACK's column-major copy
    pivots = np.empty(n, dtype=F_INT_nptype)
    info = _GESV(_DOUBLE, n, 1, lu.ctypes, n, pivots.ctypes, z.ctypes, n)
    _alive([lu.size, pivots.size, z.size])
    if info == 0:                                       # else an exactly singular pivot
        if np.isfinite(z).all() and _norm(K @ z - r) <= 1e-10 * max(1.0, _norm(r)):
            return z
    a, z, sv = K.T.copy(), r.copy(), np.empty(n)
    rank = np.empty(1, dtype=F_INT_nptype)
    info = _GELSD(_DOUBLE, n, n, 1, a.ctypes, n, z.ctypes, n, sv.ctypes, 2.220446049250313e-16 * n, rank.ctypes)
    _alive([a.size, z.size, sv.size, rank.size])
    if info != 0:
        raise ValueError("Internal algorithm failed to converge.")
    return z


@njit(cache=True, nogil=True)
def _fix_budgets(x, group, C, m):
    """Scale a group over its budget into it; the unused budget x[m + k] takes the rest (as
    the reference's ``_fix_budgets``)."""
    ng = C.shape[0]
    used = np.zeros(ng)
    for i in range(m):
        used[group[i]] += x[i]
    for k in range(ng):
        if used[k] > C[k]:
            f = C[k] / used[k] if used[k] > 0 else 1.0
            for i in range(m):
                if group[i] == k:
                    x[i] *= f
            used[k] = C[k]
        x[m + k] = max(C[k] - used[k], 0.0)


@njit(cache=True, nogil=True)
def _row_gradient(G, b, x, i, m):
    """g_i = b_i − Σ_j G_ij x_j over the real variables."""
    acc = 0.0
    for j in range(m):
        if x[j] != 0.0:
            acc += G[i, j] * x[j]
    return b[i] - acc


@njit(cache=True, nogil=True)
def _pair_step_into(G, b, group, C, x, i, m):
    """Move mass into i from its group's lowest-gradient donor (or the unused budget) by the exact
    line search (the reference's ``_pair_step_into``); False if nothing moves."""
    k = group[i]
    g_i = _row_gradient(G, b, x, i, m)
    best, g_j = -1, 0.0
    jj, g_min = -1, np.inf
    for c in range(m):
        if group[c] == k and x[c] > 0:
            g_c = _row_gradient(G, b, x, c, m)
            if g_c < g_min:
                jj, g_min = c, g_c
    if jj >= 0 and (x[m + k] <= 0 or g_min < 0):
        best, g_j = jj, g_min
    if best < 0 and x[m + k] <= 0:
        return False
    gain = g_i - g_j
    if gain <= 0:
        return False
    if best >= 0:
        eta, limit = G[i, i] + G[best, best] - 2 * G[i, best], x[best]
    else:
        eta, limit = G[i, i], x[m + k]
    t = limit if eta <= 1e-300 else min(limit, gain / eta)
    if t <= 0:
        return False
    x[i] += t
    if best >= 0:
        x[best] -= t
    else:
        x[m + k] -= t
    return True


@njit(cache=True, nogil=True)
def _face_step(G, x, idx, nr, gid, c_full, ng):
    """(step, λ, has_λ) of one round: the equilibrated KKT system of the support ``idx`` (its ``nr``
    real variables first), or a direction of zero curvature and ascent if that face is singular and the
    gradient is not in its range (N&W §16.5)."""
    p = idx.shape[0]
    N = p + ng
    K = np.zeros((N, N))
    for a in range(nr):
        for c in range(nr):
            K[a, c] = G[idx[a], idx[c]]
    for a in range(p):
        k = gid[idx[a]]
        K[a, p + k] = 1.0
        K[p + k, a] = 1.0
    d = np.ones(N)
    for a in range(p):
        if K[a, a] > 0:
            d[a] = 1.0 / np.sqrt(K[a, a])
    row = np.zeros(ng)
    for a in range(p):
        k = gid[idx[a]]
        row[k] = max(row[k], abs(d[a]))
    for k in range(ng):
        d[p + k] = 1.0 / row[k] if row[k] > 0 else 1.0
    rhs = np.zeros(N)
    for a in range(p):
        g = c_full[idx[a]]
        if a < nr:
            for c in range(nr):
                g -= K[a, c] * x[idx[c]]
        rhs[a] = d[a] * g
    Ks = K * d[:, None] * d[None, :]
    y = _kkt_solve(Ks, rhs)
    resid = rhs - Ks @ y
    null_dir = (d * resid)[:p]
    if _norm(resid) > 1e-9 * max(_norm(rhs), 1e-300) and (null_dir < 0).any():
        return null_dir, np.zeros(ng), False
    dy = d * y
    return dy[:p].copy(), dy[p:].copy(), True


# ---------------------------------------------------------------------------------------------
# the support's Gram matrix as a Cholesky factor, updated as variables enter and leave
# ---------------------------------------------------------------------------------------------
#: a variable whose Gram column is this close (δ² ≤ SINGULAR × G_jj) to the span of the support's
#: columns makes the face (nearly) singular: those rounds take the dense KKT solve of the reference
SINGULAR = 1e-8
#: how often a call goes back from dense rounds to the factor (after a variable left); alternating
#: between the two near a singular face can cycle, as their rounding differs
MAX_REFACTOR = 2


@njit(cache=True, nogil=True)
def _chol_add(L, order, where, r, G, j):
    """Append variable j to the factor L Lᵀ = G[order, order] (O(r²): one forward substitution);
    returns the new size, or −1 if j's pivot δ² is at most SINGULAR × G_jj (then nothing changes)."""
    l = _forward(L, r, G[order[:r], j])
    d2 = G[j, j]
    for a in range(r):
        d2 -= l[a] * l[a]
    if not d2 > SINGULAR * G[j, j]:
        return -1
    for a in range(r):
        L[r, a] = l[a]
    L[r, r] = np.sqrt(d2)
    order[r] = j
    where[j] = r
    return r + 1


@njit(cache=True, nogil=True)
def _chol_remove(L, order, where, r, q):
    """Remove the variable at position q of the factor (O(r²)): the rows below move up, and the
    trailing block absorbs the removed column by a rank-one update (Givens-style cholupdate)."""
    n = r - 1
    x = np.empty(n - q)
    for i in range(q + 1, r):
        x[i - q - 1] = L[i, q]
    where[order[q]] = -1
    for i in range(q + 1, r):
        for c in range(q):
            L[i - 1, c] = L[i, c]
        for c in range(q + 1, i + 1):
            L[i - 1, c - 1] = L[i, c]
        order[i - 1] = order[i]
        where[order[i - 1]] = i - 1
    for k in range(q, n):
        xk = x[k - q]
        lkk = L[k, k]
        rr = np.sqrt(lkk * lkk + xk * xk)
        c, s = rr / lkk, xk / lkk
        L[k, k] = rr
        for i in range(k + 1, n):
            L[i, k] = (L[i, k] + s * x[i - q]) / c
            x[i - q] = c * x[i - q] - s * L[i, k]
    return n


@njit(cache=True, nogil=True)
def _forward(L, r, v):
    """L⁻¹ v by forward substitution over the factor's first r rows (O(r²))."""
    w = np.empty(r)
    for a in range(r):
        acc = v[a]
        for c in range(a):
            acc -= L[a, c] * w[c]
        w[a] = acc / L[a, a]
    return w


@njit(cache=True, nogil=True)
def _chol_solve(L, r, v):
    """H⁻¹ v for H = L Lᵀ (forward then back substitution, O(r²))."""
    w = _forward(L, r, v)
    for a in range(r - 1, -1, -1):
        acc = w[a]
        for c in range(a + 1, r):
            acc -= L[c, a] * w[c]
        w[a] = acc / L[a, a]
    return w


@njit(cache=True, nogil=True)
def _sync_factor(L, order, where, r, P, G, m):
    """Bring the factor to the real support {v < m: P[v]}: removals first, then additions in index
    order; returns the new size, or −1 when an addition makes the face (nearly) singular."""
    for q in range(r - 1, -1, -1):
        if not P[order[q]]:
            r = _chol_remove(L, order, where, r, q)
    for v in range(m):
        if P[v] and where[v] < 0:
            r = _chol_add(L, order, where, r, G, v)
            if r < 0:
                return -1
    return r


@njit(cache=True, nogil=True)
def _factor_step(G, b, x, idx, nr, gid, L, order, where, r, ng):
    """(step on ``idx``, λ, solved) of one round from the factor L Lᵀ = H of the support's Gram
    matrix: the face's KKT system H s + Eᵀλ = g, E s = 0 (g the gradient at x) by the Schur
    complement E H⁻¹ Eᵀ over the groups whose unused budget is off the support; the others have
    λ_k = 0 and their budget variable takes −Σ s of the group. O(r²) per group. ``solved`` is False
    when that small system is singular (a group without support), then the round goes dense."""
    p = idx.shape[0]
    g = np.empty(r)
    for a in range(r):
        v = order[a]
        acc = b[v]
        for c in range(r):
            acc -= G[v, order[c]] * x[order[c]]
        g[a] = acc
    budget_in = np.zeros(ng, dtype=np.bool_)
    for a in range(nr, p):
        budget_in[gid[idx[a]]] = True
    fixed = np.flatnonzero(~budget_in)
    n_f = fixed.shape[0]
    s = _chol_solve(L, r, g)
    lam = np.zeros(ng)
    if n_f > 0:
        V = np.empty((n_f, r))
        e = np.empty(r)
        for f in range(n_f):
            for a in range(r):
                e[a] = 1.0 if gid[order[a]] == fixed[f] else 0.0
            V[f] = _chol_solve(L, r, e)
        S = np.zeros((n_f, n_f))
        rhs = np.zeros(n_f)
        for f in range(n_f):
            for a in range(r):
                if gid[order[a]] == fixed[f]:
                    rhs[f] += s[a]
                    for h in range(n_f):
                        S[f, h] += V[h, a]
        dg = np.empty(n_f)
        for f in range(n_f):
            if not S[f, f] > 0:
                return np.zeros(p), lam, False
            dg[f] = 1.0 / np.sqrt(S[f, f])
        rhs *= dg                                         # equilibrated: groups of very different scales
        S *= np.outer(dg, dg)
        y = _kkt_solve(S, rhs)
        for f in range(n_f):
            lam[fixed[f]] = dg[f] * y[f]
            for a in range(r):
                s[a] -= V[f, a] * lam[fixed[f]]
    step = np.zeros(p)
    step[:nr] = s[where[idx[:nr]]]
    for a in range(nr, p):
        k = gid[idx[a]]
        acc = 0.0
        for c in range(nr):
            if gid[idx[c]] == k:
                acc -= step[c]
        step[a] = acc
    return step, lam, True


@njit(cache=True, nogil=True)
def active_set(G, b, group, C, alpha, max_rounds, rtol, factor):
    """(x over the real variables, settled) by the primal active-set method of the reference's ``_active_set``
    (Nocedal & Wright, Alg. 16.3); ``settled`` False means the caller falls back on SMO.

    With ``factor`` the rounds solve the face's KKT system from a Cholesky factor of the support's Gram
    matrix kept up to date as variables enter and leave (O(|support|²) a round instead of an LU's
    O(|support|³)); a (nearly) singular face (:data:`SINGULAR`) takes the reference's dense, equilibrated
    solve with its least-squares and zero-curvature cases, until a variable leaves the support."""
    m, ng = b.shape[0], C.shape[0]
    n = m + ng
    gid = np.empty(n, dtype=np.int64)
    gid[:m] = group
    gid[m:] = np.arange(ng)
    x = np.zeros(n)                         # the feasible start: α clipped at 0, each group scaled into its budget
    for i in range(m):
        x[i] = max(alpha[i], 0.0)
    _fix_budgets(x, group, C, m)
    c_full = np.zeros(n)
    c_full[:m] = b
    scale = gradient_scale(G, b, x[:m])
    P = x > 0
    # counters start as np.int64, not as literals: numba types a callee once per argument type it sees
    # while inferring this loop, and a literal 0 or -1 (before the loop widens it) compiled
    # _sync_factor, _chol_remove, _factor_step, _face_step and _pair_step_into a second time
    entering = np.int64(-1)
    L = np.empty((m, m))
    order = np.empty(m, dtype=np.int64)
    where = np.full(m, -1, dtype=np.int64)
    r, use_factor, retries = np.int64(0), factor, 0
    for _ in range(max_rounds):
        idx = np.flatnonzero(P)
        nr = np.int64(np.searchsorted(idx, m))                  # the real variables come first
        solved = False
        if use_factor:
            r = _sync_factor(L, order, where, r, P, G, m)
            if r >= 0:
                step, lam, solved = _factor_step(G, b, x, idx, nr, gid, L, order, where, r, ng)
                has_lam = True
            else:                                           # singular face: dense until a variable leaves
                use_factor, r = False, 0
                where[:] = -1
        if not solved:
            step, lam, has_lam = _face_step(G, x, idx, nr, gid, c_full, ng)
        z = x[idx] + step
        if has_lam and (z >= 0).all():
            x[:] = 0.0
            x[idx] = z
            _fix_budgets(x, group, C, m)
            out = np.flatnonzero(~P)
            if out.shape[0] == 0:
                return x[:m].copy(), True
            pos = idx[:nr][z[:nr] > 0]
            n_pos = pos.shape[0]
            if n_pos > 0:
                scale = max(scale, gradient_scale(G, b, x[:m]))
            best_j, best_ex = -1, -np.inf
            for o in range(out.shape[0]):
                v = out[o]
                g = c_full[v]
                if v < m:
                    for q in range(n_pos):
                        g -= G[v, pos[q]] * x[pos[q]]
                ex = g - lam[gid[v]]
                if ex > best_ex:
                    best_j, best_ex = v, ex
            if best_ex <= rtol * max(scale, abs(lam[gid[best_j]])):
                return x[:m].copy(), True
            P[best_j] = True
            entering = best_j
            continue
        blocking, t = -1, np.inf
        for a in range(idx.shape[0]):
            if step[a] < 0:
                ratio = x[idx[a]] / -step[a]
                if ratio < t:
                    blocking, t = idx[a], ratio
        if blocking < 0:
            return x[:m].copy(), False
        if t <= 0 and blocking == entering:
            if not _pair_step_into(G, b, group, C, x, entering, m):
                return x[:m].copy(), False
        else:
            x[idx] += t * step
            x[blocking] = 0.0
            if factor and not use_factor and retries < MAX_REFACTOR:
                use_factor = True                           # a variable left: the face may be regular again
                retries += 1
        x[x < 0] = 0.0
        _fix_budgets(x, group, C, m)
        entering = -1
        P = x > 0
        if not P.any():
            return x[:m].copy(), False
    return x[:m].copy(), False


@njit(cache=True, nogil=True)
def _smo(G, b, group, C, alpha, tol, max_steps, steps):
    """SMO pair steps from α until no pair of one group gains more than ``tol`` × gradient scale
    (the polish of the reference's ``solve_dual_reference``); returns the step count."""
    m, ng = b.shape[0], C.shape[0]
    g = b - G @ alpha
    abs_tol = tol * gradient_scale(G, b, alpha)
    while steps < max_steps:
        best_gap, bi, bj, bslack = abs_tol, -2, -2, 0.0
        for k in range(ng):
            n_k, used = 0, 0.0
            for c in range(m):
                if group[c] == k:
                    n_k += 1
                    used += alpha[c]
            if n_k == 0:
                continue
            slack = max(0.0, C[k] - used)
            # up: argmax of g over the group then the budget (gradient 0); first index wins ties
            up, g_up = -1, -np.inf
            down, g_down = -1, np.inf
            for c in range(m):
                if group[c] == k:
                    if g[c] > g_up:
                        up, g_up = c, g[c]
                    if alpha[c] > 0 and g[c] < g_down:
                        down, g_down = c, g[c]
            if 0.0 > g_up:
                up, g_up = -1, 0.0
            if slack > 1e-15 * C[k] and 0.0 < g_down:
                down, g_down = -1, 0.0
            if down == -1 and not slack > 1e-15 * C[k]:
                continue                                   # no donor
            gap = g_up - g_down
            if up != down and gap > best_gap:
                best_gap, bi, bj, bslack = gap, up, down, slack
        if bi == -2:
            break
        i, j, slack = bi, bj, bslack
        if i >= 0 and j >= 0:
            eta, limit, gain = G[i, i] + G[j, j] - 2 * G[i, j], alpha[j], g[i] - g[j]
        elif j < 0:
            eta, limit, gain = G[i, i], slack, g[i]
        else:
            eta, limit, gain = G[j, j], alpha[j], -g[j]
        t = limit if eta <= 1e-300 else min(limit, gain / eta)
        if t <= 0:
            break
        if i >= 0:
            alpha[i] += t
            for c in range(m):
                g[c] -= t * G[c, i]
        if j >= 0:
            alpha[j] -= t
            if alpha[j] < 1e-300:
                alpha[j] = 0.0
            for c in range(m):
                g[c] += t * G[c, j]
        steps += 1
        if steps % 1000 == 0:
            g = b - G @ alpha
            abs_tol = tol * gradient_scale(G, b, alpha)
    return steps


@njit(cache=True, nogil=True)
def compact_working_set(G, A, keep):
    """The working set's rows ``keep`` (increasing) moved to the front, in order, in place: A's rows and
    G's rows and columns, as ``A[:r] = A[keep]; G[:r, :r] = G[np.ix_(keep, keep)]`` give them (a copy,
    the same bits) at ~¼ of their cost (:meth:`.solver._WorkingSet.drop_idle`). In place is safe:
    ``keep[i] ≥ i``, so row i reads a row not yet written and, within it, a column at or right of j."""
    r = keep.shape[0]
    for i in range(r):
        ki = keep[i]
        if ki != i:
            A[i, :] = A[ki, :]
        for j in range(r):
            G[i, j] = G[ki, keep[j]]


@njit(cache=True, nogil=True)
def solve_dual(G, b, group, C, alpha, tol, max_steps, factor=True):
    """(α, steps) of :func:`.qp.solve_dual`: the active set (``factor``: with the updated Cholesky
    factor; False: the reference's dense rounds), then SMO; ``alpha`` is overwritten."""
    m = b.shape[0]
    steps = 0
    if m > 0:
        rounds = 4 * m + 20 * C.shape[0]
        # ``dense`` is False whenever it is used, but a runtime value: numba compiles a function once per
        # literal argument, and ``active_set(..., False)`` beside ``active_set(..., factor)`` compiled
        # active_set and its callees twice (~10 s of a cold start)
        dense = not factor
        x, settled = active_set(G, b, group, C, alpha, rounds, tol, factor)
        if factor and not settled:                      # safety net: the reference's dense rounds
            x, settled = active_set(G, b, group, C, alpha, rounds, tol, dense)
        if settled:
            alpha[:] = x
            steps += 1
    steps = _smo(G, b, group, C, alpha, tol, max_steps, steps)
    return alpha, steps
