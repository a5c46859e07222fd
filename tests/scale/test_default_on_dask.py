"""The package's default (``selection="auto"``) on a Dask cluster: the search runs in the driver, its independent
fits on the workers, and the model is one process's, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap.scale.dask import executor_for
from pyterrier_svmmap.selection.engine import RACE_FOLDS
from pyterrier_svmmap.svm.ranker import StructSVMRanker

distributed = pytest.importorskip("dask.distributed")

#: the estimators' default selection (SVMMap())
DEFAULT = dict(selection="auto", C="auto", features="auto", prior="best")


@pytest.fixture(scope="module")
def client(two_workers):
    """Two worker processes, so that every fit's job is pickled to another process."""
    return two_workers


def _data(seed=0, n_q=40, n=20, F=4):
    """Queries where a learned combination of three functions beats the best single one (so that the default
    keeps a learned model, not the fallback)."""
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n_q * n, F))
    raw[rng.random(raw.shape) < 0.1] = np.nan
    score = np.nan_to_num(raw[:, :3]).sum(axis=1) + 0.3 * rng.normal(size=n_q * n)
    labels = (score > 1.5).astype(float)
    labels[::n] = 1.0
    return raw, labels, np.arange(0, n_q * n + 1, n)


def _fits_run(task_stream) -> int:
    return sum(1 for t in task_stream.data if str(t["key"]).startswith("run_fit"))


def _cv_fits(model: StructSVMRanker, cv: int, n_settings: int) -> int:
    """The (fold, setting) fits of the default's cross-validation: every one, but only the first folds' for
    the settings that lost the race (their scores on the last fold are NaN)."""
    first_entries = {(p["features"], p.get("prior")): p for p in reversed(model.path_) if not p.get("fallback")}
    lost = sum(np.isnan(p["cv_scores"][-1]) for p in first_entries.values())
    assert len(first_entries) == n_settings
    return cv * n_settings - (cv - RACE_FOLDS) * lost


def _same_model(one: StructSVMRanker, dist: StructSVMRanker) -> None:
    assert dist.C_ == one.C_ and dist.features_ == one.features_
    assert np.max(np.abs(dist.coef_ - one.coef_)) <= 1e-8 * np.max(np.abs(one.coef_))
    assert np.array_equal(dist.coef_, one.coef_) and np.array_equal(dist.coefs_, one.coefs_)   # bit for bit
    assert repr(dist.path_) == repr(one.path_)                   # exact, and NaN (a setting not scored) equal
    assert dist.choice_ == one.choice_ and dist.selection_ == one.selection_
    assert dist.tie_function_ == one.tie_function_ and dist.feature_names_ == one.feature_names_


@pytest.mark.parametrize("case", ["cross-validation", "validation set", "prior auto", "validation evidence"])
def test_the_default_on_a_cluster_equals_one_process(client, case):
    raw, labels, offsets = _data()
    params, valid, n_relevant = dict(DEFAULT), None, None
    if case == "validation set":              # cross-validated over training ∪ validation, refitted on all
        valid = _data(1, n_q=10)
        n_relevant = np.diff(offsets) // 4 + 1        # the qrels' counts normalise the held-out APs
    elif case == "prior auto":
        params["prior"] = "auto"
    elif case == "validation evidence":       # the validation set alone is the evidence: the settings' paths
        params["min_valid_queries"] = 5
        valid = _data(2, n_q=10)
    one = StructSVMRanker(**params).fit(raw, labels, offsets, n_relevant, valid=valid)
    with distributed.get_task_stream(client) as ts:
        dist = StructSVMRanker(**params, executor=executor_for(client)).fit(raw, labels, offsets, n_relevant, valid=valid)
    assert one.choice_ is not None and not one.choice_["fallback"]          # a learned model was kept
    _same_model(one, dist)
    n_settings = 3 * (2 if params["prior"] == "auto" else 1)
    if case == "validation evidence":
        assert one.selection_ == "validation" and _fits_run(ts) == n_settings
    else:
        assert one.selection_ == "cv" and _fits_run(ts) == _cv_fits(one, 5, n_settings)
    assert dist.executor.executor is client


def test_the_estimators_default_on_a_cluster(client):
    """SVMMap() with executor=client: the frames' default, the model of one process; nothing is registered on
    the user's cluster."""
    from tests.helpers import _synthetic_runs
    from pyterrier_svmmap import RunFeatures, SVMMap
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(7))
    res = RunFeatures(runs).transform(topics)
    one = SVMMap().fit(res, qrels)
    plugins = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.worker_plugins))
    dist = SVMMap(executor=client).fit(res, qrels)
    assert client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.worker_plugins)) == plugins
    assert repr(one) == repr(dist)
    assert dist.ranker_.C_ == one.ranker_.C_ and dist.ranker_.features_ == one.ranker_.features_
    assert np.array_equal(dist.ranker_.coef_, one.ranker_.coef_)


def test_shards_are_gathered_for_the_default(client, tmp_path):
    """fit_shards with the default on a cluster: the files are read into the driver, the search's fits run on
    the workers, and the model is fit_shards' in one process."""
    from tests.data_paths import EXAMPLES
    lines = (EXAMPLES / "letor_train.txt").read_text().splitlines(keepends=True)
    (tmp_path / "a.txt").write_text("".join(lines[:41]))
    (tmp_path / "b.txt").write_text("".join(lines[41:]))
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    params = dict(DEFAULT, cv=3)
    one = StructSVMRanker(**params, executor=executor_for(None)).fit_shards(files)
    with distributed.get_task_stream(client) as ts:
        dist = StructSVMRanker(**params, executor=executor_for(client)).fit_shards(files)
    _same_model(one, dist)
    assert _fits_run(ts) == _cv_fits(one, 3, 3)


def test_an_executor_that_cannot_map_fits_is_refused():
    """A third-party shard executor without fit_map() cannot run the default: a clear error before any work."""
    class ShardsOnly:
        def fit_shards(self, ranker, sources, valid, base_names):
            raise AssertionError("not reached")
    raw, labels, offsets = _data()
    with pytest.raises(ValueError, match="cannot run the independent fits of selection='auto'"):
        StructSVMRanker(**DEFAULT, executor=ShardsOnly()).fit(raw, labels, offsets)


def test_the_ranker_takes_a_shard_executor_only():
    """StructSVMRanker's executor is a shard executor (or None): a client or an address is the estimators' and
    executor_for's to resolve, and the error says so before any work."""
    raw, labels, offsets = _data()
    with pytest.raises(ValueError, match="executor_for"):
        StructSVMRanker(C=1.0, selection="validation", executor="local").fit(raw, labels, offsets)
    with pytest.raises(ValueError, match="executor_for"):
        StructSVMRanker(C=1.0).fit_shards([(raw, labels, offsets)])
