"""1-slack cutting-plane training of a linear structural SVM (knows nothing of PyTerrier).

OP 1 of Yue et al. (2007), min ½‖w‖² + C/n Σ_i ξ_i subject to one constraint per query and wrong
ranking, is solved in its equivalent 1-slack form (Joachims, Finley & Yu, "Cutting-plane training of
structural SVMs", MLJ 2009, OP 4 / Algorithm 4):

    min ½‖w‖² + C ξ   s.t.   wᵀ a_c ≥ b_c − ξ  for every constraint c in the working set,

where one constraint aggregates the most violated ranking of every query,
a = 1/n Σ_i (Ψ(x_i, y_i) − Ψ(x_i, ŷ_i)), b = 1/n Σ_i Δ(y_i, ŷ_i). Each iteration asks the *oracle*
(:class:`DataOracle`: one pass over the data with the loss's exact argmax) for that constraint at the
current w, stops when it is violated by at most ε beyond the current ξ, and otherwise adds it and
re-solves the small dual QP (warm-started).

Several *slack groups* may share one w (SVM-COMBO with separate slacks, Chakrabarti et al. 2008 §3.7):
group k has its own loss, constant C_k and slack ξ_k, and the objective is ½‖w‖² + Σ_k C_k ξ_k.

The dual QP over the working set, max_α bᵀα − ½ αᵀGα with G = AAᵀ, α ≥ 0, Σ_{c∈k} α_c ≤ C_k,
is solved exactly by an active-set method (each group is a scaled simplex once a slack variable is
added), polished by SMO-style pair updates, both stopping at a tolerance relative to the scale at
which the gradient b − Gα is computed (so rescaling the features does not change the work).

The working set (:class:`_WorkingSet`) is incremental: A and G live in preallocated arrays whose
capacity doubles, a new constraint costs one row of G (O(m·dim)), ξ comes from the QP gradient
(b − Aw = b − Gα, O(m²) instead of O(m·dim)), and constraints whose multiplier stayed 0 for
``drop_after`` consecutive QP solves are removed, as svm_struct's 1-slack learner does (MLJ 2009
§4.1 keeps the working set small this way). Removing them is safe: the remaining α is still feasible
(it is the same point), so the reported dual value stays a valid lower bound of the full problem; the
exact oracle still sees every constraint, so the termination test (no constraint violated by more than
ε beyond ξ) and the bound primal − dual ≤ Σ_k C_k ε still hold.

Since the constraints do not depend on C, :func:`train_path` solves a grid of C in increasing order,
each C starting from the previous C's working set, multipliers (feasible: the budgets only grow) and w.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from .features import FeatureMatrix
from .losses.base import Loss

log = logging.getLogger(__name__)

#: default number of consecutive QP solves a constraint may keep α = 0 before it leaves the working
#: set (svm_struct's 1-slack learner uses 50); ``None`` or 0 keeps every constraint
DROP_AFTER = 50
#: default cap on the QP's SMO pair steps per solve
QP_MAX_STEPS = 200_000


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
    #: working_set (constraints), qp_steps, qp_capped (the QP hit its step cap), dropped
    #: (constraints removed so far), seconds (cumulative)
    history: List[dict] = field(default_factory=list)
    #: the C this result was trained at: the grid value for :func:`train_path`, the (first) group's
    #: constant for :func:`train_structural_svm`
    C: float = float("nan")
    #: the constant C_k of every slack group
    group_C: Optional[np.ndarray] = None
    #: wall-clock seconds spent on this C (for a path: this C's share)
    seconds: float = 0.0

    @property
    def n_iter(self) -> int:
        """Number of oracle calls (cutting-plane iterations) for this C."""
        return len(self.history)

    @property
    def duality_gap(self) -> float:
        """Primal − dual at termination; ≤ Σ_k C_k ε when converged (MLJ 2009, Thm. 3 / OP 4)."""
        return self.history[-1]["gap"] if self.history else float("nan")

    @property
    def primal(self) -> float:
        """The 1-slack objective ½‖w − w₀‖² + Σ_k C_k ξ_k(w) at the returned w (exact ξ, from the oracle)."""
        return self.history[-1]["primal"] if self.history else float("nan")

    @property
    def dual(self) -> float:
        """The dual value of the final working set: a lower bound of the optimal objective."""
        return self.history[-1]["dual"] if self.history else float("nan")


# ---------------------------------------------------------------------------------------------
# the oracle: one pass over the data
# ---------------------------------------------------------------------------------------------
class Oracle(Protocol):
    """The per-iteration pass over the data: the most violated 1-slack constraint of every group at w.

    ``oracle(w)`` returns one (a_k, b_k) per slack group with a_k = 1/n Σ_i (Ψ(x_i, y_i) − Ψ(x_i, ŷ_i))
    and b_k = 1/n Σ_i Δ_k(y_i, ŷ_i) for ŷ_i the loss-augmented argmax (MLJ 2009, Alg. 4, line 4).
    It must not depend on C. A distributed oracle sums per-shard contributions in a fixed order.
    """
    n_groups: int
    dim: int

    def __call__(self, w: np.ndarray) -> List[Tuple[np.ndarray, float]]: ...


class DataOracle:
    """The default oracle over in-memory data: φ (``X``), labels and query ``offsets``, one loss per group."""

    def __init__(self, X: FeatureMatrix, labels: np.ndarray, offsets: np.ndarray, losses: Sequence[Loss]):
        self.X = X
        self.labels = np.asarray(labels)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.losses = list(losses)
        self.n_queries = len(self.offsets) - 1
        if self.n_queries < 1:
            raise ValueError("no training queries")
        if not self.losses:
            raise ValueError("no slack groups given; pass e.g. make_slack_groups('map', 1.0)")
        self.n_groups = len(self.losses)
        self.dim = X.dim

    def __call__(self, w: np.ndarray) -> List[Tuple[np.ndarray, float]]:
        scores = self.X.dot(w)
        out = []
        for loss in self.losses:
            deltas, coef = loss.batch_violation(scores, self.labels, self.offsets)
            out.append((self.X.rdot(coef) / self.n_queries, float(deltas.mean())))
        return out


# ---------------------------------------------------------------------------------------------
# the dual QP
# ---------------------------------------------------------------------------------------------
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


def solve_dual(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray,
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


# ---------------------------------------------------------------------------------------------
# the working set
# ---------------------------------------------------------------------------------------------
class _WorkingSet:
    """The constraints of the 1-slack QP with their Gram matrix, multipliers and idle counts.

    Rows live in preallocated arrays whose capacity doubles (no per-iteration ``np.block``/``vstack``).
    ``b`` holds the constraints shifted for the prior, b_c − a_cᵀw₀ (constraints on v = w − w₀).
    """

    def __init__(self, dim: int, w0: np.ndarray, capacity: int = 16):
        self.dim, self.w0, self.m = dim, w0, 0
        self.A = np.zeros((capacity, dim))
        self.G = np.zeros((capacity, capacity))
        self.b = np.zeros(capacity)
        self.grp = np.zeros(capacity, dtype=np.int64)
        self.alpha = np.zeros(capacity)
        self.idle = np.zeros(capacity, dtype=np.int64)
        self.n_dropped = 0

    def _grow(self) -> None:
        cap = 2 * len(self.b)
        m = self.m
        A, G = np.zeros((cap, self.dim)), np.zeros((cap, cap))
        A[:m], G[:m, :m] = self.A[:m], self.G[:m, :m]
        self.A, self.G = A, G
        for name in ("b", "grp", "alpha", "idle"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[:m] = old[:m]
            setattr(self, name, new)

    def add(self, a: np.ndarray, b: float, k: int) -> None:
        """Append constraint aᵀw ≥ b − ξ_k with α = 0: one new row/column of G, O(m·dim)."""
        if self.m == len(self.b):
            self._grow()
        m = self.m
        row = self.A[:m] @ a
        self.G[m, :m] = row
        self.G[:m, m] = row
        self.G[m, m] = a @ a
        self.A[m] = a
        self.b[m] = b - float(a @ self.w0)
        self.grp[m], self.alpha[m], self.idle[m] = k, 0.0, 0
        self.m += 1

    def solve(self, C: np.ndarray, max_steps: int) -> int:
        """Re-solve the dual QP at constants C (warm start: the current α); returns the QP's steps."""
        m = self.m
        alpha, steps = solve_dual(self.G[:m, :m], self.b[:m], self.grp[:m], C, self.alpha[:m],
                                  max_steps=max_steps)
        self.alpha[:m] = alpha
        self.idle[:m] = np.where(alpha > 0, 0, self.idle[:m] + 1)
        return steps

    def drop_idle(self, after: int) -> int:
        """Remove the constraints whose α stayed 0 for ``after`` solves (never one with α > 0)."""
        m = self.m
        gone = (self.idle[:m] >= after) & (self.alpha[:m] <= 0)
        if not gone.any():
            return 0
        keep = np.flatnonzero(~gone)
        r = len(keep)
        self.A[:r] = self.A[keep]
        self.G[:r, :r] = self.G[np.ix_(keep, keep)]
        for arr in (self.b, self.grp, self.alpha, self.idle):
            arr[:r] = arr[keep]
        self.m = r
        self.n_dropped += m - r
        return m - r

    def v(self) -> np.ndarray:
        """v = w − w₀ = Aᵀα, over the support only."""
        pos = np.flatnonzero(self.alpha[:self.m] > 0)
        return self.A[pos].T @ self.alpha[pos] if len(pos) else np.zeros(self.dim)

    def xi(self, n_groups: int) -> np.ndarray:
        """ξ_k = max(0, max_{c∈k} b_c − a_cᵀw), from the QP gradient b − Gα (= b − Av): O(m·|support|)."""
        m = self.m
        xi = np.zeros(n_groups)
        if m:
            pos = np.flatnonzero(self.alpha[:m] > 0)
            slack = self.b[:m] - (self.G[:m, pos] @ self.alpha[pos] if len(pos) else 0.0)
            np.maximum.at(xi, self.grp[:m], slack)
        return xi

    def dual(self, v: np.ndarray) -> float:
        """The dual objective bᵀα − ½‖v‖² (a lower bound of the optimal primal value)."""
        return float(self.b[:self.m] @ self.alpha[:self.m] - 0.5 * v @ v)


