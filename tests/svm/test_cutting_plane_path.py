"""The cutting-plane solver as an engine: the warm-started C path, constraint dropping, the oracle seam
and the scale-free QP tolerance (pyterrier_svmmap.svm.cutting_plane)."""

import numpy as np
import pytest

from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
from pyterrier_svmmap.svm.slack import make_slack_groups
from pyterrier_svmmap.svm.cutting_plane import (DataOracle, SlackGroup, train_path,
                                                train_structural_svm)

from tests.helpers import EPS, _close, _instance  # noqa: E402
from tests.oracles.plain_cutting_planes import plain_loop

GRID = [0.1, 1.0, 10.0, 100.0]


@pytest.fixture(scope="module")
def inst():
    return _instance()


@pytest.fixture(scope="module")
def cold(inst):
    X, labels, offsets = inst
    return {c: train_structural_svm(X, labels, offsets, make_slack_groups("map", c), epsilon=EPS) for c in GRID}


@pytest.fixture(scope="module")
def path(inst):
    X, labels, offsets = inst
    return train_path(X, labels, offsets, make_slack_groups("map", 1.0), GRID, epsilon=EPS)




def test_path_solutions_equal_cold_solutions(path, cold):
    assert [r.C for r in path] == GRID
    for r in path:
        assert r.converged
        _close(r, cold[r.C], r.C * EPS)


def test_path_gap_bound_at_every_C(path):
    for r in path:
        last = r.history[-1]
        assert last["violation"] <= EPS
        assert 0 <= r.duality_gap <= r.C * EPS + 1e-9
        np.testing.assert_allclose(r.group_C, [r.C])
        dual = [h["dual"] for h in r.history]
        assert all(np.diff(dual) >= -1e-9)                 # the dual only grows within one C
        assert min(h["primal"] for h in r.history) >= max(dual) - 1e-9


def test_warm_start_reduces_total_iterations(inst, path, cold):
    # the plain loop (MLJ 2009 Alg. 4): the warm start saves iterations
    X, labels, offsets = inst
    with plain_loop():
        plain = train_path(X, labels, offsets, make_slack_groups("map", 1.0), GRID, epsilon=EPS)
        plain_cold = [train_structural_svm(X, labels, offsets, make_slack_groups("map", c), epsilon=EPS) for c in GRID]
    assert sum(r.n_iter for r in plain) < sum(r.n_iter for r in plain_cold)
    # with the line search (the default) cold fits are already short: the warm start saves a pass per C
    assert sum(r.oracle_calls for r in path) < sum(r.oracle_calls for r in cold.values())
    # the later Cs start from the earlier working set (it is not empty at their first iteration)
    assert all(r.history[0]["working_set"] > 0 for r in path[1:])


def test_grid_order_does_not_change_results(inst, path):
    X, labels, offsets = inst
    shuffled = [10.0, 0.1, 100.0, 1.0]
    other = train_path(X, labels, offsets, make_slack_groups("map", 1.0), shuffled, epsilon=EPS)
    assert [r.C for r in other] == shuffled
    by_c = {r.C: r for r in path}
    for r in other:
        np.testing.assert_array_equal(r.w, by_c[r.C].w)
        assert r.n_iter == by_c[r.C].n_iter


@pytest.mark.parametrize("grid, match", [([1.0, 10.0, 1.0], "duplicates"), ([1.0, 0.0], "positive"),
                                         ([-1.0], "positive"), ([], "positive"), ([1.0, np.inf], "positive")])
def test_bad_grids_rejected(inst, grid, match):
    X, labels, offsets = inst
    with pytest.raises(ValueError, match=match):
        train_path(X, labels, offsets, make_slack_groups("map", 1.0), grid)


def test_separate_slack_groups_scale_with_C(inst):
    """SVM-COMBO with separate slacks and C_weights: group k's constant at grid value c is c·C_k(1)."""
    X, labels, offsets = inst
    params = dict(losses=["map", "ndcg@10"], C_weights=[1.0, 0.25])
    grid = [1.0, 20.0]
    res = train_path(X, labels, offsets, make_slack_groups("combo", 1.0, **params), grid, epsilon=EPS)
    for r in res:
        np.testing.assert_allclose(r.group_C, [r.C, 0.25 * r.C])
        ref = train_structural_svm(X, labels, offsets, make_slack_groups("combo", r.C, **params), epsilon=EPS)
        assert r.converged and ref.converged
        _close(r, ref, 1.25 * r.C * EPS)


