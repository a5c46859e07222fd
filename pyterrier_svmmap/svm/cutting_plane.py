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
is solved by :mod:`.qp` (an active-set method polished by SMO pair steps, :mod:`._qp_kernels`).

The working set (:class:`_WorkingSet`) is incremental: A and G live in preallocated arrays whose capacity
doubles, a new constraint costs one row of G (O(m·dim)), and constraints whose multiplier stayed 0 for
``drop_after`` consecutive QP solves are removed, as svm_struct's 1-slack learner does (MLJ 2009 §4.1). Removing
them is safe: the remaining α is still feasible (it is the same point), so the reported dual value stays a valid
lower bound of the full problem; the exact oracle still sees every constraint, so the termination test and the
bound primal − dual ≤ Σ_k C_k ε still hold. :func:`train_path` solves a grid of C, each warm-started from the
previous.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Protocol, Sequence, Tuple

import numpy as np

import pyterrier_svmmap.products as products
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.matrices import FeatureMatrix
from pyterrier_svmmap.svm.losses.base import Loss
from pyterrier_svmmap.svm.qp import QP_MAX_STEPS, compiled, solve_dual
from pyterrier_svmmap.svm.slack import SlackGroup

log = logging.getLogger(__name__)

#: default number of consecutive QP solves a constraint may keep α = 0 before it leaves the working
#: set (svm_struct's 1-slack learner uses 50); ``None`` or 0 keeps every constraint
DROP_AFTER = 50

#: consecutive dual-QP solves at the step cap after which a C's training stops: the QP cannot reach its
#: tolerance at this scale, and every further cut would be solved as inexactly
QP_CAP_PATIENCE = 2


@dataclass
class TrainingResult:
    """What training produced: the weights and a per-iteration record of the cutting-plane loop."""
    w: np.ndarray
    converged: bool
    #: one dict per iteration: iteration, primal, dual, gap, violation (gap / Σ_k C_k, ≤ ε once converged), xi,
    #: working_set (constraints), qp_steps, qp_capped (the QP hit its step cap), dropped (constraints removed so
    #: far), oracle_calls (passes over the data so far), seconds (cumulative)
    history: List[dict] = field(default_factory=list)
    #: the C this result was trained at: the grid value for :func:`train_path`, the (first) group's
    #: constant for :func:`train_structural_svm`
    C: float = float("nan")
    #: the constant C_k of every slack group
    group_C: Optional[np.ndarray] = None
    #: wall-clock seconds spent on this C (for a path: this C's share)
    seconds: float = 0.0
    #: why training stopped: ``"converged"`` (the duality gap is within Σ_k C_k ε), ``"max_iter"``, or
    #: ``"qp_inaccurate"`` (the dual QP could not be solved to its tolerance, or no constraint cut its model
    #: while the gap stayed above the bound: more iterations would not help)
    stop: str = "converged"
    #: dual-QP solves of this C that hit the step cap (the last of them may not be in ``history``: a C stops
    #: after :data:`QP_CAP_PATIENCE` of them in a row, before evaluating the QP's last solution)
    qp_capped_solves: int = 0
    #: the points this C's oracle calls evaluated, as (w, per-part sums), when the oracle keeps them
    #: (:class:`~.shared_cuts.PartsOracle`): a problem over other parts reads its constraints off them
    points: list = field(default_factory=list, repr=False)

    @property
    def n_iter(self) -> int:
        """Number of cutting-plane iterations (QP solves) for this C."""
        return len(self.history)

    @property
    def oracle_calls(self) -> int:
        """Number of passes over the data (oracle calls) for this C: one per iteration without the line
        search, one to three with it."""
        return int(self.history[-1]["oracle_calls"]) if self.history else 0

    def _last(key: str, doc: str) -> property:                       # noqa: N805 - a property factory
        return property(lambda self: self.history[-1][key] if self.history else float("nan"), doc=doc)

    duality_gap = _last("gap", "Primal − dual at termination; ≤ Σ_k C_k ε when converged (MLJ 2009, Thm. 3 / "
                               "OP 4).")
    primal = _last("primal", "The 1-slack objective ½‖w − w₀‖² + Σ_k C_k ξ_k(w) at the returned w (exact ξ, from "
                             "the oracle).")
    dual = _last("dual", "The dual value of the final working set: a lower bound of the optimal objective.")
    del _last


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


