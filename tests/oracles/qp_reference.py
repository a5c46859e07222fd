"""Reference implementation of the dual QP of :mod:`pyterrier_svmmap.svm.qp`, in numpy: the oracle the tests
compare the compiled solver (:mod:`pyterrier_svmmap.svm._qp_kernels`) with. Both take the same rounds and steps.

max_α bᵀα − ½ αᵀGα  subject to  α ≥ 0  and  Σ_{c: group[c]=k} α_c ≤ C_k  for every slack group k.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from pyterrier_svmmap.svm.qp import QP_MAX_STEPS


def gradient_scale(G: np.ndarray, b: np.ndarray, alpha: np.ndarray) -> float:
    """The magnitude at which the gradient b − Gα is computed: max(|b|, |G|·α).

    Rounding errors of the gradient are ~ machine ε times this, so tolerances on gradients are taken
    relative to it. Scaling the features by λ scales G by λ² and α by 1/λ² at the same C-equivalent
    problem, and keeps |G|α where it is at a fixed C once α has adapted: an absolute tolerance (1e-12,
    formerly) is then below the gradient's precision and SMO ran to its step cap.
    """
    s = float(np.abs(b).max()) if len(b) else 0.0
    pos = np.flatnonzero(alpha > 0)
    if len(pos):
        s = max(s, float((np.abs(G[:, pos]) @ alpha[pos]).max()))
    return s if s > 0 else 1.0


def _kkt_solve(K: np.ndarray, r: np.ndarray) -> np.ndarray:
    """A solution of the (equilibrated) KKT system K z = r: LU first, least squares if that fails.

    The QP is convex, so any solution of the support's KKT system is a minimiser on it; LU is ~5x cheaper
    than the SVD of ``lstsq`` and is kept when its residual is at rounding level. A singular K (more
    constraints on the support than φ has independent directions) falls back on the minimum-norm
    least-squares solution.
    """
    try:
        z = np.linalg.solve(K, r)
        if np.isfinite(z).all() and np.linalg.norm(K @ z - r) <= 1e-10 * max(1.0, np.linalg.norm(r)):
            return z
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(K, r, rcond=None)[0]


def _active_set(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray, alpha: np.ndarray,
                max_rounds: int, rtol: float = 1e-13) -> Optional[np.ndarray]:
    """Exact solve of the dual by a primal active-set method (Nocedal & Wright, Alg. 16.3).

    Each group k gets its unused budget s_k as an extra variable of zero curvature and zero gain, so the
    feasible set is a product of scaled simplices {x ≥ 0, Σ_{c∈k} x_c + s_k = C_k}. Each round solves
    the equality-constrained QP on the current support P (a small KKT system with one multiplier λ_k
    per group), steps towards it as far as x ≥ 0 allows and drops the variable that hits 0; once the
    support's solution is feasible it adds the outside variable whose gradient most exceeds its
    group's λ_k (by more than ``rtol`` × :func:`gradient_scale`), or stops when none does (the KKT
    conditions). Only G's rows and columns of the support are touched (O(m·|P|) a round). Returns None
    if it does not settle within ``max_rounds`` (the caller then falls back on SMO).
    """
    m, n_groups = len(b), len(C)
    gid = np.concatenate([group, np.arange(n_groups)])
    # a feasible start from the warm start: each group's α scaled into its budget, the rest unused
    x = np.concatenate([np.maximum(alpha, 0.0), np.zeros(n_groups)])
    for k in range(n_groups):
        members = group == k
        used = x[:m][members].sum()
        if used > C[k]:
            x[:m][members] *= C[k] / used
            used = C[k]
        x[m + k] = C[k] - used
    c_full = np.concatenate([b, np.zeros(n_groups)])
    scale = gradient_scale(G, b, x[:m])
    P = x > 0
    entering = -1
    for _ in range(max_rounds):
        idx = np.flatnonzero(P)
        real = idx[idx < m]
        p, nr = len(idx), len(real)                      # real variables come first in idx
        E = (gid[idx][None, :] == np.arange(n_groups)[:, None]).astype(float)
        K = np.zeros((p + n_groups, p + n_groups))
        K[:nr, :nr] = G[np.ix_(real, real)]
        K[:p, p:] = E.T
        K[p:, :p] = E
        # symmetric equilibration: constraints of very different norms (e.g. φ_mrr next to φ_po
        # in a combo) make K too ill-conditioned for a plain solve
        d = np.ones(p + n_groups)
        diag = np.diag(K)[:p]
        d[:p][diag > 0] = 1.0 / np.sqrt(diag[diag > 0])
        row = np.abs(E * d[:p]).max(axis=1)
        d[p:] = 1.0 / np.where(row > 0, row, 1.0)
        # the step on the face: max gᵀs − ½sᵀHs s.t. E s = 0 (g the gradient at x)
        grad_P = c_full[idx].copy()
        grad_P[:nr] -= G[np.ix_(real, real)] @ x[real]
        Ks, rhs = K * np.outer(d, d), d * np.concatenate([grad_P, np.zeros(n_groups)])
        y = _kkt_solve(Ks, rhs)
        resid = rhs - Ks @ y
        null = (d * resid)[:p]
        if np.linalg.norm(resid) > 1e-9 * max(np.linalg.norm(rhs), 1e-300) and (null < 0).any():
            # singular face and g not in its range: a direction of zero curvature and ascent
            # (N&W §16.5, semidefinite case) — move along it until a variable hits 0
            step, lam = null, None
        else:
            step, lam = (d * y)[:p], (d * y)[p:]
        z = x[idx] + step
        if lam is not None and (z >= 0).all():
            x[:] = 0.0
            x[idx] = z
            _fix_budgets(x, group, C, m)
            out = np.flatnonzero(~P)
            if len(out) == 0:
                return x[:m]
            pos = real[z[:nr] > 0]
            grad = c_full[out].copy()
            ro = out < m
            if len(pos):
                grad[ro] -= G[np.ix_(out[ro], pos)] @ x[pos]
                scale = max(scale, gradient_scale(G, b, x[:m]))
            excess = grad - lam[gid[out]]
            j = int(np.argmax(excess))
            if excess[j] <= rtol * max(scale, abs(lam[gid[out[j]]])):
                return x[:m]
            P[out[j]] = True
            entering = int(out[j])
            continue
        xi = x[idx]
        neg = step < 0
        if not neg.any():
            return None
        ratios = xi[neg] / -step[neg]
        t = ratios.min()
        blocking = int(idx[neg][np.argmin(ratios)])
        if t <= 0 and blocking == entering:
            # degenerate (the face's maximiser is not unique and the one found gives the entering
            # variable a negative value): an exact pair step into it instead, which strictly gains
            if not _pair_step_into(G, b, group, C, x, entering, m):
                return None
        else:
            x[idx] = xi + t * step
            x[blocking] = 0.0
        x[x < 0] = 0.0
        _fix_budgets(x, group, C, m)
        entering = -1
        P = x > 0
        if not P.any():
            return None
    return None


def _fix_budgets(x: np.ndarray, group: np.ndarray, C: np.ndarray, m: int) -> None:
    """Restore Σ_{c∈k} x_c + s_k = C_k exactly after a step (steps accumulate rounding): a group over
    its budget is scaled into it, the slack s_k = x[m + k] takes the rest."""
    used = np.bincount(group, weights=x[:m], minlength=len(C))
    over = used > C
    if over.any():
        factor = np.where(over, C / np.where(used > 0, used, 1.0), 1.0)
        x[:m] *= factor[group]
        used = np.minimum(used, C)
    x[m:] = np.maximum(C - used, 0.0)


def _pair_step_into(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray, x: np.ndarray,
                    i: int, m: int) -> bool:
    """Move mass into variable i from the donor of its group with the lowest gradient (a support
    variable or the unused budget, x[m + k]) by the exact line search; False if nothing moves."""
    k = int(group[i])
    members = np.flatnonzero((group == k) & (x[:m] > 0))
    g_i = b[i] - G[i, :m] @ x[:m]
    best, g_j = -1, 0.0                                   # the budget (gradient 0) if any is left
    if members.size:
        g_m = b[members] - G[members, :m] @ x[:m]
        jj = int(np.argmin(g_m))
        if x[m + k] <= 0 or g_m[jj] < 0:
            best, g_j = int(members[jj]), float(g_m[jj])
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


def solve_dual_reference(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray,
                         alpha: Optional[np.ndarray] = None, tol: float = 1e-13,
                         max_steps: int = QP_MAX_STEPS) -> Tuple[np.ndarray, int]:
    """Maximise bᵀα − ½αᵀGα s.t. α ≥ 0 and Σ_{c: group[c]=k} α_c ≤ C[k].

    An exact active-set solve (:func:`_active_set`) does nearly all the work, for one group (every
    single loss) or several (SVM-COMBO with separate slacks). Then, and on its own should the active
    set not settle, SMO: repeatedly move mass between the pair (i, j) of one group with
    the largest gradient gap g_i − g_j (j may be the group's unused budget, whose gradient is 0), by the
    exact line-search step, until no pair gains more than ``tol`` × :func:`gradient_scale` per unit
    moved (the KKT conditions up to a tolerance relative to the gradient's own precision, so that
    rescaling the features does not change the number of steps). Returns (α, number of active-set
    rounds + SMO pair steps); ``steps >= max_steps`` means the cap was hit.
    """
    m = len(b)
    alpha = np.zeros(m) if alpha is None else alpha.astype(float).copy()
    steps = 0
    if m > 0:
        exact = _active_set(G, b, np.asarray(group), np.asarray(C, dtype=float), alpha,
                            max_rounds=4 * m + 20 * len(C), rtol=tol)
        if exact is not None:
            alpha = exact
            steps += 1
    g = b - G @ alpha
    abs_tol = tol * gradient_scale(G, b, alpha)
    members = [np.flatnonzero(group == k) for k in range(len(C))]
    while steps < max_steps:
        best_gap, best = abs_tol, None
        for k, idx in enumerate(members):
            if len(idx) == 0:
                continue
            slack = max(0.0, C[k] - alpha[idx].sum())
            # the group's variables plus its unused budget (gradient 0, index -1)
            g_ext = np.append(g[idx], 0.0)
            donor = np.append(alpha[idx] > 0, slack > 1e-15 * C[k])
            up = int(np.argmax(g_ext))
            down_pool = np.flatnonzero(donor)
            if len(down_pool) == 0:
                continue
            down = int(down_pool[np.argmin(g_ext[down_pool])])
            gap = g_ext[up] - g_ext[down]
            if up != down and gap > best_gap:
                i = int(idx[up]) if up < len(idx) else -1
                j = int(idx[down]) if down < len(idx) else -1
                best_gap, best = gap, (i, j, slack)
        if best is None:
            break
        i, j, slack = best
        if i >= 0 and j >= 0:
            eta = G[i, i] + G[j, j] - 2 * G[i, j]
            limit = alpha[j]
            gain = g[i] - g[j]
        elif j < 0:                       # budget → i
            eta, limit, gain = G[i, i], slack, g[i]
        else:                             # j → budget
            eta, limit, gain = G[j, j], alpha[j], -g[j]
        t = limit if eta <= 1e-300 else min(limit, gain / eta)
        if t <= 0:
            break
        if i >= 0:
            alpha[i] += t
            g -= t * G[:, i]
        if j >= 0:
            alpha[j] -= t
            if alpha[j] < 1e-300:
                alpha[j] = 0.0
            g += t * G[:, j]
        steps += 1
        if steps % 1000 == 0:             # the scale grows with α; rounding drift in g is reset
            g = b - G @ alpha
            abs_tol = tol * gradient_scale(G, b, alpha)
    return alpha, steps
