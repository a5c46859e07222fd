"""Training on a Dask cluster gives the model of one process: exact distributed thresholds, the same weights
and iteration counts on 1 and 2 workers, files read by workers, one argmax task per worker per oracle call,
and a worker lost mid-fit."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from pyterrier_svmmap.queries import shard_sizes, split_queries
from pyterrier_svmmap.scale.dask import (DistributedTrainingError, Placement, ShardOracle, executor_for,
                                        group_by_worker)
from pyterrier_svmmap.scale.shards import quantile_thresholds_from_counts, sample_counts, sample_extent
from pyterrier_svmmap.features.thresholds import function_thresholds
from pyterrier_svmmap.svm.ranker import StructSVMRanker



# ---------------------------------------------------------------- exact thresholds (no cluster needed)
@pytest.mark.parametrize("seed", range(3))
def test_distributed_quantiles_equal_numpy_on_all_values(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        shards = []
        for _ in range(rng.integers(1, 5)):
            n = int(rng.integers(0, 40))
            kind = rng.integers(4)
            kind = rng.integers(5)
            v = [rng.normal(size=(n, 3)), rng.integers(-3, 3, size=(n, 3)).astype(float),
                 rng.normal(size=(n, 3)) * 1e-300, -rng.exponential(size=(n, 3)) * 1e10,
                 rng.choice([-np.inf, -1e308, -0.0, 0.0, 5e-324, 1.0, 1e308, np.inf], size=(n, 3))][kind]
            v[rng.random(v.shape) < 0.2] = np.nan
            shards.append(v)
        n_bins = int(rng.integers(1, 12))
        samples = [[np.sort(c[~np.isnan(c)]) for c in s.T] for s in shards]
        ext = [sample_extent(s) for s in samples]
        n = sum(e[0] for e in ext)
        lo, hi = np.min([e[1] for e in ext], axis=0), np.max([e[2] for e in ext], axis=0)
        calls = []

        def count_le(p):
            calls.append(1)
            return sum(sample_counts(s, p) for s in samples)
        got = quantile_thresholds_from_counts(count_le, n, lo, hi, n_bins)
        every = np.vstack(shards)
        expected = function_thresholds(every, n_bins)
        assert np.array_equal(got, expected)
        assert len(calls) <= 13                                   # 31 pivots a round over the float64 order


@pytest.mark.parametrize("pivots", [2, 3, 7, 31, 100])
def test_order_statistics_at_any_number_of_pivots(pivots):
    """The search finds every rank's value (infinities, the largest and the smallest subnormal included) with
    any number of pivots a round, in at most ⌈64 / log2(pivots)⌉ + 1 rounds. (−0.0 and 0.0 count as equal, as
    in numpy's sort: the search returns −0.0 for either.)"""
    from pyterrier_svmmap.scale.shards import select_order_statistics
    rng = np.random.default_rng(pivots)
    values = np.concatenate([rng.choice([-np.inf, -1e308, -0.0, 0.0, 5e-324, 1.0, 1e308, np.inf], 30),
                             rng.normal(size=30) * 10.0 ** rng.integers(-300, 300, 30)])
    col = np.sort(values)
    ranks = np.arange(len(col))[None, :]
    rounds = []

    def count_le(p):
        rounds.append(1)
        return np.searchsorted(col, p[0], side="right")[None]
    got = select_order_statistics(count_le, ranks, col[:1], col[-1:], pivots=pivots)
    assert np.array_equal(got[0], col)
    assert len(rounds) <= int(np.ceil(64 / np.log2(pivots))) + 1


def test_split_queries_keeps_queries_whole():
    offsets = np.array([0, 3, 3, 7, 8, 12])
    raw = np.arange(12.0)[:, None]
    shards = split_queries(raw, np.zeros(12), offsets, shard_sizes(5, 2))
    assert [len(s[2]) - 1 for s in shards] == [2, 2, 1]
    assert np.array_equal(np.concatenate([s[0] for s in shards]), raw)
    assert [s[2].tolist() for s in shards] == [[0, 3, 3], [0, 4, 5], [0, 4]]


# ---------------------------------------------------------------- on a LocalCluster
distributed = pytest.importorskip("dask.distributed")


def _cluster(n, threads=1):
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=threads, processes=True, dashboard_address=None)
    return distributed.Client(cluster)


