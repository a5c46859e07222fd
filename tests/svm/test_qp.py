"""The dual QP (:mod:`pyterrier_svmmap.svm.qp`): the compiled solver against the numpy reference implementation
(``oracles/qp_reference.py``), both against the KKT conditions, and against independent solvers on tiny instances."""
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

import pyterrier_svmmap.svm.qp as qp
from tests.oracles.qp_reference import gradient_scale, solve_dual_reference

TOL = 1e-13                     # solve_dual's default: no pair may gain more than TOL × gradient scale


def _jit():
    return qp.compiled()


def fast(G, b, grp, C, alpha=None, factor=True, max_steps=qp.QP_MAX_STEPS):
    """The compiled solve as qp.solve_dual calls it (``factor=False``: its dense rounds only)."""
    jit = _jit()
    start = np.zeros(len(b)) if alpha is None else np.array(alpha, dtype=float)
    return jit.solve_dual(np.ascontiguousarray(G, dtype=float), np.ascontiguousarray(b, dtype=float),
                          np.ascontiguousarray(grp, dtype=np.int64), np.ascontiguousarray(C, dtype=float),
                          start, TOL, max_steps, factor)


def objective(G, b, alpha):
    return float(b @ alpha - 0.5 * alpha @ G @ alpha)


def kkt_violation(G, b, grp, C, alpha):
    """(largest pair gain / gradient scale, worst budget excess / C_k, most negative α): SMO's test
    with the budget as a variable of gradient 0 in every group."""
    g = b - G @ alpha
    gap = 0.0
    over = 0.0
    for k in range(len(C)):
        idx = np.flatnonzero(grp == k)
        if len(idx) == 0:
            continue
        used = alpha[idx].sum()
        over = max(over, (used - C[k]) / C[k])
        up = max(g[idx].max(), 0.0)
        donors = list(g[idx][alpha[idx] > 0])
        if C[k] - used > 1e-15 * C[k]:
            donors.append(0.0)
        if donors:
            gap = max(gap, up - min(donors))
    return gap / gradient_scale(G, b, alpha), over, float(alpha.min()) if len(alpha) else 0.0


def instance(rng, m, d, n_groups, scale=1.0, dup=0, ratio=None):
    """A working set: m constraints of dimension d (d < m: singular G), ``dup`` repeated rows,
    feature scale ``scale``, budgets C (with ``ratio`` the third group's budget is ratio × the first's,
    as SVM-COMBO's C_weights 1e-8)."""
    A = rng.normal(size=(m, d)) * scale
    A[:, 0] += scale                                   # constraints of one sign, as ranking feature differences
    if dup and m > 1:
        src = rng.integers(0, m, dup)
        dst = rng.integers(0, m, dup)
        A[dst] = A[src]
    b = rng.uniform(-0.1, 1.0, m)
    G = A @ A.T
    grp = rng.integers(0, n_groups, m)
    C = rng.uniform(0.1, 10, n_groups) / scale ** 2 * rng.choice([0.01, 1, 100])
    if ratio is not None and n_groups >= 3:
        C[2] = C[0] * ratio
    return G, b, grp, C


def warm_start(rng, kind, m, grp, C):
    if kind == "zero":
        return None
    alpha = rng.uniform(0, 1, m) * (rng.uniform(size=m) < 0.4)
    if kind == "feasible":
        for k in range(len(C)):
            s = alpha[grp == k].sum()
            if s > 0:
                alpha[grp == k] *= rng.uniform(0.2, 1.0) * C[k] / s
    else:                                               # "scaled": far over the budgets
        alpha *= 1e3 * C.max()
    return alpha


CASES = [(seed, n_groups, m, d, scale, dup, ratio, kind)
         for seed, (n_groups, m, d, scale, dup, ratio, kind) in enumerate([
             (1, 1, 3, 1.0, 0, None, "zero"),
             (1, 2, 5, 1.0, 1, None, "feasible"),
             (1, 5, 2, 1.0, 0, None, "scaled"),
             (1, 12, 40, 1e-6, 0, None, "feasible"),
             (1, 12, 4, 1e6, 3, None, "zero"),
             (1, 40, 10, 1.0, 5, None, "feasible"),
             (1, 60, 200, 1e3, 0, None, "scaled"),
             (1, 120, 30, 1.0, 10, None, "feasible"),
             (1, 150, 400, 1e-3, 0, None, "zero"),
             (1, 300, 60, 1.0, 20, None, "feasible"),
             (1, 280, 600, 1.0, 0, None, "feasible"),
             (3, 3, 2, 1.0, 0, 1e-8, "zero"),
             (3, 8, 20, 1.0, 2, 1e-8, "feasible"),
             (3, 30, 8, 1e-4, 0, 1e-8, "scaled"),
             (3, 60, 100, 1e4, 4, 1e-8, "feasible"),
             (3, 100, 25, 1.0, 0, None, "zero"),
             (3, 200, 300, 1.0, 10, 1e-8, "feasible"),
             (3, 300, 50, 1e2, 0, 1e-8, "scaled"),
         ])]


