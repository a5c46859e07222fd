"""φ as ``FeatureEncoder`` (pyterrier_svmmap.features.encoder) builds it, pinned by hand-computed values:
missing scores in each block, the raw block's normalisation, bin codes at threshold boundaries, feature
names, and the blocks in the order given.

Every expected number is worked out by hand in a comment."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap.features.encoder import FeatureEncoder

nan, inf = np.nan, np.inf


def col(*values):
    return np.array(values, dtype=float)[:, None]


#  q0: f0 = 2, NaN, 6      f1 = NaN, −1, −3
#  q1: f0 = NaN, NaN       f1 = 5, 4
RAW = np.array([[2, nan], [nan, -1], [6, -3], [nan, 5], [nan, 4]], dtype=float)
OFFSETS = np.array([0, 3, 5])


def test_raw_block_fills_missing_with_the_querys_lowest_score_or_zero_and_adds_indicators():
    # columns raw(a), raw(b), retrieved(a), retrieved(b). Missing f1 in q0 → q0's lowest f1 = −3 (not 0,
    # not the highest −1); f0 retrieved nothing in q1 → 0.
    X = FeatureEncoder("raw", normalise=None).fit(RAW, OFFSETS).transform(RAW, OFFSETS).dense()
    np.testing.assert_array_equal(X, [[2, -3, 1, 0],
                                      [2, -1, 0, 1],
                                      [6, -3, 1, 1],
                                      [0, 5, 0, 1],
                                      [0, 4, 0, 1]])


def test_normalised_raw_block_is_the_score_above_the_querys_lowest_in_within_query_spreads():
    # σ_f pools the squared deviations from each query's mean: f0 {2, 6} → 8 / 2 → σ = 2;
    # f1 {−1, −3} and {5, 4} → (2 + 0.5) / 4 → σ = √0.625. z = (f − lowest of the query) / σ, missing → 0.
    enc = FeatureEncoder("raw").fit(RAW, OFFSETS)
    s1 = np.sqrt(0.625)
    np.testing.assert_allclose(1 / enc.column_scale_ / enc.prescale_, [2.0, s1], rtol=1e-15)
    np.testing.assert_allclose(enc.transform(RAW, OFFSETS).dense(), [[0, 0, 1, 0],
                                                                     [0, 2 / s1, 0, 1],
                                                                     [2, 0, 1, 1],
                                                                     [0, 1 / s1, 0, 1],
                                                                     [0, 0, 0, 1]], rtol=1e-15, atol=0)


def test_minmax_block_missing_is_zero_and_adds_indicators():
    # q0 f0: (2, ·, 6) → 0, missing→0, 1;  q0 f1: (·, −1, −3) → missing→0, 1, 0
    # q1 f0: nothing → 0, 0;               q1 f1: (5, 4) → 1, 0
    X = FeatureEncoder("minmax").fit(RAW, OFFSETS).transform(RAW, OFFSETS).dense()
    np.testing.assert_array_equal(X, [[0, 0, 1, 0],
                                      [0, 1, 0, 1],
                                      [1, 0, 1, 1],
                                      [0, 1, 0, 1],
                                      [0, 0, 0, 1]])


def test_bin_codes_a_score_equal_to_a_threshold_does_not_exceed_it():
    # training scores 1, 2, 3, 4 → thresholds −inf, 1, 2, 3 (test_thresholds.py)
    enc = FeatureEncoder("bins", n_bins=4, threshold_depth=None).fit(col(1, 2, 3, 4), np.array([0, 4]))
    np.testing.assert_array_equal(enc.thresholds_, [[-inf, 1, 2, 3]])
    x = col(1, 2, 3, 0.5, 3.5, nan, 2.0000001, 100)
    codes = enc.bin_codes(x, np.array([0, len(x)]))[:, 0]
    #        1 > −inf only; 2 > −inf, 1; 3 > −inf, 1, 2; 0.5 > −inf; 3.5 > all; missing 0; just above 2 → 3
    np.testing.assert_array_equal(codes, [1, 2, 3, 1, 4, 0, 3, 4])
    # φ of the bins block is the indicator matrix 1[x > k], missing → all zero
    X = enc.transform(x, np.array([0, len(x)])).dense()
    expected = np.array([[v > k for k in (-inf, 1, 2, 3)] for v in x[:, 0]], dtype=float)
    np.testing.assert_array_equal(X, expected)


def test_bin_codes_percentile_and_minmax_binning_at_even_thresholds():
    # thresholds 0, 1/4, 2/4, 3/4 for both. One query, scores 1, 2, 3, 4:
    #   percentiles 1/4, 2/4, 3/4, 1 → codes 1 (1/4 exceeds k₀ = 0, not k₁ = 1/4), 2, 3, 4
    #   min–max 0, 1/3, 2/3, 1 → codes 0 (0 does not exceed the threshold 0: like a missing score), 2, 3, 4
    x, off = col(1, 2, 3, 4, nan), np.array([0, 5])
    pct = FeatureEncoder("bins", n_bins=4, binning="percentile").fit(x, off)
    np.testing.assert_array_equal(pct.thresholds_, [[0, 0.25, 0.5, 0.75]])
    np.testing.assert_array_equal(pct.bin_codes(x, off)[:, 0], [1, 2, 3, 4, 0])
    mm = FeatureEncoder("bins", n_bins=4, binning="minmax").fit(x, off)
    np.testing.assert_array_equal(mm.bin_codes(x, off)[:, 0], [0, 2, 3, 4, 0])


def test_bins_rdot_is_the_transpose_of_dot():
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(12, 3))
    raw[rng.random(raw.shape) < 0.25] = nan
    off = np.array([0, 5, 12])
    X = FeatureEncoder("bins+raw+minmax", n_bins=4, threshold_depth=None).fit(raw, off).transform(raw, off)
    c = rng.normal(size=12)
    np.testing.assert_allclose(X.rdot(c), X.dense().T @ c, rtol=0, atol=1e-12)


def test_feature_names_function_by_function_threshold_by_threshold_then_raw_then_retrieved():
    # f "a": training 1, 2, 3, 4 → −inf, 1, 2, 3;  f "b": 10, 10, 10, 20 → −inf, 10, inf, inf
    raw = np.array([[1, 10], [2, 10], [3, 10], [4, 20]], dtype=float)
    enc = FeatureEncoder("bins+raw", n_bins=4, threshold_depth=None).fit(raw, np.array([0, 4]))
    assert enc.feature_names(["a", "b"]) == [
        "a>-inf", "a>1", "a>2", "a>3", "b>-inf", "b>10", "b>inf", "b>inf",
        "raw(a)", "raw(b)", "retrieved(a)", "retrieved(b)"]
    enc2 = FeatureEncoder("minmax+bins", n_bins=2, threshold_depth=None).fit(raw, np.array([0, 4]))
    assert enc2.feature_names(["a", "b"]) == [
        "minmax(a)", "minmax(b)", "retrieved(a)", "retrieved(b)", "a>-inf", "a>2", "b>-inf", "b>10"]


@pytest.mark.parametrize("order", [("bins", "raw"), ("raw", "bins"), ("minmax", "raw", "bins")])
def test_block_order_is_the_order_given(order):
    # φ of "x+y" is φ of "x" then φ of "y", side by side, with the names in the same order
    raw = np.array([[1, nan], [2, 5], [3, 4], [nan, 1]], dtype=float)
    off = np.array([0, 2, 4])
    whole = FeatureEncoder("+".join(order), n_bins=3, threshold_depth=None).fit(raw, off)
    parts = [FeatureEncoder(b, n_bins=3, threshold_depth=None).fit(raw, off) for b in order]
    np.testing.assert_array_equal(whole.transform(raw, off).dense(),
                                  np.hstack([p.transform(raw, off).dense() for p in parts]))
    assert whole.feature_names(["u", "v"]) == sum((p.feature_names(["u", "v"]) for p in parts), [])