def shard_sums(X: FeatureMatrix, labels: np.ndarray, offsets: np.ndarray, w: np.ndarray,
               losses: Sequence[Loss]) -> List[Tuple[np.ndarray, float]]:
    """One shard's part of the oracle: per slack group (Σ_q Ψ coefficients as a φ vector, Σ_q Δ) of the most
    violated constraints of its queries at w (MLJ 2009 Alg. 4 line 4, before the 1/n). The one function
    every oracle runs per shard, in this process or on a Dask worker."""
    scores = X.dot(w)
    out = []
    for loss in losses:
        deltas, coef = loss.batch_violation(scores, labels, offsets)
        out.append((X.rdot(coef), float(deltas.sum())))
    return out


def many_shard_sums(shards: Sequence[tuple], w: np.ndarray, losses: Sequence[Loss]
                    ) -> List[List[Tuple[np.ndarray, float]]]:
    """:func:`shard_sums` of every (X, labels, offsets) shard, in shard order, on
    :func:`~pyterrier_svmmap.threads.current` threads; shards too small to be cut among them (fewer than ``threads ×
    MIN_PER_PIECE`` candidates on average) are spread instead, consecutive shards in groups of nearly equal
    candidates, one group per thread. Every shard's sums are the same either way (each is the same serial kernel),
    so the model does not depend on how the work was spread."""
    k = threads.current()
    sizes = np.array([len(ls) for _, ls, _ in shards], dtype=np.int64)
    if len(shards) < 2 or k < 2 or sizes.mean() >= k * threads.MIN_PER_PIECE:
        return [shard_sums(Xs, ls, os, w, losses) for Xs, ls, os in shards]
    bounds = threads.query_bounds(np.concatenate([[0], np.cumsum(sizes)]), min(k, len(shards)))

    def group(i: int) -> list:
        with threads.using(1):
            return [shard_sums(*shards[j], w, losses) for j in range(int(bounds[i]), int(bounds[i + 1]))]
    return [part for parts in threads.run(group, len(bounds) - 1) for part in parts]


def reduce_shard_sums(parts: Sequence[List[Tuple[np.ndarray, float]]], n_queries: int
                      ) -> List[Tuple[np.ndarray, float]]:
    """Per group (a, b) = (Σ_shards Σ Ψ, Σ_shards Σ Δ) / n, summed in shard order (0, 1, 2, ...): the same
    floating-point sums however the shards were computed, so that one process and a cluster take the
    same cutting-plane path (the line search's decisions and the argmax's ties depend on the last bit)."""
    return [(sum((p[k][0] for p in parts[1:]), parts[0][k][0]) / n_queries,
             sum((p[k][1] for p in parts[1:]), parts[0][k][1]) / n_queries) for k in range(len(parts[0]))]