@pytest.fixture(scope="module")
def client2():
    c = _cluster(2)
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


def _data(seed=0, n_q=30, n=20, F=4):
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n_q * n, F))
    raw[rng.random(raw.shape) < 0.1] = np.nan
    labels = (np.nan_to_num(raw[:, 0]) + 0.5 * np.nan_to_num(raw[:, 1]) + rng.normal(size=n_q * n) > 1.5).astype(float)
    labels[::n] = 1.0                                            # every query has a relevant candidate
    return raw, labels, np.arange(0, n_q * n + 1, n)


def _close(a: StructSVMRanker, b: StructSVMRanker):
    """The same model bit for bit: the same shards give the same sums in the same order (solver.reduce_shard_sums),
    so the cutting-plane path, line search included, is the same."""
    assert [(p["n_iter"], p["oracle_calls"]) for p in a.path_] == [(p["n_iter"], p["oracle_calls"]) for p in b.path_]
    assert np.array_equal(a.coefs_, b.coefs_)
    assert a.C_ == b.C_ and a.feature_names_ == b.feature_names_


@pytest.mark.parametrize("params", [
    dict(C=[0.1, 10.0], features="bins", n_bins=6),
    dict(C=[1.0], features="bins+raw", n_bins=4, prior="best"),
    dict(C=[1.0], features="raw", loss="combo", loss_params=dict(losses=["map", "ndcg@5"], slack="separate")),
    dict(C="auto", features="auto", n_bins=5, prior="best"),          # C relative to φ's spread, per block
    dict(C=1.0, features="raw", normalise=None),
])
def test_cluster_fit_equals_one_process(client2, params):
    raw, labels, offsets = _data()
    valid = (raw[:200], labels[:200], offsets[:11])
    serial = StructSVMRanker(**params, queries_per_shard=11).fit(raw, labels, offsets, valid=valid)
    dist = StructSVMRanker(**params, executor=executor_for(client2), queries_per_shard=11).fit(raw, labels, offsets, valid=valid)
    _close(serial, dist)
    if "bins" in params["features"] or params["features"] == "auto":
        assert np.array_equal(serial.layout_.encoder.thresholds_, dist.layout_.encoder.thresholds_)
    for name in ("prescale_", "column_scale_", "indicator_scale_"):            # the scales, bit for bit
        assert np.array_equal(getattr(serial.layout_.encoder, name), getattr(dist.layout_.encoder, name))
    assert [p["C"] for p in serial.path_] == [p["C"] for p in dist.path_]
    assert dist.training_summary_["shards"] == 3 and dist.executor.executor is client2
    traffic = dist.training_summary_["traffic"][dist.features_]
    assert traffic["iterations"] == sum(p["oracle_calls"] for p in dist.path_ if p["features"] == dist.features_)
    assert traffic["bytes_per_iteration"] < 3 * 8 * 4 * (dist.layout_.dim + 1)   # vectors of φ's size, not data


def test_one_and_two_workers_give_the_same_model(client2):
    """One worker of two threads (its task runs the shards' kernels on both) and two single-threaded workers."""
    raw, labels, offsets = _data(1)
    c1 = _cluster(1, threads=2)
    try:
        one = StructSVMRanker(C=1.0, n_bins=5, executor=executor_for(c1), queries_per_shard=10).fit(raw, labels, offsets)
    finally:
        cluster = c1.cluster
        c1.close()
        cluster.close()
    two = StructSVMRanker(C=1.0, n_bins=5, executor=executor_for(client2), queries_per_shard=10).fit(raw, labels, offsets)
    assert np.array_equal(one.coef_, two.coef_) and one.n_iter_ == two.n_iter_     # same shards, same sums


