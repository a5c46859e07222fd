"""The bins' thresholds (pyterrier_svmmap.features.thresholds): the quantiles by hand, their padding, each
query's top candidates (ties at the boundary kept), and ``threshold_depth`` placing the thresholds among
them."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap.features.thresholds import function_thresholds, top_of_queries

nan, inf = np.nan, np.inf


def col(*values):
    return np.array(values, dtype=float)[:, None]


def quantile_thresholds(values, n_bins):
    """One function's thresholds: :func:`function_thresholds` of a one-column sample."""
    return function_thresholds(np.asarray(values, dtype=float)[:, None], n_bins)[0]


def test_quantile_thresholds_lower_quantiles_first_minus_inf_padding_plus_inf():
    # 4 values, n_bins 4: quantiles 1/4, 2/4, 3/4 by method "lower" sit at sorted positions
    # floor(0.75)=0, floor(1.5)=1, floor(2.25)=2 → 1, 2, 3 (linear interpolation would give 1.75, ...)
    np.testing.assert_array_equal(quantile_thresholds(col(4, 2, nan, 1, 3)[:, 0], 4), [-inf, 1, 2, 3])
    # few distinct values: 5, 5, 5, 7 → quantiles 5, 5, 5 → one distinct threshold, the rest +inf
    np.testing.assert_array_equal(quantile_thresholds(np.array([5.0, 7, 5, 5]), 4), [-inf, 5, inf, inf])
    # nothing retrieved: only −inf, padded
    np.testing.assert_array_equal(quantile_thresholds(np.array([nan, nan]), 3), [-inf, inf, inf])
    # one bin: just "retrieved or not"
    np.testing.assert_array_equal(quantile_thresholds(np.array([1.0, 2.0]), 1), [-inf])


def test_top_of_queries_keeps_ties_at_the_boundary_and_nan():
    # q0, depth 2: the 2nd highest is 3 and both 3s are kept; 1 is dropped, NaN stays NaN
    # q1: the 2nd highest of 2, 2, 2 is 2 → all kept
    # q2: NaN, 4, 4, 0 → 4, 4 kept, 0 dropped (NaN never counts among the top)
    raw = col(5, 3, 3, 1, nan,   2, 2, 2,   nan, 4, 4, 0)
    offsets = np.array([0, 5, 8, 12])
    got = top_of_queries(raw, offsets, 2)[:, 0]
    np.testing.assert_array_equal(got, [5, 3, 3, nan, nan,   2, 2, 2,   nan, 4, 4, nan])
    # depth at least every query's size: unchanged
    np.testing.assert_array_equal(top_of_queries(raw, offsets, 5), raw)


def test_threshold_depth_puts_the_thresholds_among_each_querys_top_candidates():
    from pyterrier_svmmap.features.encoder import FeatureEncoder
    rng = np.random.default_rng(0)
    offsets = np.array([0, 500, 1000])
    raw = rng.exponential(size=(1000, 2))                    # many low scores, a few high ones
    everywhere = FeatureEncoder("bins", n_bins=10).fit(raw, offsets).thresholds_
    top = FeatureEncoder("bins", n_bins=10, threshold_depth=20).fit(raw, offsets).thresholds_
    top20 = np.sort(raw[:500, 0])[-20:].min()
    assert (top[0, 1:] >= min(top20, np.sort(raw[500:, 0])[-20:].min())).all()
    assert np.median(top[0, 1:]) > np.median(everywhere[0, 1:])
    with pytest.raises(ValueError, match="threshold_depth"):
        FeatureEncoder("bins", threshold_depth=0)


def test_top_of_queries_keeps_each_querys_top_scores_per_function():
    from pyterrier_svmmap.features.thresholds import top_of_queries
    rng = np.random.default_rng(0)
    for _ in range(100):
        sizes = rng.integers(1, 30, rng.integers(1, 6))
        offsets = np.r_[0, np.cumsum(sizes)]
        raw = rng.normal(size=(offsets[-1], 3))
        raw[rng.random(raw.shape) < 0.3] = np.nan
        depth = int(rng.integers(1, 10))
        got = top_of_queries(raw, offsets, depth)
        for q in range(len(sizes)):
            for f in range(3):
                col = raw[offsets[q]:offsets[q + 1], f]
                kept = got[offsets[q]:offsets[q + 1], f]
                expected = np.sort(col[~np.isnan(col)])[::-1][:depth]
                np.testing.assert_array_equal(np.sort(kept[~np.isnan(kept)])[::-1], expected)