class DataOracle:
    """The default oracle over in-memory data: φ (``X``), labels and query ``offsets``, one loss per group.

    ``shards`` (optional): a list of (X_s, labels_s, offsets_s), the data cut into whole-query shards, in
    place of (X, labels, offsets) (pass those as None). The sums are then taken shard by shard, in order,
    exactly as the Dask oracle (:class:`~pyterrier_svmmap.scale.dask.ShardOracle`) takes them, so that a
    fit in this process equals a cluster's bit for bit."""

    def __init__(self, X: Optional[FeatureMatrix], labels: Optional[np.ndarray], offsets: Optional[np.ndarray],
                 losses: Sequence[Loss], shards: Optional[Sequence[tuple]] = None):
        if shards is None:
            shards = [(X, labels, offsets)]
        elif X is not None or labels is not None or offsets is not None:
            raise ValueError("give either (X, labels, offsets) or shards, not both")
        self.shards = [(Xs, np.asarray(ls), np.asarray(os, dtype=np.int64)) for Xs, ls, os in shards]
        self.losses = list(losses)
        self.n_queries = sum(len(os) - 1 for _, _, os in self.shards)
        if not self.shards or self.n_queries < 1:
            raise ValueError("no training queries")
        if not self.losses:
            raise ValueError("no slack groups given; pass e.g. make_slack_groups('map', 1.0)")
        self.n_groups = len(self.losses)
        self.dim = self.shards[0][0].dim

    def __call__(self, w: np.ndarray) -> List[Tuple[np.ndarray, float]]:
        return reduce_shard_sums(many_shard_sums(self.shards, w, self.losses), self.n_queries)

# ---------------------------------------------------------------------------------------------
# the working set
# ---------------------------------------------------------------------------------------------
class _WorkingSet:
    """The constraints of the 1-slack QP with their Gram matrix, multipliers and idle counts; ``b`` holds them
    shifted for the prior, b_c − a_cᵀw₀ (constraints on v = w − w₀)."""

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
        cap, m = 2 * len(self.b), self.m
        G = np.zeros((cap, cap))
        G[:m, :m] = self.G[:m, :m]
        self.G = G
        for name in ("A", "b", "grp", "alpha", "idle"):
            old = getattr(self, name)
            setattr(self, name, np.zeros((cap,) + old.shape[1:], dtype=old.dtype))
            getattr(self, name)[:m] = old[:m]

    def add(self, a: np.ndarray, b: float, k: int) -> None:
        """Append constraint aᵀw ≥ b − ξ_k with α = 0: one new row/column of G, O(m·dim)."""
        if self.m == len(self.b):
            self._grow()
        m = self.m
        row = products.rows_dot(self.A[:m], a)
        self.G[m, :m] = row
        self.G[:m, m] = row
        self.G[m, m] = products.dot(a, a)
        self.A[m] = a
        self.b[m] = b - products.dot(a, self.w0)
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
        compiled().compact_working_set(self.G, self.A, keep)       # A[:r] = A[keep], G[:r, :r] = G[keep, keep]
        for arr in (self.b, self.grp, self.alpha, self.idle):
            arr[:r] = arr[keep]
        self.m = r
        self.n_dropped += m - r
        return m - r

    def v(self) -> np.ndarray:
        """v = w − w₀ = Aᵀα, over the support only."""
        pos = np.flatnonzero(self.alpha[:self.m] > 0)
        return products.weighted_rows(self.alpha[pos], self.A[pos]) if len(pos) else np.zeros(self.dim)

    def slack_at(self, v: np.ndarray, n_groups: int) -> np.ndarray:
        """The model's ξ_k at any v: max(0, max_{c∈k} b_c − a_cᵀv), O(m·dim)."""
        m = self.m
        xi = np.zeros(n_groups)
        if m:
            np.maximum.at(xi, self.grp[:m], self.b[:m] - products.rows_dot(self.A[:m], v))
        return xi

    def dual(self, v: np.ndarray) -> float:
        """The dual objective bᵀα − ½‖v‖² (a lower bound of the optimal primal value)."""
        return products.dot(self.b[:self.m], self.alpha[:self.m]) - 0.5 * products.dot(v, v)


