"""``n_jobs``: the threads of one process (:mod:`pyterrier_svmmap.threads`) never change the model.

Every piece of parallel work (rows of Φw, base functions of Φᵀc, blocks of queries of the argmaxes, the
thresholds, the tie-break function) is checked against one thread bit for bit, with pieces forced small
(``MIN_PER_PIECE`` = 1) so that small test data really is cut; then whole fits with n_jobs = 1, 2, 3 give
identical weights and identical per-iteration objectives.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.matrices import BinnedBlock
from pyterrier_svmmap.features.thresholds import function_thresholds, top_of_queries
from pyterrier_svmmap.svm.losses import get_loss
from pyterrier_svmmap.measures import rank_within_queries
from pyterrier_svmmap.selection import best_function
from pyterrier_svmmap.svm.ranker import StructSVMRanker

import tests.oracles.features_reference as reference


@pytest.fixture
def small_pieces(monkeypatch):
    """Cut work into as many pieces as there are threads, however small it is."""
    monkeypatch.setattr(threads, "MIN_PER_PIECE", 1)


def ranking_data(n_q=23, n_funcs=5, seed=0, ties=False):
    """Queries of uneven sizes, 10 % missing scores, ~15 % relevant (binned-like ties with ``ties``)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 60, n_q)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    n = int(offsets[-1])
    labels = (rng.random(n) < 0.15).astype(float)
    raw = rng.standard_normal((n, n_funcs)) + 0.8 * labels[:, None]
    if ties:
        raw = np.round(raw * 2) / 2
    raw[rng.random(raw.shape) < 0.1] = np.nan
    return raw, labels, offsets


# ------------------------------------------------------------------------------------------------
# n_jobs semantics and no global state
# ------------------------------------------------------------------------------------------------
def test_effective_n_jobs_follows_scikit_learn(monkeypatch):
    monkeypatch.setattr(threads, "cpu_count", lambda: 8)
    assert threads.effective_n_jobs(None) == 8
    assert threads.effective_n_jobs(1) == 1
    assert threads.effective_n_jobs(3) == 3
    assert threads.effective_n_jobs(-1) == 8
    assert threads.effective_n_jobs(-2) == 7
    assert threads.effective_n_jobs(-20) == 1
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="n_jobs"):
            threads.effective_n_jobs(bad)


def test_using_is_per_block_and_per_thread():
    assert threads.current() == 1                     # outside any block: one thread
    seen = []
    with threads.using(3):
        assert threads.current() == 3
        t = threading.Thread(target=lambda: seen.append(threads.current()))
        t.start()
        t.join()
        with threads.using(1):
            assert threads.current() == 1
        assert threads.current() == 3
    assert threads.current() == 1
    assert seen == [1]                                # another thread is not affected


def test_run_keeps_task_order_and_raises_after_all_tasks_end():
    with threads.using(3):
        assert threads.run(lambda i: i * i, 7) == [0, 1, 4, 9, 16, 25, 36]
        ended = []

        def task(i):
            if i in (2, 4):
                raise KeyError(f"piece {i}")
            ended.append(i)
        with pytest.raises(KeyError, match="piece 2"):              # the first piece's error, whoever ran it
            threads.run(task, 6)
        assert sorted(ended) == [0, 1, 3, 5]


def test_run_concurrently_interrupted_runs_no_new_task_and_returns_after_the_started_ones():
    """A Ctrl-C in the calling thread: the tasks not started never run, and the call raises once the started ones
    have ended, so that nothing goes on (or logs) after the command says it was interrupted."""
    import _thread
    started, ended = [], []

    def task(i):
        started.append(i)
        if i == 0:
            _thread.interrupt_main()
        time.sleep(0.3)
        ended.append(i)
    with threads.using(2):
        with pytest.raises(KeyboardInterrupt):
            threads.run_concurrently(task, 6, after=[[], [], [0], [], [], []])
        assert sorted(ended) == sorted(started) and len(started) < 6
        then = list(started)
        time.sleep(0.5)
        assert started == then                          # nothing started afterwards


