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
