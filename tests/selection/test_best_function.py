"""``selection.best_function`` and its compiled kernel (measures/_kernels.py ``function_ap``): the base
function with the best training MAP, bit for bit as ``average_precision`` sorts."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap.measures import average_precision


@pytest.mark.parametrize("seed", range(3))
def test_best_function_kernel_gives_the_sorted_aps_bit_for_bit(seed):
    """selection.best_function: the kernel's per-query APs equal average_precision's (NaN scores last,
    ties by position, empty queries, queries without relevant candidates), and so does its choice, whether
    it counts (few relevant candidates) or sorts (more than COUNT_RELEVANT_MAX)."""
    from pyterrier_svmmap import _jit
    import pyterrier_svmmap.selection as selection
    kernels = _jit.load("measures._kernels")
    rng = np.random.default_rng(seed)
    for _ in range(60):
        sizes = rng.integers(0, 30, rng.integers(1, 10))
        offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        raw = np.round(rng.normal(size=(offsets[-1], rng.integers(1, 6))), 1)
        raw[rng.random(raw.shape) < 0.3] = np.nan
        labels = (rng.random(offsets[-1]) < rng.uniform(0, 0.6)).astype(float)
        filled = np.where(np.isnan(raw), -np.inf, raw)
        want = np.array([average_precision(filled[:, f], labels, offsets) for f in range(raw.shape[1])])
        got = np.empty_like(want)
        if len(raw):
            kernels.function_ap(np.ascontiguousarray(raw), np.ascontiguousarray(labels > 0), offsets, got)
            assert np.array_equal(got, want)
        assert selection.best_function(raw, labels, offsets) == int(np.argmax(want.mean(axis=1)))
    n = 2 * kernels.COUNT_RELEVANT_MAX + 100
    raw = np.round(rng.normal(size=(n, 3)), 1)
    raw[rng.random(raw.shape) < 0.1] = np.nan
    labels = (rng.random(n) < 0.7).astype(float)        # more relevant candidates than the kernel counts
    offsets = np.array([0, 40, n], dtype=np.int64)
    filled = np.where(np.isnan(raw), -np.inf, raw)
    want = np.array([average_precision(filled[:, f], labels, offsets) for f in range(raw.shape[1])])
    got = np.empty_like(want)
    kernels.function_ap(np.ascontiguousarray(raw), np.ascontiguousarray(labels > 0), offsets, got)
    assert np.array_equal(got, want)
    assert selection.best_function(raw, labels, offsets) == int(np.argmax(want.mean(axis=1)))


@pytest.mark.parametrize("seed", range(3))
def test_fold_best_functions_are_each_folds_own_choice_from_one_pass(seed, monkeypatch):
    """reference.fold_best_functions: fold k's function is best_function of the queries outside fold k, the
    whole set's is cached for queries_best_function, the APs are computed once, and a first stage wins."""
    import pyterrier_svmmap.selection.reference as reference
    from pyterrier_svmmap.queries import Queries
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 30, 12)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    raw = np.round(rng.normal(size=(offsets[-1], 5)), 1) + rng.normal(size=5) * np.arange(12).repeat(sizes)[:, None]
    labels = (rng.random(offsets[-1]) < 0.3).astype(float)
    fold = rng.integers(0, 3, 12)
    parts = [Queries(raw, labels, offsets).subset(fold != k) for k in range(3)]
    want = [reference.best_function(p.raw, p.labels, p.offsets) for p in parts]
    assert len(set(want)) > 1 or seed > 0              # the folds can disagree
    calls = []
    real = reference.function_aps
    monkeypatch.setattr(reference, "function_aps", lambda *a: calls.append(1) or real(*a))
    queries = Queries(raw, labels, offsets)
    assert reference.fold_best_functions(queries, fold, 3) == want
    cached = reference.queries_best_function(queries)
    assert len(calls) == 1
    assert cached == reference.best_function(raw, labels, offsets)
    first_stage = Queries(raw, labels, offsets, reference=4)
    assert reference.fold_best_functions(first_stage, fold, 3) == [4, 4, 4]
