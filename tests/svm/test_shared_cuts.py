"""Cutting planes shared between problems over the same queries (pyterrier_svmmap.svm.shared_cuts and the
``seeds`` of train_path): the constraints read off another problem's pass are the problem's own, and a path
that starts from them is an ε-solution of the same problem, from fewer passes."""
import numpy as np
import pytest

from pyterrier_svmmap.queries import subset_queries
from pyterrier_svmmap.svm.cutting_plane import DataOracle, train_path
from pyterrier_svmmap.svm.shared_cuts import PartsOracle, restrict_points
from pyterrier_svmmap.svm.slack import make_slack_groups

from tests.helpers import EPS, _close, _instance

GRID = [0.1, 1.0, 10.0, 100.0]
LOSSES = [g.loss for g in make_slack_groups("map", 1.0)]
GROUPS = make_slack_groups("map", 1.0)


def same(cuts, other) -> bool:
    """Two lists of (a, b) constraints bit for bit."""
    return len(cuts) == len(other) and all(np.array_equal(a, c) and b == d for (a, b), (c, d) in zip(cuts, other))


@pytest.fixture(scope="module")
def parts():
    """The 20 queries of :func:`_instance` cut into 4 parts of 5 (X, labels, offsets)."""
    X, labels, offsets = _instance()
    part = np.arange(20) % 4
    out = []
    for i in range(4):
        keep = part == i
        rows = np.flatnonzero(np.repeat(keep, np.diff(offsets)))
        out.append((X.take(rows), labels[rows], subset_queries(None, None, offsets, keep)[2]))
    return out


def test_the_constraints_read_off_the_parts_are_the_problems_own_bit_for_bit(parts):
    w = np.random.default_rng(1).normal(size=parts[0][0].dim)
    scout = PartsOracle(parts, LOSSES, active=[1, 2, 3])
    assert same(scout(w), DataOracle(None, None, None, LOSSES, shards=parts[1:])(w))
    for active in ([0, 2], [0, 1, 2, 3], [3]):
        (w_kept, cuts), = restrict_points(scout.points, active, sum(len(parts[i][2]) - 1 for i in active))
        own = DataOracle(None, None, None, LOSSES, shards=[parts[i] for i in active])(w)
        assert np.array_equal(w_kept, w)
        assert same(cuts, own)


def test_a_parts_oracle_keeps_the_points_of_each_c(parts):
    scout = PartsOracle(parts, LOSSES, active=[1, 2, 3])
    results = train_path(None, None, None, GROUPS, GRID, epsilon=EPS, oracle=scout)
    assert [len(r.points) for r in results] == [r.oracle_calls for r in results]
    assert all(len(sums) == 4 for r in results for _, sums in r.points)
    assert scout.points == []                       # each C took its own


def test_a_seeded_path_is_an_epsilon_solution_of_the_same_problem_from_fewer_passes(parts):
    scout = train_path(None, None, None, GROUPS, GRID, epsilon=EPS, oracle=PartsOracle(parts, LOSSES, [1, 2, 3]))
    own = DataOracle(None, None, None, LOSSES, shards=[parts[0], parts[2], parts[3]])
    plain = train_path(None, None, None, GROUPS, GRID, epsilon=EPS, oracle=own)
    n = sum(len(parts[i][2]) - 1 for i in (0, 2, 3))
    seeds = [restrict_points(r.points, [0, 2, 3], n) for r in scout]
    seeded = train_path(None, None, None, GROUPS, GRID, epsilon=EPS, oracle=own, seeds=seeds)
    for p, s, C in zip(plain, seeded, GRID):
        assert p.converged and s.converged
        _close(p, s, C * EPS)
    assert sum(r.oracle_calls for r in seeded) < 0.75 * sum(r.oracle_calls for r in plain)   # 67 against 98


def test_a_path_seeded_with_its_own_points_needs_one_pass_per_c(parts):
    """Seeds hold the optimum: each C starts at the best seed and its first pass certifies it."""
    own = PartsOracle(parts, LOSSES, [0, 1, 2, 3])
    first = train_path(None, None, None, GROUPS, GRID, epsilon=EPS, oracle=own)
    seeds = [restrict_points(r.points, [0, 1, 2, 3], 20) for r in first]
    again = train_path(None, None, None, GROUPS, GRID, epsilon=EPS, oracle=DataOracle(None, None, None, LOSSES,
                                                                                      shards=parts), seeds=seeds)
    assert all(r.converged for r in again)
    assert [r.oracle_calls for r in again] == [1] * len(GRID)


def test_seeds_need_one_list_per_c_and_a_parts_oracle_training_queries(parts):
    with pytest.raises(ValueError, match="one list of points per C"):
        train_path(None, None, None, GROUPS, GRID, oracle=DataOracle(*parts[0], LOSSES), seeds=[[]])
    with pytest.raises(ValueError, match="no training queries"):
        PartsOracle(parts, LOSSES, active=[])