# ---------------------------------------------------------------------------------------------
# the cutting-plane loop
# ---------------------------------------------------------------------------------------------
def _cutting_planes(oracle: Oracle, ws: _WorkingSet, C: np.ndarray, epsilon: float, max_iter: int,
                    drop_after: Optional[int], qp_max_steps: int) -> Tuple[np.ndarray, bool, List[dict]]:
    """MLJ 2009 Alg. 4 at constants C from the working set ``ws`` as it is (empty, or a warm start).

    A non-empty working set is first re-solved at C. Each iteration asks the oracle for every group's
    most violated constraint at w, records primal (exact, from the oracle), dual, gap and violation,
    stops when no group's constraint exceeds its ξ_k by more than ε, otherwise adds the violated ones,
    re-solves the QP and drops constraints idle for ``drop_after`` solves.
    """
    start = time.perf_counter()
    n_groups = len(C)
    qp_steps = ws.solve(C, qp_max_steps) if ws.m else 0
    v = ws.v()
    dual = ws.dual(v) if ws.m else 0.0
    history: List[dict] = []
    converged = False
    for iteration in range(1, max_iter + 1):
        w = ws.w0 + v
        cuts = oracle(w)
        xi = ws.xi(n_groups)
        viol = np.array([b_k - float(a_k @ w) - xi[k] for k, (a_k, b_k) in enumerate(cuts)])
        # objective of the full (1-slack) problem at w: the new constraints are the most violated
        primal = 0.5 * float(v @ v) + float(C @ np.maximum(xi, xi + viol))
        history.append(dict(iteration=iteration, primal=primal, dual=dual, gap=primal - dual,
                            violation=float(viol.max()), xi=float(xi.max()), working_set=ws.m,
                            qp_steps=qp_steps, qp_capped=qp_steps >= qp_max_steps,
                            dropped=ws.n_dropped, seconds=time.perf_counter() - start))
        log.debug("iteration %d: primal %.6g dual %.6g violation %.3g working set %d",
                  iteration, primal, dual, viol.max(), ws.m)
        if viol.max() <= epsilon:
            # with an exact QP, primal − dual ≤ Σ_k C_k ε follows (MLJ 2009 Thm. 3); a larger gap means
            # the QP could not be solved to the precision needed (features of extreme scale at this C)
            converged = history[-1]["gap"] <= _gap_bound(C, epsilon, primal)
            if not converged:
                log.warning("no constraint is violated by more than epsilon=%g, but the duality gap %.3g "
                            "exceeds sum(C)*epsilon=%.3g: the dual QP is numerically inaccurate at this "
                            "scale (max|G|=%.3g); normalise the features or lower C", epsilon,
                            history[-1]["gap"], float(C.sum() * epsilon), float(np.abs(np.diag(ws.G[:ws.m, :ws.m])).max(initial=0.0)))
            break
        for k in np.flatnonzero(viol > epsilon):
            ws.add(cuts[k][0], cuts[k][1], int(k))
        qp_steps = ws.solve(C, qp_max_steps)
        if qp_steps >= qp_max_steps:
            log.warning("the dual QP hit its step cap (%d) at iteration %d", qp_max_steps, iteration)
        if drop_after:
            ws.drop_idle(drop_after)
        v = ws.v()
        dual = ws.dual(v)
    return ws.w0 + v, converged, history


