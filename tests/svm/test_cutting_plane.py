"""The dual QP solver and the cutting-plane loop."""
import numpy as np
import pytest
from scipy.optimize import minimize

from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.svm.losses import get_loss
from pyterrier_svmmap.svm.cutting_plane import SlackGroup, solve_dual, train_structural_svm


def _reference(G, b, grp, C):
    m = len(b)
    cons = [{"type": "ineq", "fun": (lambda a, k=k: C[k] - a[grp == k].sum())} for k in range(len(C))]
    r = minimize(lambda a: -(b @ a - 0.5 * a @ G @ a), np.full(m, 1e-3), jac=lambda a: -(b - G @ a),
                 bounds=[(0, None)] * m, constraints=cons, method="SLSQP",
                 options={"ftol": 1e-15, "maxiter": 2000})
    return -r.fun


@pytest.mark.parametrize("n_groups", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_solve_dual_matches_a_generic_qp_solver(n_groups, seed):
    rng = np.random.default_rng(seed)
    m, d = rng.integers(3, 25), rng.integers(2, 30)       # d < m: singular Gram matrices too
    A = rng.normal(size=(m, d))
    b = rng.uniform(0, 1, m)
    G = A @ A.T
    grp = rng.integers(0, n_groups, m)
    C = rng.uniform(0.1, 5, n_groups)
    warm = None
    if seed % 2:
        warm = rng.uniform(0, 1, m)
        for k in range(n_groups):                        # a feasible warm start
            s = warm[grp == k].sum()
            if s > C[k]:
                warm[grp == k] *= C[k] / s
    alpha, _ = solve_dual(G, b, grp, C, warm)
    assert (alpha >= 0).all()
    for k in range(n_groups):
        assert alpha[grp == k].sum() <= C[k] * (1 + 1e-12)
    got = b @ alpha - 0.5 * alpha @ G @ alpha
    assert got >= _reference(G, b, grp, C) - 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_solve_dual_groups_of_very_different_scales(seed):
    """Separate slacks whose constraints differ in norm by orders of magnitude (φ_mrr, unnormalised,
    beside φ_po in SVM-COMBO): the active set still reaches the optimum by itself
    (one active-set solve and at most a couple of SMO polishing steps; the SMO fallback from scratch
    would take many pair steps here)."""
    rng = np.random.default_rng(seed)
    m, d = 12, 8
    grp = np.repeat([0, 1], m // 2)
    A = rng.normal(size=(m, d)) * np.where(grp == 1, 300.0, 1.0)[:, None]
    b = rng.uniform(0.2, 1, m)
    G = A @ A.T
    C = np.array([1.0, 1e-5])                  # the scaled group's C scaled by ~1/300²
    alpha, steps = solve_dual(G, b, grp, C)
    assert (alpha >= 0).all() and all(alpha[grp == k].sum() <= C[k] * (1 + 1e-12) for k in (0, 1))
    got = b @ alpha - 0.5 * alpha @ G @ alpha
    # the same problem with the scaled group's variables rescaled (u = 300²·α) is well conditioned
    D = np.where(grp == 1, 1 / 300.0 ** 2, 1.0)
    ref = _reference(G * np.outer(D, D), b * D, grp, C / np.array([1.0, 1 / 300.0 ** 2]))
    assert got >= ref - 1e-9 * max(1.0, abs(ref))
    assert steps <= 3, steps


def test_cutting_plane_converges_and_gap_is_epsilon_bounded():
    rng = np.random.default_rng(1)
    n_q, n = 15, 120
    offsets = np.arange(n_q + 1) * n
    raw = rng.normal(size=(n_q * n, 3))
    labels = (raw[:, 0] + 0.5 * raw[:, 1] + rng.normal(size=n_q * n) > 1.5).astype(int)
    X = FeatureEncoder("bins", n_bins=10).fit(raw, offsets).transform(raw, offsets)
    C, eps = 10.0, 1e-3
    res = train_structural_svm(X, labels, offsets, [SlackGroup(get_loss("map"), C)], epsilon=eps)
    assert res.converged
    last = res.history[-1]
    assert last["violation"] <= eps
    assert 0 <= last["gap"] <= C * eps + 1e-9            # 1-slack: primal − dual ≤ C·ε at termination
    primal = [h["primal"] for h in res.history]
    dual = [h["dual"] for h in res.history]
    assert all(np.diff(dual) >= -1e-9)                    # the dual only grows as constraints are added
    assert min(primal) >= max(dual) - 1e-9                # weak duality
    # the learned ranking is better than the untrained one on the training queries
    from pyterrier_svmmap.measures import average_precision
    assert average_precision(X.dot(res.w), labels, offsets).mean() > average_precision(
        rng.normal(size=len(labels)), labels, offsets).mean() + 0.1