@pytest.mark.parametrize("seed,n_groups,m,d,scale,dup,ratio,kind", CASES)
def test_fast_path_matches_the_reference(seed, n_groups, m, d, scale, dup, ratio, kind):
    rng = np.random.default_rng(seed)
    G, b, grp, C = instance(rng, m, d, n_groups, scale, dup, ratio)
    alpha0 = warm_start(rng, kind, m, grp, C)
    ref, _ = solve_dual_reference(G, b, grp, C, alpha0)
    for factor in (True, False):
        got, steps = fast(G, b, grp, C, alpha0, factor=factor)
        assert steps < qp.QP_MAX_STEPS
        f_ref, f_got = objective(G, b, ref), objective(G, b, got)
        assert abs(f_got - f_ref) <= 1e-10 * max(abs(f_ref), 1e-300), (factor, f_got, f_ref)
        for alpha in (ref, got):
            gap, over, low = kkt_violation(G, b, grp, C, alpha)
            assert low >= 0 and over <= 1e-12 and gap <= 10 * TOL, (factor, gap, over, low)


@pytest.mark.parametrize("n_groups", [1, 3])
@pytest.mark.parametrize("d", [5, 80])
def test_cutting_plane_sequence_warm_started(n_groups, d):
    """As the solver calls it: the working set grows by one constraint a call, warm-started from the
    previous solution (feasible, optimal for all but the new constraint); C grows along a path."""
    rng = np.random.default_rng(d + n_groups)
    G, b, grp, C = instance(rng, 120, d, n_groups, ratio=1e-8)
    a_ref = a_fast = np.zeros(0)
    worst = 0.0
    for m in range(1, 121):
        Cm = C * (10.0 if m > 60 else 1.0)
        sl = slice(0, m)
        a_ref, _ = solve_dual_reference(G[sl, sl], b[sl], grp[sl], Cm, np.append(a_ref, 0.0))
        a_fast, _ = fast(G[sl, sl], b[sl], grp[sl], Cm, np.append(a_fast, 0.0))
        f_ref, f_fast = objective(G[sl, sl], b[sl], a_ref), objective(G[sl, sl], b[sl], a_fast)
        worst = max(worst, abs(f_fast - f_ref) / max(abs(f_ref), 1e-300))
        assert kkt_violation(G[sl, sl], b[sl], grp[sl], Cm, a_fast)[0] <= 10 * TOL
    assert worst <= 1e-10, worst