def _gap_bound(C: np.ndarray, epsilon: float, primal: float) -> float:
    """Σ_k C_k ε, the duality gap a converged 1-slack solve guarantees, plus rounding slack."""
    return float(C.sum() * epsilon) * (1 + 1e-6) + 1e-9 * max(1.0, abs(primal))


def _check_options(epsilon: float, max_iter: int, drop_after: Optional[int]) -> None:
    if not epsilon > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    if drop_after is not None and int(drop_after) < 0:
        raise ValueError(f"drop_after must be None, 0 (keep every constraint) or positive, got {drop_after}")


def _make_oracle(X, labels, offsets, groups: Sequence[SlackGroup], oracle: Optional[Oracle]) -> Oracle:
    """The given oracle (then X, labels, offsets must be None) or a :class:`DataOracle` of the arrays."""
    if oracle is not None:
        if X is not None or labels is not None or offsets is not None:
            raise ValueError("give either the data (X, labels, offsets) or an oracle, not both")
        if oracle.n_groups != len(groups):
            raise ValueError(f"the oracle has {oracle.n_groups} slack groups but {len(groups)} groups were given")
        return oracle
    if X is None or labels is None or offsets is None:
        raise ValueError("give the data (X, labels, offsets) or oracle=...")
    return DataOracle(X, labels, offsets, [g.loss for g in groups])


