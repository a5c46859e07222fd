"""The cutting-plane loop with a line search (solver._cutting_planes_ls, OCAS-style) against the plain loop
(MLJ 2009 Alg. 4, tests/oracles/plain_cutting_planes.py): the same problem solved to the same certificate, with
fewer passes over the data, and shard-ordered sums (solver.DataOracle with shards) that make one process equal a
cluster."""
import numpy as np
import pytest

from pyterrier_svmmap.svm.slack import make_slack_groups
from pyterrier_svmmap.queries import usable_shard_sizes
from pyterrier_svmmap.svm.ranker import StructSVMRanker
from pyterrier_svmmap.svm.cutting_plane import DataOracle, reduce_shard_sums, shard_sums, train_path, train_structural_svm

from tests.helpers import EPS, _close, _instance
from tests.oracles.plain_cutting_planes import plain_loop

LOSSES = {"map": dict(), "combo": dict(losses=["map", "ndcg@10"], slack="separate", C_weights=[1.0, 0.25])}


@pytest.fixture(scope="module")
def inst():
    return _instance(seed=3)


def _objective(X, labels, offsets, groups, w, w0=None):
    """½‖w − w₀‖² + Σ_k C_k ξ_k(w), ξ from a fresh oracle call (independent of the solver's bookkeeping)."""
    cuts = DataOracle(X, labels, offsets, [g.loss for g in groups])(w)
    v = w - (0 if w0 is None else w0)
    return 0.5 * v @ v + sum(g.C * max(0.0, b - a @ w) for g, (a, b) in zip(groups, cuts))


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("C", [0.3, 10.0, 300.0])
def test_line_search_and_plain_loop_solve_the_same_problem(inst, loss, C):
    X, labels, offsets = inst
    groups = make_slack_groups(loss, C, **LOSSES[loss])
    ls = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    with plain_loop():
        plain = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    assert ls.converged and plain.converged
    budget = sum(g.C for g in groups) * EPS
    _close(ls, plain, budget)
    assert 0 <= ls.duality_gap <= budget * (1 + 1e-6)
    # the reported primal is the objective at the returned w (the best point, not the QP's solution)
    assert ls.primal == pytest.approx(_objective(X, labels, offsets, groups, ls.w), rel=1e-12, abs=1e-15)
    assert ls.history[-1]["violation"] == pytest.approx(ls.duality_gap / sum(g.C for g in groups))
    calls = [h["oracle_calls"] for h in ls.history]
    assert calls == sorted(calls) and ls.oracle_calls == calls[-1] >= ls.n_iter
    assert plain.oracle_calls == plain.n_iter


def test_line_search_needs_fewer_passes_at_large_C(inst):
    X, labels, offsets = inst
    groups = make_slack_groups("map", 300.0)
    ls = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    with plain_loop():
        plain = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    assert ls.n_iter < plain.n_iter / 2 and ls.oracle_calls < plain.oracle_calls