# ---------------------------------------------------------------------------------------------
# the cutting-plane loop
# ---------------------------------------------------------------------------------------------
@dataclass
class _Point:
    """The exact 1-slack objective's ingredients at one v = w − w₀, from one oracle call: every group's
    most violated constraint (a_k, b_k) at w and its slack ξ_k(w) = max(0, b_k − a_kᵀw). None of it
    depends on C, so a point found at one C of a path is reused at the next."""
    v: np.ndarray
    cuts: List[Tuple[np.ndarray, float]]
    xi: np.ndarray

    def objective(self, C: np.ndarray) -> float:
        """F(v) = ½‖v‖² + Σ_k C_k ξ_k(w), the 1-slack primal objective (MLJ 2009 OP 4) at this point."""
        return 0.5 * products.dot(self.v, self.v) + float(C @ self.xi)

    def slope(self, d: np.ndarray, C: np.ndarray) -> float:
        """A directional derivative of F at this point along d: vᵀd − Σ_{k: ξ_k > 0} C_k a_kᵀd (the oracle's
        argmax gives one subgradient of each ξ_k)."""
        g = products.dot(self.v, d)
        for k, (a, _) in enumerate(self.cuts):
            if self.xi[k] > 0:
                g -= float(C[k] * products.dot(a, d))
        return g


def _evaluate(oracle: Oracle, w0: np.ndarray, v: np.ndarray) -> _Point:
    """One pass over the data at w = w₀ + v."""
    w = w0 + v
    cuts = oracle(w)
    xi = np.array([max(0.0, b - products.dot(a, w)) for a, b in cuts])
    return _Point(v, cuts, xi)


def _seed(ws: _WorkingSet, seeds: Sequence[Tuple[np.ndarray, list]], C: np.ndarray,
          best: Optional[_Point]) -> Optional[_Point]:
    """Add the constraints of ``seeds``, (w, this problem's exact constraints at w), to the working set; the
    best point among them and ``best`` (their objective is exact: they are points the oracle would return)."""
    for w, cuts in seeds:
        xi = np.array([max(0.0, b - products.dot(a, w)) for a, b in cuts])
        p = _Point(np.asarray(w, dtype=float) - ws.w0, cuts, xi)
        _add_cuts(ws, p)
        if best is None or p.objective(C) < best.objective(C):
            best = p
    return best


def _add_cuts(ws: _WorkingSet, p: _Point) -> int:
    """Add the point's constraints that cut the working set's model at the point: b_k − a_kᵀw above the
    model's ξ_k there (a constraint that does not is implied there and only enlarges the QP)."""
    model = ws.slack_at(p.v, len(p.cuts))
    added = 0
    for k, (a, b) in enumerate(p.cuts):
        if p.xi[k] > model[k] + 1e-12 * max(1.0, abs(b)):
            ws.add(a, b, k)
            added += 1
    return added


#: relative changes below this are rounding: the line search's decisions ignore them, so that a run whose
#: sums are taken in another order (a sharded oracle) makes the same decisions
_ROUNDING = 1e-12

#: at most this many iterations are run without a search after searches that were wasted in a row
_MAX_BACKOFF = 16

#: oracle calls of the line search per iteration besides the one at the QP's solution (the number that needs the
#: fewest passes over the data in all: docs/performance.md)
LINE_SEARCH_STEPS = 2


def _line_search(oracle: Oracle, w0: np.ndarray, best: _Point, p1: _Point, C: np.ndarray) -> List[_Point]:
    """The points evaluated on the segment from ``best`` (t = 0) to the QP's solution ``p1`` (t = 1, already
    evaluated): if the objective rises before t = 1, :data:`LINE_SEARCH_STEPS` secant steps on the slope
    bracketing its minimum (Franc & Sonnenburg's OCAS, JMLR 2009, with an inexact search since the slope
    of a structural risk is only known point by point). Every point's constraints are valid cuts."""
    d = p1.v - best.v
    points: List[_Point] = []
    lo, g_lo, hi, g_hi = 0.0, best.slope(d, C), 1.0, p1.slope(d, C)
    if not (g_lo < 0 < g_hi):
        return points
    for _ in range(LINE_SEARCH_STEPS):
        t = lo - g_lo * (hi - lo) / (g_hi - g_lo)
        t = min(max(t, lo + 0.05 * (hi - lo)), hi - 0.05 * (hi - lo))
        p = _evaluate(oracle, w0, best.v + t * d)
        points.append(p)
        g = p.slope(d, C)
        if abs(g) <= _ROUNDING * (abs(g_lo) + abs(g_hi)):
            break                                  # the minimum, up to rounding
        if g > 0:
            hi, g_hi = t, g
        else:
            lo, g_lo = t, g
    return points