def test_files_are_read_by_the_workers(client2, tmp_path, letor_example_files):
    lines = letor_example_files.train.read_text().splitlines(keepends=True)   # a comment, then 8 lines a query
    (tmp_path / "a.txt").write_text("".join(lines[:41]))
    (tmp_path / "b.txt").write_text("".join(lines[41:]))
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    serial = StructSVMRanker(C=[0.1, 10.0], features="bins", n_bins=4, executor=executor_for(None)).fit_shards(
        files, valid=str(letor_example_files.test))
    dist = StructSVMRanker(C=[0.1, 10.0], features="bins", n_bins=4, executor=executor_for(client2)).fit_shards(
        files, valid=str(letor_example_files.test))
    _close(serial, dist)
    # a query whose lines are in two files cannot be a shard
    (tmp_path / "c.txt").write_text("".join(lines[:45]))
    (tmp_path / "d.txt").write_text("".join(lines[45:]))
    with pytest.raises(ValueError, match="query .* is in shard 0 and shard 1"):
        StructSVMRanker(C=1.0, executor=executor_for(client2)).fit_shards([str(tmp_path / "c.txt"), str(tmp_path / "d.txt")])


def test_grid_without_validation_is_refused_on_a_cluster(client2):
    raw, labels, offsets = _data(2)
    with pytest.raises(ValueError, match="on a cluster C .* is chosen on validation queries"):
        StructSVMRanker(C=[0.1, 1.0], executor=executor_for(client2)).fit(raw, labels, offsets)


def _kill_this_process():
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_lost_mid_fit_gives_the_same_model(monkeypatch):
    """A worker holding shards is killed: its shards are recomputed from the task graph on the remaining or
    restarted worker, its task runs there, the grouping is read again from the scheduler, and the iteration is
    repeated from the same w, so the model is unchanged; afterwards it is one task per worker again."""
    raw, labels, offsets = _data(3)
    serial = StructSVMRanker(C=1.0, features="raw", queries_per_shard=10).fit(raw, labels, offsets)
    client = _cluster(2)
    original = ShardOracle.__call__
    seen = []

    def call(self, w):
        if self.calls == 3:                                      # in the middle of the cutting-plane loop
            victim = self.data.feature_placement.groups()[0][0]   # a worker that holds shards
            try:
                client.run(_kill_this_process, workers=[victim])
            except Exception:                                    # noqa: BLE001 - the worker died, as intended
                pass
        out = original(self, w)
        seen.append((self.data.feature_placement.refreshes, self.data.feature_placement.last_tasks))
        return out
    monkeypatch.setattr(ShardOracle, "__call__", call)
    try:
        dist = StructSVMRanker(C=1.0, features="raw", executor=executor_for(client), queries_per_shard=10).fit(raw, labels, offsets)
    except DistributedTrainingError:
        pytest.fail("the lost shards should have been recomputed")
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    _close(serial, dist)
    assert len(seen) > 5 and seen[0][0] == 1 and seen[-1][0] >= 2       # read again after the loss
    assert all(tasks <= 2 for _, tasks in seen[-3:])


def test_estimator_and_cli_on_a_cluster(client2, tmp_path, letor_example_files):
    from tests.helpers import _synthetic_runs
    from pyterrier_svmmap import RunFeatures, SVMMap
    from pyterrier_svmmap.cli import main
    from pyterrier_svmmap.io.model_files import load_model
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(7))
    res = RunFeatures(runs).transform(topics)
    tr, va = res[res.qid.astype(int) < 8], res[res.qid.astype(int) >= 8]
    paper = dict(features="bins", prior=None, selection="validation")        # the iterations on the shards
    serial = SVMMap(C=[0.1, 10.0], n_bins=5, queries_per_shard=3, **paper).fit(tr, qrels, va, qrels)
    dist = SVMMap(C=[0.1, 10.0], n_bins=5, executor=client2, queries_per_shard=3, **paper).fit(tr, qrels, va, qrels)
    _close(serial.ranker_, dist.ranker_)
    assert repr(serial) == repr(dist)                           # the executor does not change the model
    lines = letor_example_files.train.read_text().splitlines(keepends=True)
    (tmp_path / "a.txt").write_text("".join(lines[:41]))
    (tmp_path / "b.txt").write_text("".join(lines[41:]))
    assert main(["learn", "-c", "0.1,10", "--valid", str(letor_example_files.test), str(tmp_path / "a.txt"),
                 str(tmp_path / "b.txt"), str(tmp_path / "serial")]) == 0
    assert main(["learn", "-c", "0.1,10", "--valid", str(letor_example_files.test), "--scheduler",
                 client2.scheduler.address, str(tmp_path / "*.txt"), str(tmp_path / "dist")]) == 0
    _close(load_model(tmp_path / "serial").ranker_, load_model(tmp_path / "dist").ranker_)