def test_line_search_with_a_prior(inst):
    X, labels, offsets = inst
    w0 = np.zeros(X.dim)
    w0[: X.dim // 4] = 0.5
    groups = make_slack_groups("map", 30.0)
    ls = train_structural_svm(X, labels, offsets, groups, epsilon=EPS, prior=w0)
    with plain_loop():
        plain = train_structural_svm(X, labels, offsets, groups, epsilon=EPS, prior=w0)
    _close(ls, plain, 30.0 * EPS)
    assert ls.primal == pytest.approx(_objective(X, labels, offsets, groups, ls.w, w0), rel=1e-12)


def test_path_with_line_search_equals_cold_fits(inst):
    X, labels, offsets = inst
    grid = [0.1, 3.0, 100.0]
    path = train_path(X, labels, offsets, make_slack_groups("map", 1.0), grid, epsilon=EPS)
    for r in path:
        cold = train_structural_svm(X, labels, offsets, make_slack_groups("map", r.C), epsilon=EPS)
        assert r.converged
        _close(r, cold, r.C * EPS)
    # the next C starts from the previous best point: its first pass is at its own first QP's solution
    assert all(r.history[0]["oracle_calls"] == 1 for r in path[1:])
    assert path[0].history[0]["oracle_calls"] == 2                  # cold: w = w0, then the QP's solution


def _split(X, labels, offsets, sizes):
    parts, q = [], 0
    for s in sizes:
        lo, hi = offsets[q], offsets[q + s]
        parts.append((X.take(np.arange(lo, hi)), labels[lo:hi], offsets[q:q + s + 1] - lo))
        q += s
    return parts


def test_sharded_oracle_sums_in_shard_order(inst):
    X, labels, offsets = inst
    losses = [g.loss for g in make_slack_groups("map", 1.0)]
    parts = _split(X, labels, offsets, [7, 7, 6])
    w = np.random.default_rng(0).normal(size=X.dim)
    got = DataOracle(None, None, None, losses, shards=parts)(w)
    expected = reduce_shard_sums([shard_sums(Xs, ls, os, w, losses) for Xs, ls, os in parts], 20)
    assert np.array_equal(got[0][0], expected[0][0]) and got[0][1] == expected[0][1]
    whole = DataOracle(X, labels, offsets, losses)(w)
    np.testing.assert_allclose(got[0][0], whole[0][0], rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="not both"):
        DataOracle(X, labels, offsets, losses, shards=parts)


def testusable_shard_sizes():
    ok = np.array([1, 0, 1, 1, 0, 0, 1], dtype=bool)
    assert usable_shard_sizes(ok, None, 3).tolist() == [2, 1, 1]          # blocks of 3 given queries
    assert usable_shard_sizes(ok, [2, 3, 2], 1000).tolist() == [1, 2, 1]
    assert usable_shard_sizes(ok, [1, 1, 3, 2], 1000).tolist() == [1, 2, 1]   # an empty shard disappears
    with pytest.raises(ValueError, match="sum to the 7 queries"):
        usable_shard_sizes(ok, [2, 2], 1000)


def test_ranker_sums_by_shard_of_queries_per_shard(inst):
    """fit() cuts the queries into shards of queries_per_shard, as a cluster would, and the model is the one
    trained on that sharded oracle bit for bit."""
    rng = np.random.default_rng(5)
    n_q, n = 12, 30
    offsets = np.arange(n_q + 1) * n
    raw = rng.normal(size=(n_q * n, 3))
    labels = (raw[:, 0] + rng.normal(size=n_q * n) > 1.0).astype(float)
    r = StructSVMRanker(C=50.0, features="raw", queries_per_shard=5).fit(raw, labels, offsets)
    X = r.layout_.transform(raw, offsets)
    losses = [g.loss for g in make_slack_groups("map", 1.0)]
    oracle = DataOracle(None, None, None, losses, shards=_split(X, labels, offsets, [5, 5, 2]))
    ref = train_path(None, None, None, make_slack_groups("map", 1.0), [50.0], epsilon=r.epsilon, oracle=oracle)[0]
    assert np.array_equal(r.coef_, ref.w)


@pytest.mark.parametrize("loss", ["map", "ndcg@10"])
def test_tiny_C_returns_the_qp_solution_not_the_start(inst, loss):
    """At tiny C the start w = 0 is itself within C·ε of the optimum, but w = 0 ties every score (the tie
    policy would then rank by a base function): the loop returns the QP's certified solution, as the plain
    loop does, never its start."""
    X, labels, offsets = inst
    groups = make_slack_groups(loss, 1e-4)
    ls = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    with plain_loop():
        plain = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    assert ls.converged and np.abs(ls.w).max() > 0
    np.testing.assert_allclose(ls.w, plain.w, rtol=1e-9, atol=1e-15)


def test_wasted_searches_back_off(inst, monkeypatch):
    """MRR@10's argmax is constant along most segments, so its searches neither cut the model nor move the
    best point: after such a search the loop skips searching for 1, 2, 4, ... iterations, and needs fewer
    passes over the data than a loop that always searches, at the same certificate."""
    import pyterrier_svmmap.svm.cutting_plane as solver_module
    X, labels, offsets = inst
    groups = make_slack_groups("mrr@10", 3.0)
    backoff = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    monkeypatch.setattr(solver_module, "_MAX_BACKOFF", 0)
    always = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
    assert backoff.converged and always.converged
    assert backoff.oracle_calls < always.oracle_calls
    _close(backoff, always, 3.0 * EPS)
