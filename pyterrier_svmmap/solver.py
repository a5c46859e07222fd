"""1-slack cutting-plane training of a linear structural SVM (knows nothing of PyTerrier).

OP 1 of Yue et al. (2007), min ½‖w‖² + C/n Σ_i ξ_i subject to one constraint per query and wrong
ranking, is solved in its equivalent 1-slack form (Joachims, Finley & Yu, "Cutting-plane training of
structural SVMs", MLJ 2009, OP 4 / Algorithm 4):

    min ½‖w‖² + C ξ   s.t.   wᵀ a_c ≥ b_c − ξ  for every constraint c in the working set,

where one constraint aggregates the most violated ranking of every query,
a = 1/n Σ_i (Ψ(x_i, y_i) − Ψ(x_i, ŷ_i)), b = 1/n Σ_i Δ(y_i, ŷ_i). Each iteration finds ŷ_i for all
queries with the loss's exact argmax, stops when the new constraint is violated by at most ε beyond the
current ξ, and otherwise adds it and re-solves the small dual QP (warm-started).

Several *slack groups* may share one w (SVM-COMBO with separate slacks, Chakrabarti et al. 2008 §3.7):
group k has its own loss, constant C_k and slack ξ_k, and the objective is ½‖w‖² + Σ_k C_k ξ_k.

The dual QP over the working set, max_α bᵀα − ½ αᵀGα with G = AAᵀ, α ≥ 0, Σ_{c∈k} α_c ≤ C_k,
is solved exactly by an active-set method (each group is a scaled simplex once a slack variable is
added), polished by SMO-style pair updates.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .features import FeatureMatrix
from .losses.base import Loss

log = logging.getLogger(__name__)


@dataclass
class SlackGroup:
    """One loss with its own slack variable and regularisation constant."""
    loss: Loss
    C: float


@dataclass
class TrainingResult:
    """What training produced: the weights and a per-iteration record of the cutting-plane loop."""
    w: np.ndarray
    converged: bool
    #: one dict per iteration: iteration, primal, dual, gap, violation (per group, max), xi,
    #: working_set (constraints), qp_steps, seconds (cumulative)
    history: List[dict] = field(default_factory=list)

    @property
    def n_iter(self) -> int:
        return len(self.history)

    @property
    def duality_gap(self) -> float:
        return self.history[-1]["gap"] if self.history else float("nan")


# ---------------------------------------------------------------------------------------------
# the dual QP
# ---------------------------------------------------------------------------------------------
def _active_set(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray, alpha: np.ndarray,
                max_rounds: int) -> Optional[np.ndarray]:
    """Exact solve of the dual by a primal active-set method (Nocedal & Wright, Alg. 16.3).

    Each group k gets its unused budget s_k as an extra variable of zero curvature and zero gain, so the
    feasible set is a product of scaled simplices {x ≥ 0, Σ_{c∈k} x_c + s_k = C_k}. Each round solves
    the equality-constrained QP on the current support P (a small KKT system with one multiplier λ_k
    per group), steps towards it as far as x ≥ 0 allows and drops the variable that hits 0; once the
    support's solution is feasible it adds the outside variable whose gradient most exceeds its
    group's λ_k, or stops when none does (the KKT conditions). Returns None if it does not settle
    within ``max_rounds`` (the caller then falls back on SMO).
    """
    m, n_groups = len(b), len(C)
    H = np.zeros((m + n_groups, m + n_groups))
    H[:m, :m] = G
    c = np.concatenate([b, np.zeros(n_groups)])
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
    P = x > 0
    for _ in range(max_rounds):
        idx = np.flatnonzero(P)
        p = len(idx)
        E = (gid[idx][None, :] == np.arange(n_groups)[:, None]).astype(float)
        K = np.zeros((p + n_groups, p + n_groups))
        K[:p, :p] = H[np.ix_(idx, idx)]
        K[:p, p:] = E.T
        K[p:, :p] = E
        # symmetric equilibration: constraints of very different norms (e.g. φ_mrr next to φ_po
        # in a combo) make K too ill-conditioned for a plain solve
        d = np.ones(p + n_groups)
        diag = np.diag(K)[:p]
        d[:p][diag > 0] = 1.0 / np.sqrt(diag[diag > 0])
        row = np.abs(E * d[:p]).max(axis=1)
        d[p:] = 1.0 / np.where(row > 0, row, 1.0)
        sol = d * np.linalg.lstsq(K * np.outer(d, d), d * np.concatenate([c[idx], C]), rcond=None)[0]
        z, lam = sol[:p], sol[p:]
        if (z >= 0).all():
            x[:] = 0.0
            x[idx] = z
            out = np.flatnonzero(~P)
            if len(out) == 0:
                return x[:m]
            excess = (c[out] - H[out] @ x) - lam[gid[out]]
            j = int(np.argmax(excess))
            if excess[j] <= 1e-13 * max(1.0, abs(lam[gid[out[j]]])):
                return x[:m]
            P[out[j]] = True
            continue
        xi = x[idx]
        neg = z < 0
        ratios = xi[neg] / (xi[neg] - z[neg])
        t = ratios.min()
        x[idx] = xi + t * (z - xi)
        x[idx[neg][np.argmin(ratios)]] = 0.0
        x[x < 0] = 0.0
        P = x > 0
        if not P.any():
            return None
    return None


def solve_dual(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray,
               alpha: Optional[np.ndarray] = None, tol: float = 1e-12,
               max_steps: int = 200_000) -> Tuple[np.ndarray, int]:
    """Maximise bᵀα − ½αᵀGα s.t. α ≥ 0 and Σ_{c: group[c]=k} α_c ≤ C[k].

    An exact active-set solve (:func:`_active_set`) does nearly all the work, for one group (every
    single loss) or several (SVM-COMBO with separate slacks). Then, and on its own should the active
    set not settle, SMO: repeatedly move mass between the pair (i, j) of one group with
    the largest gradient gap g_i − g_j (j may be the group's unused budget, whose gradient is 0), by the
    exact line-search step, until no pair gains more than ``tol`` per unit moved (the KKT conditions up
    to ``tol``). Returns (α, number of active-set rounds + SMO pair steps).
    """
    m = len(b)
    alpha = np.zeros(m) if alpha is None else alpha.astype(float).copy()
    steps = 0
    if m > 0:
        exact = _active_set(G, b, np.asarray(group), np.asarray(C, dtype=float), alpha,
                            max_rounds=4 * m + 20 * len(C))
        if exact is not None:
            alpha = exact
            steps += 1
    g = b - G @ alpha
    members = [np.flatnonzero(group == k) for k in range(len(C))]
    while steps < max_steps:
        best_gap, best = tol, None
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
    return alpha, steps


# ---------------------------------------------------------------------------------------------
# the cutting-plane loop
# ---------------------------------------------------------------------------------------------
def train_structural_svm(X: FeatureMatrix, labels: np.ndarray, offsets: np.ndarray,
                         groups: Sequence[SlackGroup], epsilon: float = 1e-3,
                         max_iter: int = 1000, prior: Optional[np.ndarray] = None) -> TrainingResult:
    """Train w on queries delimited by ``offsets`` with the 1-slack cutting-plane algorithm.

    ``X`` holds φ of every candidate, ``labels`` their relevance (> 0 relevant). Every query given
    must be able to form constraints (callers drop the others, with a warning). ``epsilon`` is the
    tolerance of Algorithm 1: training stops when no group's most violated constraint exceeds its ξ by
    more than ε (in units of the loss, e.g. AP points).

    ``prior`` (optional, a weight vector w₀) replaces the regulariser by ½‖w − w₀‖² (biased
    regularisation): with v = w − w₀ every constraint wᵀa ≥ b − ξ reads vᵀa ≥ (b − w₀ᵀa) − ξ, so the
    same QP is solved for v. Small C then keeps the model near w₀ instead of near 0.
    """
    labels = np.asarray(labels)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_queries = len(offsets) - 1
    if n_queries < 1:
        raise ValueError("no training queries")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    C = np.array([g.C for g in groups], dtype=float)
    if (C <= 0).any():
        raise ValueError(f"C must be positive, got {C.tolist()}")

    dim = X.dim
    w0 = np.zeros(dim) if prior is None else np.asarray(prior, dtype=float)
    w = w0.copy()
    A = np.zeros((0, dim))
    b = np.zeros(0)
    grp = np.zeros(0, dtype=np.int64)
    G = np.zeros((0, 0))
    alpha = np.zeros(0)
    history: List[dict] = []
    start = time.perf_counter()
    converged = False
    qp_steps = 0
    dual = 0.0

    for iteration in range(1, max_iter + 1):
        scores = X.dot(w)
        new_a, new_b, viol, xi = [], [], [], []
        for k, group in enumerate(groups):
            deltas, coef = group.loss.batch_violation(scores, labels, offsets)
            a_k = X.rdot(coef) / n_queries
            b_k = float(deltas.mean())
            in_k = grp == k
            xi_k = max(0.0, float((b[in_k] - A[in_k] @ w).max())) if in_k.any() else 0.0
            new_a.append(a_k)
            new_b.append(b_k)
            xi.append(xi_k)
            viol.append(b_k - float(a_k @ w) - xi_k)
        # objective of the full (1-slack) problem at w: the new constraints are the most violated
        primal = 0.5 * float((w - w0) @ (w - w0)) + float(sum(C[k] * max(xi[k], xi[k] + viol[k]) for k in range(len(groups))))
        history.append(dict(iteration=iteration, primal=primal, dual=dual, gap=primal - dual,
                            violation=max(viol), xi=max(xi), working_set=len(b), qp_steps=qp_steps,
                            seconds=time.perf_counter() - start))
        log.debug("iteration %d: primal %.6g dual %.6g violation %.3g working set %d",
                  iteration, primal, dual, max(viol), len(b))
        if max(viol) <= epsilon:
            converged = True
            break
        add = [k for k in range(len(groups)) if viol[k] > epsilon]
        a_add = np.stack([new_a[k] for k in add])
        G = np.block([[G, A @ a_add.T], [a_add @ A.T, a_add @ a_add.T]])
        A = np.vstack([A, a_add])
        b = np.concatenate([b, [new_b[k] for k in add]])
        grp = np.concatenate([grp, add]).astype(np.int64)
        alpha = np.concatenate([alpha, np.zeros(len(add))])
        b_shifted = b - A @ w0                     # constraints on v = w − w₀
        alpha, qp_steps = solve_dual(G, b_shifted, grp, C, alpha)
        v = A.T @ alpha
        w = w0 + v
        dual = float(b_shifted @ alpha - 0.5 * v @ v)
    if not converged:
        log.warning("cutting-plane training stopped after max_iter=%d iterations with violation %.3g > "
                    "epsilon=%g; raise max_iter or epsilon", max_iter, history[-1]["violation"], epsilon)
    return TrainingResult(w=w, converged=converged, history=history)