def test_shards_are_grouped_by_the_worker_that_holds_them():
    """One holder: that worker; several: the one with the fewest shards (ties: the smaller address), after the
    shards with one holder; none (lost, being recomputed): one task without a worker, last."""
    a, b = "tcp://a:1", "tcp://b:1"
    assert group_by_worker([[a], [b], [a], [b]]) == [(a, [0, 2]), (b, [1, 3])]
    assert group_by_worker([[b, a], [a], [a], [a, b], [b]]) == [(a, [1, 2, 3]), (b, [0, 4])]
    assert group_by_worker([[a, b], [b, a]]) == [(a, [0]), (b, [1])]
    assert group_by_worker([[], [a], []]) == [(a, [1]), (None, [0, 2])]
    assert group_by_worker([]) == []


def _violation_tasks(ts):
    return [t for t in ts.data if str(t["key"]).startswith("worker_violation")]


def test_one_call_per_worker_per_oracle_call(client2):
    """12 shards on 2 workers: every oracle call asks each worker holding shards once, through the shard
    holder actor on that worker (not one task per shard, and no task through the scheduler), and the model
    is the one-process model."""
    from dask.distributed import get_task_stream
    raw, labels, offsets = _data(4, n_q=36)
    params = dict(C=10.0, n_bins=5, queries_per_shard=3)
    serial = StructSVMRanker(**params).fit(raw, labels, offsets)
    calls = []
    original = ShardOracle.__call__

    def call(self, w):
        before = self.tasks
        out = original(self, w)
        placement = self.data.feature_placement
        holders = placement.holders()
        calls.append(dict(asked=self.tasks - before, where=[h._address for h in holders],
                          held_by=[a for a, _ in placement.groups()], counts=[h.calls for h in holders],
                          seconds=list(placement.last_seconds)))
        return out
    ShardOracle.__call__ = call
    try:
        with get_task_stream(client2) as ts:
            dist = StructSVMRanker(**params, executor=executor_for(client2)).fit(raw, labels, offsets)
    finally:
        ShardOracle.__call__ = original
    _close(serial, dist)
    assert dist.training_summary_["shards"] == 12
    n_calls = sum(p["oracle_calls"] for p in dist.path_)
    traffic = dist.training_summary_["traffic"]["bins"]
    assert len(calls) == n_calls == traffic["iterations"] > 5
    assert sum(c["asked"] for c in calls) == traffic["tasks"]
    assert all(c["asked"] == len(c["where"]) == 2 for c in calls)               # with one per shard: 12
    assert all(c["where"] == c["held_by"] for c in calls)                       # asked where the shards are
    assert [c["counts"] for c in calls] == [[i + 1] * 2 for i in range(n_calls)]   # one call each, every time
    assert all(len(c["seconds"]) == 2 and min(c["seconds"]) > 0 for c in calls)
    assert 0 < traffic["busiest_worker_seconds"] <= traffic["oracle_seconds"]
    assert _violation_tasks(ts) == []                                          # the scheduler is not involved


def test_the_grouping_is_read_again_when_a_task_ran_elsewhere(client2):
    """A task that reports another worker than the one it was sent to (its worker was lost, the scheduler
    moved it) makes the placement ask the scheduler where the data are before the next call."""
    futures = [client2.submit(np.full, 3, float(i), pure=False) for i in range(5)]
    placement = Placement(client2, futures, retries=0)
    assert [g.tolist() for g in placement.run(_here, (0.0,))] == [[float(i)] * 3 for i in range(5)]
    assert placement.refreshes == 1 and placement.last_tasks == len(placement.groups())
    placement.run(_here, (0.0,))
    assert placement.refreshes == 1                              # the grouping was right: kept
    got = placement.run(_elsewhere, (1.0,))
    assert [g.tolist() for g in got] == [[i + 1.0] * 3 for i in range(5)]      # answers in the futures' order
    placement.groups()
    assert placement.refreshes == 2