def _prior(prior: Optional[np.ndarray], dim: int) -> np.ndarray:
    w0 = np.zeros(dim) if prior is None else np.asarray(prior, dtype=float)
    if w0.shape != (dim,):
        raise ValueError(f"prior must be a weight vector of length {dim} (φ's dimension), got shape {w0.shape}")
    return w0


def train_structural_svm(X: Optional[FeatureMatrix], labels: Optional[np.ndarray],
                         offsets: Optional[np.ndarray], groups: Sequence[SlackGroup],
                         epsilon: float = 1e-3, max_iter: int = 1000, prior: Optional[np.ndarray] = None,
                         *, oracle: Optional[Oracle] = None, drop_after: Optional[int] = DROP_AFTER,
                         qp_max_steps: int = QP_MAX_STEPS) -> TrainingResult:
    """Train w on queries delimited by ``offsets`` with the 1-slack cutting-plane algorithm.

    ``X`` holds φ of every candidate, ``labels`` their relevance (> 0 relevant). Every query given
    must be able to form constraints (callers drop the others, with a warning). ``epsilon`` is the
    tolerance of Algorithm 1: training stops when no group's most violated constraint exceeds its ξ by
    more than ε (in units of the loss, e.g. AP points); then primal − dual ≤ Σ_k C_k ε.

    ``prior`` (optional, a weight vector w₀) replaces the regulariser by ½‖w − w₀‖² (biased
    regularisation): with v = w − w₀ every constraint wᵀa ≥ b − ξ reads vᵀa ≥ (b − w₀ᵀa) − ξ, so the
    same QP is solved for v. Small C then keeps the model near w₀ instead of near 0.

    Keyword-only: ``oracle`` replaces (X, labels, offsets) (pass those as None) by any
    :class:`Oracle`, e.g. a distributed one; ``drop_after`` (default :data:`DROP_AFTER` = 50, None/0 =
    never) removes constraints idle that many QP solves; ``qp_max_steps`` caps the QP's SMO steps.
    """
    _check_options(epsilon, max_iter, drop_after)
    C = np.array([g.C for g in groups], dtype=float)
    if len(C) == 0 or not (np.isfinite(C) & (C > 0)).all():
        raise ValueError(f"C must be positive, got {C.tolist()}")
    orc = _make_oracle(X, labels, offsets, groups, oracle)
    w0 = _prior(prior, orc.dim)
    start = time.perf_counter()
    w, converged, history = _cutting_planes(orc, _WorkingSet(orc.dim, w0), C, epsilon, int(max_iter),
                                            drop_after, qp_max_steps)
    if not converged:
        log.warning("cutting-plane training stopped after max_iter=%d iterations with violation %.3g > "
                    "epsilon=%g; raise max_iter or epsilon", max_iter, history[-1]["violation"], epsilon)
    return TrainingResult(w=w, converged=converged, history=history, C=float(C[0]), group_C=C,
                          seconds=time.perf_counter() - start)