def _cutting_planes_ls(oracle: Oracle, ws: _WorkingSet, C: np.ndarray, epsilon: float, max_iter: int,
                       drop_after: Optional[int], qp_max_steps: int, start: Optional[_Point] = None
                       ) -> Tuple[TrainingResult, _Point]:
    """Cutting planes with a line search (OCAS; Franc & Sonnenburg, JMLR 2009) at constants C.

    The plain loop (MLJ 2009 Alg. 4, svm_struct's; ``tests/oracles/plain_cutting_planes.py``) asks the oracle at
    the QP's solution v_c only; at large C the model's minimiser jumps far from the true objective's, and that
    loop needs hundreds of iterations. Here the loop also keeps the best
    point found so far, v_b (exact objective F known from its oracle call), searches the segment
    v_b → v_c (:func:`_line_search`), moves v_b to the best point seen, and adds every evaluated point's
    constraints to the working set, so that the model becomes exact where the optimum is. It stops, as
    the plain loop, when the QP's solution is certified: F(v_c) − D ≤ Σ_k C_k ε, D the QP's dual value (a
    lower bound of the optimum; for one group this *is* the plain test "violation ≤ ε"), and returns v_c
    — never v_b, which may be the trivial start w = w₀ while still within Σ_k C_k ε of the optimum (at
    small C it is, and with w = 0 every score ties). ``start`` is the best point of a previous C (its
    constraints and ξ do not depend on C). Returns (the result, its C unset, the point to start the next C
    from); a history entry's ``violation`` is the gap per unit of C, (F − D) / Σ_k C_k, ≤ ε once converged.
    """
    t0 = time.perf_counter()
    calls = 0
    if start is None:
        start = _evaluate(oracle, ws.w0, np.zeros(ws.dim))
        calls += 1
    best = start
    _add_cuts(ws, best)
    qp_steps = ws.solve(C, qp_max_steps) if ws.m else 0
    history: List[dict] = []
    converged, stop, capped, n_capped = False, "max_iter", 0, int(qp_steps >= qp_max_steps)
    current = best
    skip, backoff = 0, 1                  # iterations left without a search; the next wasted search's skip
    for iteration in range(1, max_iter + 1):
        v_c = ws.v()
        dual = ws.dual(v_c)
        if not np.array_equal(v_c, current.v):   # else the QP did not move (e.g. a flat first cut): known
            current = _evaluate(oracle, ws.w0, v_c)
            calls += 1
        primal = current.objective(C)
        gap = primal - dual
        history.append(dict(iteration=iteration, primal=primal, dual=dual, gap=gap,
                            violation=gap / float(C.sum()), xi=float(current.xi.max(initial=0.0)),
                            working_set=ws.m, qp_steps=qp_steps, qp_capped=qp_steps >= qp_max_steps,
                            dropped=ws.n_dropped, oracle_calls=calls, seconds=time.perf_counter() - t0))
        log.debug("iteration %d: primal %.6g dual %.6g gap %.3g working set %d", iteration, primal, dual, gap, ws.m)
        if gap <= _gap_bound(C, epsilon, primal):
            converged, stop = True, "converged"
            break
        if skip:
            skip -= 1
            extra: List[_Point] = []
        else:
            extra = _line_search(oracle, ws.w0, best, current, C)
            calls += len(extra)
        previous = best
        for p in [current] + extra:
            # a move must gain beyond rounding, so that sums taken in another order (shards) take the same path
            if p.objective(C) < best.objective(C) - _ROUNDING * abs(best.objective(C)):
                best = p
        added = _add_cuts(ws, current)
        added_by_search = sum(_add_cuts(ws, p) for p in extra)
        if extra:
            # a search that neither cut the model nor moved the best point was wasted passes (losses whose
            # argmax is constant along the segment, such as cut-off NDCG and MRR): back off
            if added_by_search or any(best is p for p in extra):
                backoff = 1
            else:
                skip, backoff = backoff, min(2 * backoff, _MAX_BACKOFF)
        if added + added_by_search == 0 and best is previous:
            # no constraint cuts the model and v_b did not move: the next iteration would repeat this
            # one (the QP is at its precision limit, the plain loop's "gap above the bound" case)
            stop = "qp_inaccurate"
            break
        qp_steps = ws.solve(C, qp_max_steps)
        capped = capped + 1 if qp_steps >= qp_max_steps else 0
        n_capped += int(qp_steps >= qp_max_steps)
        if capped >= QP_CAP_PATIENCE:
            stop = "qp_inaccurate"
            break
        if drop_after:
            ws.drop_idle(drop_after)
    result = TrainingResult(w=ws.w0 + current.v, converged=converged, history=history, group_C=C,
                            seconds=time.perf_counter() - t0, stop=stop, qp_capped_solves=n_capped)
    return result, current if current.objective(C) <= best.objective(C) else best