def test_a_failed_call_is_asked_again_of_new_holders(client2, tmp_path):
    """A call that fails as a lost worker's does (OSError, RuntimeError) is asked again after the grouping is
    read again and new holders are made; past ``retries`` it is a DistributedTrainingError; an error of the
    data (ValueError) is raised as it is, at once."""
    futures = [client2.submit(np.full, 3, float(i), pure=False) for i in range(4)]
    placement = Placement(client2, futures, retries=2)
    first = placement.holders()
    got = placement.run(_fails_once, (str(tmp_path / "failed"),))
    assert [g.tolist() for g in got] == [[float(i)] * 3 for i in range(4)]
    assert placement.refreshes == 2 and placement.holders() is not first
    with pytest.raises(DistributedTrainingError, match="OSError: worker gone"):
        placement.run(_always_fails, (OSError,))
    assert placement.refreshes == 2 + 2                          # two retries, each reading the grouping again
    with pytest.raises(ValueError, match="bad data"):
        placement.run(_always_fails, (ValueError,))
    assert placement.refreshes == 5                              # read once (it was forgotten), not asked again
    placement.close()


def _fails_once(marker, *arrays):
    from pyterrier_svmmap.scale.shards import worker_address
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("worker lost")
    return worker_address(), list(arrays)


def _always_fails(kind, *arrays):
    raise kind("worker gone" if kind is OSError else "bad data")


def _here(shift, *arrays):
    from pyterrier_svmmap.scale.shards import worker_address
    return worker_address(), [a + shift for a in arrays]


def _elsewhere(shift, *arrays):
    return "tcp://elsewhere:1", [a + shift for a in arrays]


def test_the_local_cluster_workers_take_large_blocks_from_the_heap(monkeypatch):
    """executor="local" starts its workers with MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ at 32 MiB
    (Dask's MALLOC_TRIM_THRESHOLD_ of 64 kB turns glibc's dynamic mmap threshold off and gives the heap back
    after every iteration), also when an earlier LocalCluster left Dask's value in os.environ (which Dask's
    nanny prefers to its configuration), and leaves the caller's environment and Dask configuration as they
    were."""
    import dask
    from pyterrier_svmmap.scale.client import WORKER_ENVIRON, close_client, dask_client
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")                   # as a plain LocalCluster leaves it
    before = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    client, owned = dask_client("local", workers=1)
    try:
        seen = list(client.run(_malloc_environ).values())
    finally:
        close_client(client)
    assert owned and seen == [(WORKER_ENVIRON["MALLOC_MMAP_THRESHOLD_"], WORKER_ENVIRON["MALLOC_TRIM_THRESHOLD_"])]
    assert seen == [(str(32 * 1024 * 1024), str(32 * 1024 * 1024))]
    assert dict(dask.config.get("distributed.nanny.pre-spawn-environ")) == before
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536" and "MALLOC_MMAP_THRESHOLD_" not in os.environ


def _malloc_environ():
    return os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_a_fit_leaves_the_clients_settings_alone(client2):
    """The oracle calls go to the shard holders, not through the client's batched stream to the scheduler:
    its interval (Dask's 10 ms) is the same during and after a fit."""
    before = client2.scheduler_comm.interval
    seen = []
    original = ShardOracle.__call__

    def call(self, w):
        seen.append(client2.scheduler_comm.interval)
        return original(self, w)
    ShardOracle.__call__ = call
    try:
        raw, labels, offsets = _data(5)
        StructSVMRanker(C=1.0, n_bins=5, executor=executor_for(client2), queries_per_shard=10).fit(raw, labels, offsets)
    finally:
        ShardOracle.__call__ = original
    assert seen and set(seen) == {before} and client2.scheduler_comm.interval == before