def train_path(X: Optional[FeatureMatrix], labels: Optional[np.ndarray], offsets: Optional[np.ndarray],
               groups: Sequence[SlackGroup], C_grid: Sequence[float], epsilon: float = 1e-3,
               max_iter: int = 1000, prior: Optional[np.ndarray] = None, *, oracle: Optional[Oracle] = None,
               drop_after: Optional[int] = DROP_AFTER, qp_max_steps: int = QP_MAX_STEPS) -> List[TrainingResult]:
    """Train at every C of ``C_grid``, warm-starting each C from the next smaller one.

    ``groups`` are the slack groups built at C = 1 (``make_slack_groups(loss, 1.0, ...)``): group k's
    constant at grid value c is c · groups[k].C (e.g. SVM-COMBO's C_weights). The constraints of the
    1-slack problem (MLJ 2009 OP 4) do not depend on C, so the grid is solved in increasing C, each
    starting from the previous working set, multipliers α (still feasible: every budget Σ α ≤ c·C_k
    only grows) and w. Each result is converged to its own tolerance (primal − dual ≤ Σ_k c·C_k·ε)
    and records its ``C``; results come back in the order of ``C_grid``, ``max_iter`` applies to each C.
    Other arguments as in :func:`train_structural_svm`.
    """
    _check_options(epsilon, max_iter, drop_after)
    grid = np.asarray(C_grid, dtype=float).ravel()
    if len(grid) == 0 or not (np.isfinite(grid) & (grid > 0)).all():
        raise ValueError(f"C_grid must be positive numbers, got {list(np.asarray(C_grid).ravel())}")
    if len(np.unique(grid)) != len(grid):
        raise ValueError(f"C_grid has duplicates: {sorted(grid.tolist())}; give every C once")
    base = np.array([g.C for g in groups], dtype=float)
    if len(base) == 0 or not (np.isfinite(base) & (base > 0)).all():
        raise ValueError(f"the groups' constants (relative weights at C = 1) must be positive, got {base.tolist()}")
    orc = _make_oracle(X, labels, offsets, groups, oracle)
    ws = _WorkingSet(orc.dim, _prior(prior, orc.dim))
    results: List[Optional[TrainingResult]] = [None] * len(grid)
    for pos in np.argsort(grid):
        c = float(grid[pos])
        start = time.perf_counter()
        w, converged, history = _cutting_planes(orc, ws, c * base, epsilon, int(max_iter), drop_after,
                                                qp_max_steps)
        if not converged:
            log.warning("C=%g: cutting-plane training stopped after max_iter=%d iterations with violation "
                        "%.3g > epsilon=%g", c, max_iter, history[-1]["violation"], epsilon)
        results[pos] = TrainingResult(w=w, converged=converged, history=history, C=c, group_C=c * base,
                                      seconds=time.perf_counter() - start)
    return results  # type: ignore[return-value]