def test_run_concurrently_interrupted_while_submitting_never_starts_that_task(monkeypatch):
    """A Ctrl-C that cuts the submission of task 2 after the pool queued it (so that no future of it can be
    cancelled): task 2 still never runs, once the two started tasks free their threads."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    release, started = threading.Event(), []
    pool = ThreadPoolExecutor(2)                                # two threads, both kept busy by tasks 0 and 1

    class CutPool:
        def submit(self, fn, *args):
            future = pool.submit(fn, *args)
            if args == (2,):
                threading.Timer(0.3, release.set).start()       # the busy threads go free after the Ctrl-C
                raise KeyboardInterrupt
            return future
    monkeypatch.setattr(threads, "_executor", lambda k: CutPool())

    def task(i):
        started.append(i)
        release.wait(5)
    with threads.using(2):
        with pytest.raises(KeyboardInterrupt):
            threads.run_concurrently(task, 4)
    pool.shutdown(wait=True)                                    # task 2, queued, has been taken and has returned
    assert sorted(started) == [0, 1]


def test_run_concurrently_starts_a_task_after_the_tasks_it_waits_for():
    """Task 2 waits for task 0, a slow one, while task 1 (free) runs beside it; a failed task raises first."""
    import time
    events = []

    def task(i):
        if i == 0:
            time.sleep(0.2)
        events.append(("start" if i else "end", i))
        return i
    with threads.using(2):
        assert threads.run_concurrently(task, 3, after=[[], [], [0]]) == [0, 1, 2]
        assert events.index(("end", 0)) < events.index(("start", 2))
        assert events.index(("start", 1)) < events.index(("end", 0))

        def failing(i):
            if i == 0:
                raise KeyError("task 0")
            return i
        with pytest.raises(KeyError, match="task 0"):
            threads.run_concurrently(failing, 2, after=[[], [0]])
        with pytest.raises(ValueError, match="earlier tasks"):
            threads.run_concurrently(task, 2, after=[[1], []])


def test_run_does_not_wait_for_a_pool_thread_that_has_not_started():
    """Pieces go to the threads that come free: with every pool thread busy elsewhere (a core taken by another
    process), the calling thread runs all the pieces and returns, rather than waiting for its helper."""
    with threads.using(2):
        threads.run(lambda i: i, 2)                              # the pool exists
    busy, release = [], threading.Event()
    for _ in range(threads._pool_size):
        busy.append(threads._executor(1).submit(release.wait))
    ran, got = [], []

    def call():
        with threads.using(2):
            got.append(threads.run(lambda i: ran.append(threading.get_ident()) or i, 5))
    caller = threading.Thread(target=call)
    caller.start()
    caller.join(timeout=60)
    finished = not caller.is_alive()
    release.set()
    caller.join()
    for f in busy:
        f.result()
    assert finished and got == [[0, 1, 2, 3, 4]]
    assert set(ran) == {caller.ident}


def test_query_bounds_cover_the_queries_in_order():
    offsets = np.r_[0, np.cumsum([5, 0, 300, 2, 2, 90, 0, 1])]
    for k in range(1, 12):
        qb = threads.query_bounds(offsets, k)
        assert qb[0] == 0 and qb[-1] == len(offsets) - 1 and (np.diff(qb) >= 0).all()


@pytest.mark.filterwarnings("ignore:skipping")
def test_fit_leaves_numba_thread_setting_alone():
    import numba
    before = numba.get_num_threads()
    StructSVMRanker(C=1.0, n_jobs=2).fit(*ranking_data(n_q=6))
    assert numba.get_num_threads() == before


# ------------------------------------------------------------------------------------------------
# every parallel piece: the same bits for 1 and 3 threads
# ------------------------------------------------------------------------------------------------
def test_binned_products_do_not_depend_on_threads(small_pieces):
    rng = np.random.default_rng(1)
    block = BinnedBlock(rng.integers(0, 8, (1001, 13)), 7)
    w, c = rng.standard_normal(block.dim), rng.standard_normal(1001)
    with threads.using(1):
        d1, r1 = block.dot(w), block.rdot(c)
    with threads.using(3):
        d3, r3 = block.dot(w), block.rdot(c)
    assert np.array_equal(d1, d3) and np.array_equal(r1, r3)
    assert np.array_equal(d1, reference.binned_dot(block, w)) and np.array_equal(r1, reference.binned_rdot(block, c))


def test_binned_spread_does_not_depend_on_threads(small_pieces):
    """Per query Σ_d ‖φ(d) − φ̄_q‖² of a bin-code block: the same bits on 1 and 3 threads, and the spread of its
    explicit indicators."""
    rng = np.random.default_rng(2)
    block = BinnedBlock(rng.integers(0, 8, (1001, 13)), 7)
    offsets = np.r_[0, np.cumsum(rng.integers(0, 90, 20)), 1001]
    with threads.using(1):
        one = block.query_sumsq(offsets)
    with threads.using(3):
        assert np.array_equal(block.query_sumsq(offsets), one)
    phi = (block.codes[:, :, None] > np.arange(7)).reshape(1001, -1).astype(float)
    want = [((phi[a:b] - phi[a:b].mean(axis=0)) ** 2).sum() if b > a else 0.0 for a, b in zip(offsets, offsets[1:])]
    np.testing.assert_allclose(one, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("depth", [1, 7, 40])
def test_top_of_queries_and_thresholds_do_not_depend_on_threads(small_pieces, depth):
    raw, _, offsets = ranking_data(ties=True)
    ref_top = reference.top_of_queries(raw, offsets, depth)
    for n_jobs in (1, 3):
        with threads.using(n_jobs):
            top = top_of_queries(raw, offsets, depth)
            for n_bins in (1, 4, 50):
                ref = reference.function_thresholds(top, n_bins)
                assert np.array_equal(function_thresholds(top, n_bins), ref)
        np.testing.assert_array_equal(top, ref_top)


def test_encoder_and_tie_function_do_not_depend_on_threads(small_pieces):
    raw, labels, offsets = ranking_data(ties=True)
    out = {}
    for n_jobs in (1, 3):
        with threads.using(n_jobs):
            enc = FeatureEncoder("bins", 9, threshold_depth=20).fit(raw, offsets)
            out[n_jobs] = (enc.thresholds_, enc.bin_codes(raw, offsets), best_function(raw, labels, offsets))
    assert np.array_equal(out[1][0], out[3][0]) and np.array_equal(out[1][1], out[3][1])
    assert out[1][2] == out[3][2]


def test_per_query_scalings_do_not_depend_on_threads(small_pieces):
    from pyterrier_svmmap.features.transforms import minmax_normalise, percentiles
    raw, _, offsets = ranking_data(ties=True)
    for scale, oracle in ((minmax_normalise, reference.minmax_normalise), (percentiles, reference.percentiles)):
        ref = oracle(raw, offsets)
        for n_jobs in (1, 3):
            with threads.using(n_jobs):
                np.testing.assert_array_equal(scale(raw, offsets), ref)


@pytest.mark.parametrize("ties", [False, True])
def test_score_order_does_not_depend_on_threads(small_pieces, ties):
    rng = np.random.default_rng(2)
    # equal sizes and uneven ones, many of them; queries over 16 candidates with many ties, whose order a sort
    # leaves in any order (so each query's must depend on that query alone)
    for sizes in ([300] * 9, [1, 400, 3, 0, 380, 250, 40, 399], rng.integers(0, 120, 100)):
        offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        s = rng.integers(0, 4, offsets[-1]).astype(float) if ties else rng.standard_normal(offsets[-1])
        with threads.using(1):
            one = rank_within_queries(s, offsets)
        with threads.using(3):
            assert np.array_equal(rank_within_queries(s, offsets), one)


LOSSES = ["map", "roc", "ndcg", "ndcg@3", "mrr@5", "dorm@3", "acc", "acc2"]


@pytest.mark.parametrize("name", LOSSES + ["combo"])
def test_batch_violations_do_not_depend_on_threads(small_pieces, name):
    loss = get_loss(name, losses=["map", "ndcg@3", "mrr@5"]) if name == "combo" else get_loss(name)
    _, labels, offsets = ranking_data(seed=3)
    s = np.round(np.random.default_rng(4).standard_normal(len(labels)), 1)       # ties
    with threads.using(1):
        d1, c1 = loss.batch_violation(s, labels, offsets)
    with threads.using(3):
        d3, c3 = loss.batch_violation(s, labels, offsets)
    assert np.array_equal(d1, d3) and np.array_equal(c1, c3)


def test_map_batch_on_queries_inside_the_candidates(small_pieces):
    """Offsets that start after the first candidate and end before the last: the queries' coefficients are those
    of the queries alone, the candidates outside every query get 0, on any number of threads (relevant: a label
    above 0, however small)."""
    _, labels, offsets = ranking_data(seed=5)
    s = np.round(np.random.default_rng(6).standard_normal(len(labels)), 1)
    inner = offsets[3:-2]
    a, b = int(inner[0]), int(inner[-1])
    alone = get_loss("map").batch_violation(s[a:b], labels[a:b], inner - a)
    for n_jobs in (1, 3):
        with threads.using(n_jobs):
            deltas, coef = get_loss("map").batch_violation(s, labels * 0.3, inner)
        assert np.array_equal(deltas, alone[0]) and np.array_equal(coef[a:b], alone[1])
        assert not coef[:a].any() and not coef[b:].any()


# ------------------------------------------------------------------------------------------------
# whole fits: the model does not depend on n_jobs
# ------------------------------------------------------------------------------------------------
FITS = [dict(C=1.0), dict(C=10.0, loss="ndcg@10"), dict(C=1.0, features="raw"), dict(C=1.0, binning="percentile"),
        dict(C=1.0, features="minmax", loss="acc2"),
        dict(C=[0.1, 1.0, 10.0], features="bins+raw"),
        dict(C=1.0, loss="combo", loss_params={"losses": ["map", "mrr@5"]}),
        dict(C=[1.0, 10.0], cv=3)]


@pytest.mark.parametrize("params", FITS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_model_does_not_depend_on_n_jobs(small_pieces, params):
    raw, labels, offsets = ranking_data(n_q=30, ties=True)
    valid = ranking_data(n_q=8, seed=9) if isinstance(params["C"], list) and "cv" not in params else None
    fits = [StructSVMRanker(n_bins=12, n_jobs=n, **params).fit(raw, labels, offsets, valid=valid) for n in (1, 2, 3)]
    for other in fits[1:]:
        assert np.array_equal(fits[0].coef_, other.coef_)
        assert np.array_equal(fits[0].coefs_, other.coefs_)
        for key in ("primal", "dual", "violation"):
            assert [h[key] for h in fits[0].history_] == [h[key] for h in other.history_]
        assert np.array_equal(fits[0].decision_function(raw, offsets), other.decision_function(raw, offsets))


@pytest.mark.filterwarnings("ignore:skipping")
def test_n_jobs_is_a_parameter_but_not_of_the_model(tmp_path):
    r = StructSVMRanker(C=1.0, n_jobs=2)
    assert r.get_params()["n_jobs"] == 2 and "n_jobs" not in repr(r)
    assert "n_jobs" not in StructSVMRanker.MODEL_PARAMS
    with pytest.raises(ValueError, match="n_jobs"):
        StructSVMRanker(n_jobs=0).check_params()
    r.fit(*ranking_data(n_q=6))
    meta, _ = r.get_state()
    assert "n_jobs" not in meta["params"]


def test_estimators_take_n_jobs(tmp_path):
    pytest.importorskip("pyterrier")
    from pyterrier_svmmap import StructSVM, SVMMap
    for cls in (SVMMap, StructSVM):
        est = cls(C=1.0, n_jobs=-1)
        assert est.get_params()["n_jobs"] == -1 and "n_jobs" not in repr(est)
        assert est._ranker().n_jobs == -1
        with pytest.raises(ValueError, match="n_jobs"):
            cls(n_jobs=0).check_params()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_runs_threads_of_its_own():
    """A child forked after the pool started has none of its threads: work must not wait on them."""
    import multiprocessing
    with threads.using(2):
        assert threads.run(lambda i: i, 2) == [0, 1]             # the parent's pool exists now
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_run_two_pieces).get(timeout=60)
    assert got == [0, 1]


def _run_two_pieces():
    with threads.using(2):
        return threads.run(lambda i: i, 2)


def test_shard_sums_are_added_in_shard_order():
    """(a, b) = ((p0 + p1) + p2) / n, left to right, whatever computed the parts: an order in which floating-point
    sums differ (1e16 + 1 − 1e16 = 0 but 1e16 − 1e16 + 1 = 1) tells any other order apart."""
    from pyterrier_svmmap.svm.cutting_plane import reduce_shard_sums
    parts = [[(np.array([1e16, 1.0]), 1e16)], [(np.array([1.0, 1e16]), 1.0)], [(np.array([-1e16, -1e16]), -1e16)]]
    (a, b), = reduce_shard_sums(parts, 2)
    assert a.tolist() == [((1e16 + 1.0) - 1e16) / 2, ((1.0 + 1e16) - 1e16) / 2] == [0.0, 0.0]
    assert b == ((1e16 + 1.0) - 1e16) / 2
    assert [p[0][0].tolist() for p in parts] == [[1e16, 1.0], [1.0, 1e16], [-1e16, -1e16]]   # inputs untouched


def test_limit_caps_every_using_block_inside_it():
    with threads.limit(2):
        with threads.using(None):
            assert threads.current() == min(2, threads.cpu_count())
        with threads.using(8):
            assert threads.current() == 2
            with threads.limit(1), threads.using(8):
                assert threads.current() == 1
        with threads.limit(5), threads.using(8):
            assert threads.current() == 2                 # an inner limit never raises the outer one
    with threads.using(3):
        assert threads.current() == 3                     # the cap ended with its block


@pytest.mark.parametrize("n_shards", [2, 3, 7])
def test_small_shards_are_spread_over_the_threads(n_shards, monkeypatch):
    """Shards too small to cut are spread among the threads, a group of consecutive shards per thread
    (balanced by candidates), and each shard's sums are those of the one-thread pass, in shard order; a
    fit on such shards is the same for every n_jobs."""
    from pyterrier_svmmap.svm.cutting_plane import many_shard_sums, shard_sums
    raw, labels, offsets = ranking_data(n_q=40, seed=3)
    enc = FeatureEncoder("bins", 8).fit(raw, offsets)
    X = enc.transform(raw, offsets)
    cuts = np.linspace(0, 40, n_shards + 1).astype(int)
    shards = [(enc.transform(raw[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a]),
               labels[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a]) for a, b in zip(cuts[:-1], cuts[1:])]
    losses = [get_loss("map")]
    w = np.random.default_rng(0).standard_normal(X.dim)
    serial = [shard_sums(*s, w, losses) for s in shards]
    seen = []
    real_run = threads.run

    def spy(task, n_tasks):
        seen.append((n_tasks, threads.current()))
        return real_run(task, n_tasks)
    monkeypatch.setattr(threads, "run", spy)
    for n in (1, 2, 3):
        seen.clear()
        with threads.using(n):
            got = many_shard_sums(shards, w, losses)
        assert len(got) == n_shards
        for g, s in zip(got, serial):
            assert [(a.tobytes(), b) for a, b in g] == [(a.tobytes(), b) for a, b in s]
        if n > 1:
            assert seen[0] == (min(n, n_shards), n)                  # one group per thread, not per shard
            assert all(c == 1 for _, c in seen[1:])                  # inside a group: one thread per shard
    fits = [StructSVMRanker(C=10.0, n_bins=8, n_jobs=n, queries_per_shard=6).fit(raw, labels, offsets)
            for n in (1, 2, 3)]
    assert all(np.array_equal(fits[0].coef_, f.coef_) for f in fits[1:])
