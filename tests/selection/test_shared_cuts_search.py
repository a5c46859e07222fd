"""``share_cuts``: a cross-validation whose folds and refit start from the first fold's exact constraints
(pyterrier_svmmap.selection.engine.cross_validate) chooses what the plain search chooses on clear evidence, from
fewer passes over the data, and its model does not depend on the threads nor on where the fold fits run."""
import pickle

import numpy as np
import pytest

import pyterrier_svmmap.svm.cutting_plane as cutting_plane
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.selection import engine
from pyterrier_svmmap.svm.ranker import StructSVMRanker

DEFAULT = dict(C="auto", features="auto", prior="best", selection="auto", first_stage=None)


def make_queries(n_queries=150, per_query=60, n_funcs=6, seed=3):
    """Base functions of a hidden relevance (10 % relevant), each noisier than the last, 10 % of scores missing."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    labels = (rng.random(n) < 0.1).astype(np.int8)
    raw = np.column_stack([rng.standard_normal(n) + (1.2 - 0.15 * f) * labels for f in range(n_funcs)])
    raw[rng.random(raw.shape) < 0.1] = np.nan
    return raw, labels, np.arange(n_queries + 1, dtype=np.int64) * per_query


@pytest.fixture(scope="module")
def data():
    return make_queries()


def passes(monkeypatch, fit):
    """The candidates the oracle passed over during ``fit()``: (its result, their count)."""
    seen = []
    shard_sums = cutting_plane.shard_sums

    def counted(X, labels, offsets, w, losses):
        seen.append(len(labels))
        return shard_sums(X, labels, offsets, w, losses)
    monkeypatch.setattr(cutting_plane, "shard_sums", counted)
    try:
        return fit(), sum(seen)
    finally:
        monkeypatch.setattr(cutting_plane, "shard_sums", shard_sums)


def test_shared_cuts_choose_what_the_plain_search_chooses_from_fewer_passes(data, monkeypatch):
    plain, plain_passes = passes(monkeypatch, lambda: StructSVMRanker(**DEFAULT, share_cuts=False,
                                                                      n_jobs=1).fit(*data))
    shared, shared_passes = passes(monkeypatch, lambda: StructSVMRanker(**DEFAULT, share_cuts=True,
                                                                        n_jobs=1).fit(*data))
    assert not plain.choice_["fallback"]                            # the evidence is clear: learning wins
    assert (shared.features_, shared.C_, shared.choice_["fallback"]) == \
        (plain.features_, plain.C_, plain.choice_["fallback"])
    assert [p["features"] for p in shared.path_] == [p["features"] for p in plain.path_]
    cos = shared.coef_ @ plain.coef_ / np.linalg.norm(shared.coef_) / np.linalg.norm(plain.coef_)
    assert 0.99 < cos and not np.array_equal(shared.coef_, plain.coef_)    # another point within the gap
    assert shared_passes < 0.85 * plain_passes


def test_shared_cuts_give_one_model_on_any_threads_and_when_the_fold_fits_are_pickled(data):
    """In this process each fold starts once its scout has ended (threads.run_concurrently's ``after``); a
    cluster's ``fit_map`` gets the scouts, then the other folds, as pickled jobs: the same evidence and models."""
    ref = StructSVMRanker(**DEFAULT, share_cuts=True, n_jobs=1).fit(*data)
    two = StructSVMRanker(**DEFAULT, share_cuts=True, n_jobs=2).fit(*data)
    assert np.array_equal(two.coef_, ref.coef_) and two.C_ == ref.C_
    queries, encoded, ranker, grid = raw_block(data)
    shipped = lambda job, n: [pickle.loads(pickle.dumps(job))(j) for j in range(n)]        # noqa: E731
    with threads.using(2):
        here, there = (engine.cross_validate(queries, [("raw", None)], [grid], ranker.path_trainer(), [encoded], 5, 0,
                                             share_cuts=True, fit_map=fit_map) for fit_map in (None, shipped))
    assert np.array_equal(here.ap, there.ap)
    assert all(np.array_equal(a, b) for a, b in zip(here.fold_weights[0], there.fold_weights[0]))


def raw_block(data):
    """(queries, φ of the raw block, a ranker on a grid of 3 C, the grid) for :func:`engine.cross_validate`."""
    from pyterrier_svmmap.features.layout import EncodedQueries, default_base_names
    from pyterrier_svmmap.queries import Queries
    raw, labels, offsets = data
    grid = [0.1, 1.0, 10.0]
    ranker = StructSVMRanker(C=grid, features="raw", n_jobs=1)
    ranker.base_names_ = default_base_names(raw.shape[1])
    queries = Queries(raw, labels, offsets)
    return queries, EncodedQueries.of(ranker._make_layout(queries, "raw"), raw, offsets), ranker, grid


def test_the_papers_protocol_shares_cuts_too(data):
    """selection="validation" without validation data cross-validates and refits every path: the same C."""
    params = dict(C=[0.1, 1.0, 10.0], features="raw", n_jobs=1)
    plain = StructSVMRanker(**params, share_cuts=False).fit(*data)
    shared = StructSVMRanker(**params, share_cuts=True).fit(*data)
    assert shared.selection_ == plain.selection_ == "cv" and shared.C_ == plain.C_
    assert not np.array_equal(shared.coef_, plain.coef_)


@pytest.mark.parametrize("share_cuts, threshold, shared", [
    (False, 0, False), (True, 10 ** 9, True),
    ("auto", 150 * 60, True), ("auto", 150 * 60 + 1, False)])     # the data's 9,000 candidates
def test_share_cuts_auto_shares_from_its_threshold_of_candidates_on(data, monkeypatch, share_cuts, threshold, shared):
    monkeypatch.setattr(engine, "SHARE_CUTS_MIN_CANDIDATES", threshold)
    scouts = []
    cross_validate = engine.cross_validate
    monkeypatch.setattr(engine, "cross_validate",
                        lambda *a, **k: scouts.append(k["share_cuts"]) or cross_validate(*a, **k))
    StructSVMRanker(**DEFAULT, share_cuts=share_cuts, n_jobs=1).fit(*data)
    assert scouts == [shared]


def test_without_share_cuts_no_path_is_seeded(data, monkeypatch):
    seeded = []
    train_path = cutting_plane.train_path

    def spy(*args, seeds=None, **kwargs):
        seeded.append(seeds is not None)
        return train_path(*args, seeds=seeds, **kwargs)
    monkeypatch.setattr(cutting_plane, "train_path", spy)
    StructSVMRanker(**DEFAULT, share_cuts=False, n_jobs=1).fit(*data)
    assert seeded and not any(seeded)
    seeded.clear()
    StructSVMRanker(**DEFAULT, share_cuts=True, n_jobs=1).fit(*data)
    assert sum(seeded) == len(seeded) - 3          # every path but the three feature blocks' first folds


def test_every_fold_of_a_shared_search_is_an_epsilon_solution_of_its_plain_problem(data):
    """Each fold's path, the first fold's (which passes over every fold) included, solves the plain fold's
    problem: objectives within C ε, each above the other's dual, weights within √(2·gap) of each other's."""
    from tests.helpers import _close
    queries, encoded, ranker, grid = raw_block(data)
    paths = {}
    train_path = ranker.train_path

    def spy(q, grid, setting, fold=None, shards=None, encoded=None, **shared):
        out = train_path(q, grid, setting, fold, shards, encoded, **shared)
        paths[fold, bool(shared)] = out[1]
        return out
    ranker.train_path = spy
    held = {share: engine.cross_validate(queries, [("raw", None)], [grid], ranker.path_trainer(), [encoded], 5, 0,
                                         share_cuts=share) for share in (False, True)}
    assert held[False].points == [None] and len(held[True].points[0]) == len(grid)
    assert sorted(paths) == [(k, share) for k in range(5) for share in (False, True)]
    for k in range(5):
        for plain, shared, C in zip(paths[k, False], paths[k, True], grid):
            assert plain.converged and shared.converged
            _close(plain, shared, C * ranker.epsilon)
    assert not np.array_equal(held[True].ap, held[False].ap)
    assert np.abs(held[True].ap.mean(axis=0) - held[False].ap.mean(axis=0)).max() < 0.01     # each C's MAP


def test_the_seeds_of_a_path_are_the_first_folds_points_of_its_c_values_on_its_folds():
    fold = np.array([0, 1, 2, 1, 0, 2])
    held = engine.HeldOut(fold, np.zeros((6, 3)), None, [[None] * 3], [["c0", "c1", "c2"]])
    assert held.seeds(0, fold=1) == (["c0", "c1", "c2"], [0, 2])
    assert held.seeds(0, 2) == (["c0", "c1"], [0, 1, 2])                    # the refit, up to the chosen C
    assert engine.HeldOut(fold, np.zeros((6, 3)), None, [[None] * 3], [None]).seeds(0, fold=1) is None


@pytest.mark.parametrize("params", [dict(), dict(normalise=None), dict(binning="minmax", n_bins=7)])
def test_a_combined_feature_block_is_made_of_its_parts_with_the_values_and_spread_of_its_own_encoding(data, params):
    from pyterrier_svmmap.features.layout import EncodedQueries, default_base_names
    from pyterrier_svmmap.queries import Queries
    raw, labels, offsets = data
    ranker = StructSVMRanker(**params)
    ranker.base_names_ = default_base_names(raw.shape[1])
    queries = Queries(raw, labels, offsets)
    bins, raw_block, both = engine.encode_settings(queries, [("bins", None), ("raw", "best"), ("bins+raw", None)],
                                                   ranker._make_layout)
    assert both.X.blocks == bins.X.blocks + raw_block.X.blocks                 # the same block objects
    own = EncodedQueries.of(ranker._make_layout(queries, "bins+raw"), raw, offsets)
    for shared, fresh in zip(both.X.blocks, own.X.blocks):
        assert all(np.array_equal(v, vars(fresh)[k]) for k, v in vars(shared).items() if isinstance(v, np.ndarray))
    assert both.spread == own.spread and both.layout.dim == own.layout.dim