def test_dropping_constraints_does_not_change_the_solution(inst):
    X, labels, offsets = inst
    groups = make_slack_groups("map", 300.0)
    keep = train_structural_svm(X, labels, offsets, groups, epsilon=EPS, drop_after=None)
    drop = train_structural_svm(X, labels, offsets, groups, epsilon=EPS, drop_after=2)
    assert keep.history[-1]["dropped"] == 0
    assert drop.history[-1]["dropped"] > 10                 # it did drop (the test is not vacuous)
    assert drop.history[-1]["working_set"] < keep.history[-1]["working_set"]
    assert keep.converged and drop.converged
    _close(drop, keep, 300.0 * EPS)
    dual = [h["dual"] for h in drop.history]
    assert all(np.diff(dual) >= -1e-9)                     # dropped planes had α = 0: the dual still grows
    assert 0 <= drop.duality_gap <= 300.0 * EPS + 1e-9


def test_oracle_seam_sharded_oracle_gives_the_same_solution(inst):
    """A 'distributed' oracle summing per-shard contributions (in a fixed order) trains the same model."""
    X, labels, offsets = inst
    losses = [g.loss for g in make_slack_groups("map", 1.0)]
    cut = 9
    Xd = X.dense()
    lo, hi = offsets[:cut + 1], offsets[cut:] - offsets[cut]
    shards = [DataOracle(FeatureMatrix([DenseBlock(Xd[:offsets[cut]])]), labels[:offsets[cut]], lo, losses),
              DataOracle(FeatureMatrix([DenseBlock(Xd[offsets[cut]:])]), labels[offsets[cut]:], hi, losses)]
    n = len(offsets) - 1

    class Sharded:
        n_groups, dim = 1, X.dim
        calls = 0

        def __call__(self, w):
            Sharded.calls += 1
            parts = [s(w) for s in shards]
            return [(sum(p[k][0] * s.n_queries for p, s in zip(parts, shards)) / n,
                     sum(p[k][1] * s.n_queries for p, s in zip(parts, shards)) / n) for k in range(1)]

    groups = make_slack_groups("map", 10.0)
    ref = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    got = train_structural_svm(None, None, None, groups, epsilon=EPS, oracle=Sharded())
    assert got.converged and Sharded.calls == got.oracle_calls
    _close(got, ref, 10.0 * EPS)
    res = train_path(None, None, None, make_slack_groups("map", 1.0), [1.0, 10.0], epsilon=EPS, oracle=Sharded())
    _close(res[1], ref, 10.0 * EPS)
    with pytest.raises(ValueError, match="either"):
        train_structural_svm(X, labels, offsets, groups, oracle=Sharded())
    with pytest.raises(ValueError, match="slack groups"):
        train_structural_svm(None, None, None, make_slack_groups("combo", 1.0, losses=["map", "mrr@10"]),
                             oracle=Sharded())


def _scaled(X, lam):
    return FeatureMatrix([DenseBlock(X.dense() * lam)])


@pytest.mark.parametrize("lam", [1e3, 1e6])
def test_same_problem_in_other_units_costs_the_same(inst, lam):
    """φ×λ with C/λ² is the same problem (α ↦ α/λ², w ↦ w/λ, same rankings): the same iterations."""
    X, labels, offsets = inst
    base = train_structural_svm(X, labels, offsets, make_slack_groups("map", 10.0), epsilon=EPS)
    got = train_structural_svm(_scaled(X, lam), labels, offsets, make_slack_groups("map", 10.0 / lam ** 2),
                               epsilon=EPS)
    assert got.converged and not any(h["qp_capped"] for h in got.history)
    assert base.n_iter / 2 <= got.n_iter <= 2 * base.n_iter
    np.testing.assert_allclose(got.w * lam, base.w, atol=1e-6 * np.abs(base.w).max())


def test_unnormalised_features_at_fixed_C_do_not_exhaust_the_qp(inst):
    """Issue 14 item 5: features ×1e3 at a fixed C (G ×1e6). The QP's tolerance is relative to the
    scale at which its gradient is computed, so it never runs SMO to the step cap (the absolute 1e-12
    of before did, from the 16th iteration on), and training converges with the gap bound."""
    X, labels, offsets = inst
    C = 100.0
    res = {lam: train_structural_svm(_scaled(X, lam), labels, offsets, make_slack_groups("map", C),
                                     epsilon=EPS, qp_max_steps=20_000) for lam in (1.0, 1e3)}
    for r in res.values():
        assert r.converged
        assert not any(h["qp_capped"] for h in r.history)
        assert max(h["qp_steps"] for h in r.history) < 1000
        assert 0 <= r.duality_gap <= C * EPS + 1e-9