def not_converged_reason(result: "TrainingResult", epsilon: float, max_iter: int) -> str:
    """Why ``result`` stopped before its duality gap reached Σ_k C_k ε, with the gap, in one sentence ("" when
    it converged)."""
    if result.converged:
        return ""
    gap, bound = result.duality_gap, float(np.sum(result.group_C) * epsilon)
    if result.stop == "max_iter":
        why = f"max_iter={max_iter} iterations were not enough (raise max_iter or epsilon)"
    else:
        capped = result.qp_capped_solves
        why = ("the dual QP could not be solved to its tolerance at this scale"
               + (f" ({capped} of its solves hit the step cap)" if capped else "")
               + ", so more iterations would not help (lower C, or put the features on a common scale)")
    return (f"C={result.C:g} stopped after {result.n_iter} iterations with duality gap {gap:.3g} above "
            f"sum(C)*epsilon={bound:.3g}: {why}")


def _warn_not_converged(result: "TrainingResult", epsilon: float, max_iter: int) -> None:
    """One warning for a C whose training stopped before the duality gap reached its bound
    (:func:`not_converged_reason`); the model is the last iterate."""
    if not result.converged:
        log.warning("%s; the model is the last iterate", not_converged_reason(result, epsilon, max_iter))


def _gap_bound(C: np.ndarray, epsilon: float, primal: float) -> float:
    """Σ_k C_k ε, the duality gap a converged 1-slack solve guarantees, plus rounding slack."""
    return float(C.sum() * epsilon) * (1 + 1e-6) + 1e-9 * abs(primal)