def _enumerate_supports(G, b, grp, C):
    """The optimum of a tiny QP with positive definite G by trying every support and every choice of
    tight budgets: each face's KKT system solved directly, the best feasible point kept."""
    m, n_groups = len(b), len(C)
    best = 0.0                                          # α = 0 is feasible
    for size in range(1, m + 1):
        for support in itertools.combinations(range(m), size):
            S = np.array(support)
            groups = sorted(set(grp[S]))
            for tight in itertools.product([False, True], repeat=len(groups)):
                T = [k for k, t in zip(groups, tight) if t]
                E = np.array([(grp[S] == k).astype(float) for k in T]).reshape(len(T), len(S))
                K = np.block([[G[np.ix_(S, S)], E.T], [E, np.zeros((len(T), len(T)))]])
                rhs = np.concatenate([b[S], C[T]])
                try:
                    z = np.linalg.solve(K, rhs)
                except np.linalg.LinAlgError:
                    continue
                alpha = np.zeros(m)
                alpha[S] = z[:len(S)]
                if (alpha < -1e-12).any() or any(alpha[grp == k].sum() > C[k] * (1 + 1e-12) for k in range(n_groups)):
                    continue
                best = max(best, objective(G, b, np.maximum(alpha, 0)))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_tiny_instances_against_enumeration_and_slsqp(seed):
    rng = np.random.default_rng(100 + seed)
    n_groups = 1 if seed % 2 else 2
    m = int(rng.integers(1, 6))
    G, b, grp, C = instance(rng, m, m + 2, n_groups)        # d > m: G positive definite
    f_enum = _enumerate_supports(G, b, grp, C)
    cons = [{"type": "ineq", "fun": (lambda a, k=k: C[k] - a[grp == k].sum())} for k in range(n_groups)]
    r = minimize(lambda a: -(b @ a - 0.5 * a @ G @ a), np.full(m, 1e-3), jac=lambda a: -(b - G @ a),
                 bounds=[(0, None)] * m, constraints=cons, method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
    for solve in (solve_dual_reference, fast):
        f = objective(G, b, solve(G, b, grp, C)[0])
        assert abs(f - f_enum) <= 1e-10 * max(abs(f_enum), 1e-12), (f, f_enum)
        assert f >= -r.fun - 1e-9 * max(abs(r.fun), 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_singular_tiny_instances_against_slsqp(seed):
    rng = np.random.default_rng(200 + seed)
    G, b, grp, C = instance(rng, 5, 2, 1 + seed % 2 * 2, dup=1)
    cons = [{"type": "ineq", "fun": (lambda a, k=k: C[k] - a[grp == k].sum())} for k in range(len(C))]
    r = minimize(lambda a: -(b @ a - 0.5 * a @ G @ a), np.full(5, 1e-3), jac=lambda a: -(b - G @ a),
                 bounds=[(0, None)] * 5, constraints=cons, method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
    for solve in (solve_dual_reference, fast):
        f = objective(G, b, solve(G, b, grp, C)[0])
        assert abs(f + r.fun) <= 1e-7 * max(abs(r.fun), 1e-12)


def test_rescaling_does_not_change_the_solution_or_the_work():
    """Tolerances are relative to the gradient scale: f → λ f (b and G by λ) has the same α and about
    the same steps (an SMO polish step more or less from rounding, not thousands up to the cap)."""
    rng = np.random.default_rng(7)
    G, b, grp, C = instance(rng, 80, 20, 1, dup=3)
    a1, s1 = fast(G, b, grp, C)
    for lam in (1e-6, 1e6):
        a2, s2 = fast(lam * G, lam * b, grp, C)
        assert abs(s2 - s1) <= 2
        np.testing.assert_allclose(a2, a1, rtol=1e-9, atol=1e-12 * C.max())


def test_solve_dual_keeps_its_contract():
    """solve_dual: does not modify the warm start, accepts a strided view (the working set's G[:m, :m])
    and any integer group dtype, and honours the step cap."""
    rng = np.random.default_rng(3)
    G, b, grp, C = instance(rng, 30, 10, 3, ratio=1e-8)
    big = np.zeros((64, 64))
    big[:30, :30] = G
    warm = warm_start(rng, "feasible", 30, grp, C)
    keep = warm.copy()
    alpha, steps = qp.solve_dual(big[:30, :30], b, grp.astype(np.int32), list(C), warm)
    np.testing.assert_array_equal(warm, keep)
    ref, _ = solve_dual_reference(G, b, grp, C, warm)
    assert abs(objective(G, b, alpha) - objective(G, b, ref)) <= 1e-10 * abs(objective(G, b, ref))
    assert qp.solve_dual(G[:0, :0], b[:0], grp[:0], C)[0].shape == (0,)


@pytest.mark.parametrize("n_groups,m,d", [(1, 60, 200), (1, 200, 400), (3, 80, 150)])
def test_factor_rounds_settle_on_regular_instances(n_groups, m, d):
    """On positive definite G the updated-Cholesky rounds alone must reach the optimum (no dense
    retry, no SMO polish): the safety nets would otherwise hide an error of the fast path. (Budgets of
    ratio 1e-8 are left out here: there the rounds may end with the tiny group off its KKT point by
    an objective change of ~1e-9 relative, which solve_dual's SMO polish then removes.)"""
    jit = _jit()
    rng = np.random.default_rng(m + d)
    G, b, grp, C = instance(rng, m, d, n_groups)
    alpha0 = warm_start(rng, "feasible", m, grp, C)
    x, settled = jit.active_set(G, b, grp.astype(np.int64), C, alpha0.copy(), 4 * m + 20 * n_groups, TOL, True)
    assert settled
    ref, _ = solve_dual_reference(G, b, grp, C, alpha0)
    assert abs(objective(G, b, x) - objective(G, b, ref)) <= 1e-10 * abs(objective(G, b, ref))
    assert kkt_violation(G, b, grp, C, x)[0] <= 10 * TOL