def test_inaccurate_qp_is_not_reported_converged(inst, caplog):
    """At ×1e6 and C = 100 (an effective C of 1e14) the dual QP cannot be solved in double precision:
    the loop may find no violated constraint, but the gap bound fails, so it is not called converged."""
    X, labels, offsets = inst
    r = train_structural_svm(_scaled(X, 1e6), labels, offsets, make_slack_groups("map", 100.0), epsilon=EPS,
                             max_iter=300)
    assert r.converged == (r.duality_gap <= 100.0 * EPS * (1 + 1e-6) + 1e-9 * abs(r.primal))
    if r.history[-1]["violation"] <= EPS and not r.converged:
        assert "numerically inaccurate" in caplog.text


def test_bad_options_rejected(inst):
    X, labels, offsets = inst
    g = make_slack_groups("map", 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        train_path(X, labels, offsets, g, [1.0], epsilon=0)
    with pytest.raises(ValueError, match="drop_after"):
        train_structural_svm(X, labels, offsets, g, drop_after=-1)
    with pytest.raises(ValueError, match="prior"):
        train_structural_svm(X, labels, offsets, g, prior=np.zeros(3))
    with pytest.raises(ValueError, match="positive"):
        train_path(X, labels, offsets, [SlackGroup(g[0].loss, -1.0)], [1.0])


def test_path_with_a_prior_matches_cold_fits(inst):
    X, labels, offsets = inst
    w0 = np.random.default_rng(3).normal(size=X.dim) * 0.1
    res = train_path(X, labels, offsets, make_slack_groups("map", 1.0), [0.1, 10.0], epsilon=EPS, prior=w0)
    for r in res:
        ref = train_structural_svm(X, labels, offsets, make_slack_groups("map", r.C), epsilon=EPS, prior=w0)
        _close(r, ref, r.C * EPS)


def test_drop_idle_keeps_active_constraints_and_a_consistent_gram_matrix():
    """_WorkingSet.drop_idle removes only constraints with α = 0 idle ``after`` solves, and compacts
    A, G = AAᵀ, b, groups, α and the idle counts together (capacity doubling on the way)."""
    from pyterrier_svmmap.svm.cutting_plane import _WorkingSet
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=3)
    ws = _WorkingSet(3, w0, capacity=2)
    A, b = rng.normal(size=(5, 3)), rng.uniform(size=5)
    for c in range(5):
        ws.add(A[c], b[c], c % 2)
    ws.alpha[:5] = [0.0, 0.5, 0.0, 0.2, 0.0]
    ws.idle[:5] = [9, 9, 1, 0, 3]                    # constraint 1 is active although its count is high
    assert ws.drop_idle(3) == 2                      # constraints 0 and 4
    keep = [1, 2, 3]
    assert ws.m == 3 and ws.n_dropped == 2
    np.testing.assert_allclose(ws.A[:3], A[keep])
    np.testing.assert_allclose(ws.G[:3, :3], A[keep] @ A[keep].T)
    np.testing.assert_allclose(ws.b[:3], b[keep] - A[keep] @ w0)
    np.testing.assert_array_equal(ws.grp[:3], [1, 0, 1])
    np.testing.assert_array_equal(ws.alpha[:3], [0.5, 0.0, 0.2])
    np.testing.assert_array_equal(ws.idle[:3], [9, 1, 0])
    np.testing.assert_allclose(ws.v(), A[keep].T @ np.array([0.5, 0.0, 0.2]))
    assert ws.drop_idle(3) == 0


def test_drop_idle_compacts_like_fancy_indexing():
    """The compaction (compiled, in place) moves exactly the kept rows of A and the kept rows and columns of G
    to the front, in order, leaving the bits of numpy's fancy indexing; drops at the start, in runs, and at the
    end of a working set grown past its capacity."""
    from pyterrier_svmmap.svm.cutting_plane import _WorkingSet
    rng = np.random.default_rng(1)
    ws = _WorkingSet(7, np.zeros(7), capacity=4)
    A = rng.normal(size=(40, 7))
    for c in range(40):
        ws.add(A[c], 1.0, 0)
    gone = np.zeros(40, dtype=bool)
    gone[[0, 1, 5, 6, 7, 20, 38, 39]] = True
    ws.alpha[:40] = np.where(gone, 0.0, rng.uniform(size=40))
    ws.idle[:40] = np.where(gone, 9, 0)
    G, alpha, keep = ws.G[:40, :40].copy(), ws.alpha[:40].copy(), np.flatnonzero(~gone)
    assert ws.drop_idle(5) == 8
    np.testing.assert_array_equal(ws.A[:32], A[keep])
    np.testing.assert_array_equal(ws.G[:32, :32], G[np.ix_(keep, keep)])
    np.testing.assert_array_equal(ws.alpha[:32], alpha[keep])
