"""φ's per-query score transforms (pyterrier_svmmap.features.transforms) pinned by hand-computed values:
percentiles and their ties, min–max normalisation, each query's range; a missing score (NaN) stays NaN.

Every expected number is worked out by hand in a comment."""
from __future__ import annotations

import numpy as np

from pyterrier_svmmap.features.transforms import minmax_normalise, percentiles, query_min_max

nan = np.nan


def col(*values):
    return np.array(values, dtype=float)[:, None]


def test_percentiles_ties_share_the_larger_value_top_is_one_nan_stays_nan():
    # q0: retrieved scores 3, 1, 3, 2 (4 of them): #{≤3}=4 → 1, #{≤1}=1 → 1/4, #{≤2}=2 → 2/4
    # q1: three equal scores: all share the larger percentile 3/3 = 1
    # q2: a single retrieved candidate → 1; the other is NaN
    raw = col(3, 1, 3, nan, 2,   5, 5, 5,   nan, -7)
    offsets = np.array([0, 5, 8, 10])
    got = percentiles(raw, offsets)[:, 0]
    np.testing.assert_array_equal(got, [1, 0.25, 1, nan, 0.5,   1, 1, 1,   nan, 1])


def test_percentiles_ties_in_the_middle_and_per_function_columns():
    # f0: scores 1, 2, 2, 2, 9 → 1/5, 4/5, 4/5, 4/5, 5/5 (the three 2s share #{≤2} = 4)
    # f1: scores 4, 4, NaN, 0, 4 → retrieved 4: 0 → 1/4, the three 4s → 4/4
    raw = np.array([[1, 4], [2, 4], [2, nan], [2, 0], [9, 4]], dtype=float)
    got = percentiles(raw, np.array([0, 5]))
    np.testing.assert_array_equal(got, [[0.2, 1], [0.8, 1], [0.8, nan], [0.8, 0.25], [1, 1]])


def test_minmax_normalise_constant_function_is_one_nothing_retrieved_stays_nan():
    # f0, q0: 2, 4, NaN, 6 → (x−2)/4 = 0, 0.5, NaN, 1;  q1: constant 7, 7 → 1, 1
    # f1, q0: −1, −3, −2, NaN → (x+3)/2 = 1, 0, 0.5, NaN;  q1: retrieved nothing → NaN, NaN
    raw = np.array([[2, -1], [4, -3], [nan, -2], [6, nan], [7, nan], [7, nan]], dtype=float)
    offsets = np.array([0, 4, 6])
    got = minmax_normalise(raw, offsets)
    np.testing.assert_array_equal(got, [[0, 1], [0.5, 0], [nan, 0.5], [1, nan], [1, nan], [1, nan]])
    # a single retrieved candidate is a constant function too
    np.testing.assert_array_equal(minmax_normalise(col(nan, 3.5, nan), np.array([0, 3]))[:, 0], [nan, 1, nan])


def test_query_min_max_per_query_and_function_nan_when_nothing_retrieved():
    raw = np.array([[2, -1], [4, -3], [nan, -2], [6, nan], [7, nan], [7, nan]], dtype=float)
    lo, hi = query_min_max(raw, np.array([0, 4, 6]))
    np.testing.assert_array_equal(lo, [[2, -3], [7, nan]])
    np.testing.assert_array_equal(hi, [[6, -1], [7, nan]])