def _positive(values, what: str) -> np.ndarray:
    """``values`` as a vector of floats; ValueError unless there are some and all are finite and positive."""
    a = np.asarray(values, dtype=float).ravel()
    if len(a) == 0 or not (np.isfinite(a) & (a > 0)).all():
        raise ValueError(f"{what} must be positive numbers, got {a.tolist()}")
    return a


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
    never) removes constraints idle that many QP solves; ``qp_max_steps`` caps the QP's SMO steps. The loop
    (:func:`_cutting_planes_ls`, Algorithm 4 with a line search) returns a w whose duality gap is ≤ Σ_k C_k ε.
    """
    result, = train_path(X, labels, offsets, groups, [1.0], epsilon, max_iter, prior, oracle=oracle,
                         drop_after=drop_after, qp_max_steps=qp_max_steps, warn=False)      # a path of one C
    result.C = float(groups[0].C)
    _warn_not_converged(result, epsilon, max_iter)
    return result


def train_path(X: Optional[FeatureMatrix], labels: Optional[np.ndarray], offsets: Optional[np.ndarray],
               groups: Sequence[SlackGroup], C_grid: Sequence[float], epsilon: float = 1e-3,
               max_iter: int = 1000, prior: Optional[np.ndarray] = None, *, oracle: Optional[Oracle] = None,
               drop_after: Optional[int] = DROP_AFTER, qp_max_steps: int = QP_MAX_STEPS,
               on_result: Optional[Callable[[TrainingResult], None]] = None, warn: bool = True,
               seeds: Optional[Sequence[Sequence[Tuple[np.ndarray, list]]]] = None) -> List[TrainingResult]:
    """Train at every C of ``C_grid``, warm-starting each C from the next smaller one.

    ``groups`` are the slack groups built at C = 1 (``make_slack_groups(loss, 1.0, ...)``): group k's
    constant at grid value c is c · groups[k].C (e.g. SVM-COMBO's C_weights). The constraints of the
    1-slack problem (MLJ 2009 OP 4) do not depend on C, so the grid is solved in increasing C, each
    starting from the previous working set, multipliers α (still feasible: every budget Σ α ≤ c·C_k
    only grows) and w (the previous C's best point, whose ξ and constraints do not depend on C, so the next
    C starts without an extra pass over the data). Each result is converged to its own tolerance (primal − dual ≤ Σ_k c·C_k·ε)
    and records its ``C``; results come back in the order of ``C_grid``, ``max_iter`` applies to each C.
    ``on_result`` is called with each result as soon as its C is trained (progress reports). A C whose
    training stops before the gap bound holds (:attr:`TrainingResult.stop`) is logged as a warning, unless
    ``warn=False`` (a caller that reports such results itself, once). ``seeds[i]`` (optional, one list per C of
    ``C_grid``): points (w, this problem's exact constraints at w) that another problem over the same queries
    found (:func:`~.shared_cuts.restrict_points`), added before C_grid[i] is solved; each C still stops only when
    its own oracle certifies the gap. Other arguments as in :func:`train_structural_svm`.
    """
    grid = _positive(C_grid, "C_grid")
    if len(np.unique(grid)) != len(grid):
        raise ValueError(f"C_grid has duplicates: {sorted(grid.tolist())}; give every C once")
    base = _positive([g.C for g in groups], "the groups' constants (relative weights at C = 1)")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    if drop_after is not None and int(drop_after) < 0:
        raise ValueError(f"drop_after must be None, 0 (keep every constraint) or positive, got {drop_after}")
    if oracle is not None:
        if X is not None or labels is not None or offsets is not None:
            raise ValueError("give either the data (X, labels, offsets) or an oracle, not both")
        if oracle.n_groups != len(groups):
            raise ValueError(f"the oracle has {oracle.n_groups} slack groups but {len(groups)} groups were given")
    elif X is None or labels is None or offsets is None:
        raise ValueError("give the data (X, labels, offsets) or oracle=...")
    else:
        oracle = DataOracle(X, labels, offsets, [g.loss for g in groups])
    if seeds is not None and len(seeds) != len(grid):
        raise ValueError(f"seeds must hold one list of points per C ({len(grid)}), got {len(seeds)}")
    w0 = np.zeros(oracle.dim) if prior is None else np.asarray(prior, dtype=float)
    if w0.shape != (oracle.dim,):
        raise ValueError(f"prior must be a weight vector of length {oracle.dim} (φ's dimension), got shape "
                         f"{w0.shape}")
    ws = _WorkingSet(oracle.dim, w0)
    results: List[Optional[TrainingResult]] = [None] * len(grid)
    best: Optional[_Point] = None
    for pos in np.argsort(grid):
        if seeds is not None:
            best = _seed(ws, seeds[pos], grid[pos] * base, best)
        results[pos], best = _cutting_planes_ls(oracle, ws, grid[pos] * base, epsilon, int(max_iter), drop_after,
                                                qp_max_steps, start=best)
        results[pos].C = float(grid[pos])
        if hasattr(oracle, "take_points"):                # an oracle that keeps its points (PartsOracle)
            results[pos].points = oracle.take_points()
        if warn:
            _warn_not_converged(results[pos], epsilon, max_iter)
        if on_result is not None:
            on_result(results[pos])
    return results  # type: ignore[return-value]
