"""The compiled Φw / Φᵀc of bin-code blocks (pyterrier_svmmap.features._kernels) against the numpy reference
implementations (``oracles/features_reference.py``), and the other feature kernels likewise.

The kernels add in the reference's order, so results are compared bit for bit; both are also checked
against an explicit indicator matrix built here from the definition φ_{f,t}(d) = 1[codes[d, f] > t].
"""
import pickle

import numpy as np
import pytest

from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.matrices import BinnedBlock, DenseBlock, FeatureMatrix
from pyterrier_svmmap.features.thresholds import function_thresholds, top_of_queries
from pyterrier_svmmap.features.transforms import minmax_normalise, percentiles, scale_for_binning
import tests.oracles.features_reference as reference

# (n, F, T): empty and single candidates, F below/at/above numpy's pairwise block sizes (8, 128)
SHAPES = [(0, 3, 5), (1, 1, 1), (1, 7, 50), (2, 8, 3), (17, 9, 50), (50, 16, 50), (33, 46, 50),
          (40, 128, 4), (25, 129, 4), (12, 300, 2), (30, 5, 0), (64, 3, 255), (20, 4, 256), (300, 46, 50)]


def explicit(codes, T):
    """φ from its definition: column f·T + t is 1[codes[:, f] > t]."""
    n, F = codes.shape
    return (codes[:, :, None] > np.arange(T)[None, None, :]).reshape(n, F * T).astype(float)


def random_block(rng, n, F, T):
    codes = rng.integers(0, T + 1, size=(n, F))
    if n and F:                                          # both extreme codes present
        codes[0, 0] = 0
        codes[-1, -1] = T
    return codes, BinnedBlock(codes, T)


def wide_floats(rng, size):
    """Values over many magnitudes, so that a different summation order shows in the last bits."""
    return rng.normal(size=size) * 10.0 ** rng.uniform(-6, 6, size=size)


@pytest.mark.parametrize("n,F,T", SHAPES)
def test_kernels_equal_numpy_reference_bit_for_bit(n, F, T):
    rng = np.random.default_rng(n * 1000 + F * 10 + T)
    codes, b = random_block(rng, n, F, T)
    for _ in range(3):
        w, c = wide_floats(rng, F * T), wide_floats(rng, n)
        fast_dot, ref_dot = b.dot(w), reference.binned_dot(b, w)
        fast_rdot, ref_rdot = b.rdot(c), reference.binned_rdot(b, c)
        assert fast_dot.shape == (n,) and fast_rdot.shape == (F * T,)
        np.testing.assert_array_equal(fast_dot, ref_dot)
        np.testing.assert_array_equal(fast_rdot, ref_rdot)


@pytest.mark.parametrize("n,F,T", SHAPES)
def test_dot_and_rdot_follow_the_definition(n, F, T):
    rng = np.random.default_rng(7 + n + F + T)
    codes, b = random_block(rng, n, F, T)
    Phi = explicit(codes, T)
    w, c = rng.normal(size=F * T), rng.normal(size=n)
    np.testing.assert_allclose(b.dot(w), Phi @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.rdot(c), c @ Phi, rtol=1e-12, atol=1e-12)


def test_threshold_direction_and_function_offsets():
    """A unit weight on (f, t) scores exactly the candidates whose code of f exceeds t (strictly)."""
    codes = np.array([[0, 3], [1, 2], [3, 0], [2, 3]])
    b = BinnedBlock(codes, 3)
    for f in range(2):
        for t in range(3):
            e = np.zeros(6)
            e[f * 3 + t] = 1.0
            np.testing.assert_array_equal(b.dot(e), (codes[:, f] > t).astype(float))
    c = np.array([1.0, 10.0, 100.0, 1000.0])
    np.testing.assert_array_equal(b.rdot(c), [1110.0, 1100.0, 100.0, 1011.0, 1011.0, 1001.0])


def test_feature_matrix_bins_and_raw_blocks_match_the_reference():
    rng = np.random.default_rng(3)
    offsets = np.array([0, 7, 7, 20, 41, 60])
    raw = rng.normal(size=(60, 5))
    raw[rng.random(raw.shape) < 0.2] = np.nan
    enc = FeatureEncoder(features="bins+raw", n_bins=6).fit(raw, offsets)
    X = enc.transform(raw, offsets)
    X = FeatureMatrix(list(X.blocks) + [DenseBlock(np.ones((X.n_rows, 1)))])
    assert [type(b).__name__ for b in X.blocks] == ["BinnedBlock", "DenseBlock", "DenseBlock"]
    np.testing.assert_array_equal(enc.thresholds_, reference.function_thresholds(raw, 6))
    w, c = wide_floats(rng, X.dim), wide_floats(rng, X.n_rows)
    binned, d = X.blocks[0], X.blocks[0].dim
    want = reference.binned_dot(binned, w[:d])
    lo = d
    for b in X.blocks[1:]:
        want += b.dot(w[lo:lo + b.dim])
        lo += b.dim
    np.testing.assert_array_equal(X.dot(w), want)
    np.testing.assert_array_equal(X.rdot(c), np.concatenate([reference.binned_rdot(binned, c)] +
                                                            [b.rdot(c) for b in X.blocks[1:]]))


def test_dense_is_consistent_with_dot_rdot_and_take():
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 5, size=(9, 3))
    values = rng.normal(size=(9, 2))
    X = FeatureMatrix([BinnedBlock(codes, 4), DenseBlock(values)])
    D = X.dense()
    np.testing.assert_array_equal(D, np.hstack([explicit(codes, 4), values]))
    w, c = rng.normal(size=X.dim), rng.normal(size=9)
    np.testing.assert_allclose(X.dot(w), D @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(X.rdot(c), D.T @ c, rtol=1e-12, atol=1e-12)
    rows = np.array([8, 0, 3, 3])
    np.testing.assert_array_equal(X.take(rows).dense(), D[rows])
    np.testing.assert_array_equal(X.take(rows).dot(w), X.dot(w)[rows])


def test_codes_stored_compactly_and_checked():
    assert BinnedBlock(np.zeros((4, 2), dtype=np.int64), 50).codes.dtype == np.uint8
    assert BinnedBlock(np.full((4, 2), 255), 255).codes.dtype == np.uint8
    assert BinnedBlock(np.full((4, 2), 256), 256).codes.dtype == np.uint16
    assert BinnedBlock(np.zeros((4, 2), dtype=np.int64), 70000).codes.dtype == np.uint32
    codes = np.zeros((4, 2), dtype=np.uint8)
    assert BinnedBlock(codes, 50).codes is codes                        # already compact: no copy
    with pytest.raises(ValueError, match="0..3"):
        BinnedBlock(np.array([[4]]), 3)
    with pytest.raises(ValueError, match="0..3"):
        BinnedBlock(np.array([[-1]]), 3)
    with pytest.raises(ValueError, match="integers"):
        BinnedBlock(np.array([[1.0]]), 3)
    raw = np.random.default_rng(0).normal(size=(30, 2))
    X = FeatureEncoder(features="bins", n_bins=50).fit(raw, np.array([0, 30])).transform(raw, np.array([0, 30]))
    assert X.blocks[0].codes.dtype == np.uint8


def test_pickle_round_trip_keeps_codes_and_results():
    rng = np.random.default_rng(5)
    b = BinnedBlock(rng.integers(0, 51, size=(40, 6)), 50)
    w, c = rng.normal(size=b.dim), rng.normal(size=40)
    expected = b.dot(w), b.rdot(c)
    blob = pickle.dumps(b)
    assert len(blob) < b.codes.nbytes + 1000          # the codes (uint8) only, no n×F index
    b2 = pickle.loads(blob)
    assert b2.codes.dtype == np.uint8 and b2.n_thresholds == 50
    np.testing.assert_array_equal(b2.dot(w), expected[0])
    np.testing.assert_array_equal(b2.rdot(c), expected[1])
    np.testing.assert_array_equal(b2.take([3, 1]).codes, b.codes[[3, 1]])


def test_wrong_lengths_raise():
    b = BinnedBlock(np.zeros((4, 3), dtype=np.uint8), 5)
    with pytest.raises(ValueError):
        b.dot(np.zeros(14))
    with pytest.raises(ValueError):
        b.rdot(np.zeros(5))


def test_float32_inputs_give_the_float64_results():
    rng = np.random.default_rng(2)
    b = BinnedBlock(rng.integers(0, 4, size=(10, 3)), 3)
    w, c = rng.normal(size=9).astype(np.float32), rng.normal(size=10).astype(np.float32)
    np.testing.assert_array_equal(b.dot(w), b.dot(w.astype(np.float64)))
    np.testing.assert_array_equal(b.rdot(c), b.rdot(c.astype(np.float64)))


@pytest.mark.parametrize("depth", [1, 3, 50])
def test_compiled_top_of_queries_and_thresholds_equal_the_reference(depth):
    rng = np.random.default_rng(depth)
    offsets = np.array([0, 0, 7, 8, 30, 30, 61, 161])
    raw = np.round(rng.normal(size=(161, 5)), 1)
    raw[rng.random(raw.shape) < 0.25] = np.nan
    raw[8:30, 1] = np.nan
    top = top_of_queries(raw, offsets, depth)
    assert np.array_equal(top, reference.top_of_queries(raw, offsets, depth), equal_nan=True)
    for n_bins in (1, 2, 7, 50):
        np.testing.assert_array_equal(function_thresholds(top, n_bins),
                                      reference.function_thresholds(top, n_bins))
    assert function_thresholds(raw[:0], 5).shape == (5, 5)


@pytest.mark.parametrize("binning", ["quantile", "minmax", "percentile"])
@pytest.mark.parametrize("n_bins", [1, 7, 50, 300])
def test_compiled_bin_codes_equal_searchsorted(binning, n_bins):
    """FeatureEncoder.bin_codes: the kernel gives numpy's codes — NaN scores 0, a score equal to a
    threshold not above it, NaN thresholds (a function never retrieved in training) never below."""
    rng = np.random.default_rng(n_bins)
    offsets = np.array([0, 40, 41, 90, 200])
    train = np.round(rng.normal(size=(200, 5)), 1)
    train[rng.random(train.shape) < 0.2] = np.nan
    train[:, 4] = np.nan                                       # never retrieved: NaN thresholds
    enc = FeatureEncoder(["bins"], n_bins, binning, None).fit(train, offsets)
    test = np.round(rng.normal(size=(200, 5)), 1)
    test[rng.random(test.shape) < 0.2] = np.nan
    test[0, :4] = enc.thresholds_[:4, 0]                       # on a threshold
    test[1, 0], test[2, 0] = -np.inf, np.inf
    fast = enc.bin_codes(test, offsets)
    slow = reference.bin_codes(scale_for_binning(test, offsets, binning), enc.thresholds_,
                               np.uint8 if n_bins < 256 else np.uint16)
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
    assert fast.max() > 0 and (fast[np.isnan(test)] == 0).all()


@pytest.mark.parametrize("seed", range(3))
def test_compiled_percentiles_equal_numpy_bit_for_bit(seed):
    """transforms.percentiles (SVM_acc3's binning): the kernel's values are the numpy reference's, with ties
    (they share the larger percentile, −0.0 = 0.0), NaN, ±inf, nothing retrieved and empty queries."""
    rng = np.random.default_rng(seed)
    offsets = np.array([0, 0, 7, 8, 30, 30, 61, 161])
    raw = np.round(rng.normal(size=(161, 5)), 1)            # many ties
    raw[rng.random(raw.shape) < 0.25] = np.nan
    raw[8:30, 1] = np.nan                                   # function 1 retrieved nothing in query 3
    raw[8:30, 2] = 0.5                                      # constant: every candidate → 1
    raw[31, 3], raw[40, 4], raw[41, 4], raw[42, 4], raw[43, 4] = -np.inf, np.inf, -np.inf, -0.0, 0.0
    fast = percentiles(raw, offsets)
    slow = reference.percentiles(raw, offsets)
    assert np.array_equal(fast, slow, equal_nan=True)
    assert np.array_equal(np.isnan(fast), np.isnan(raw)) and (fast[8:30, 2] == 1.0).all()
    assert fast[42, 4] == fast[43, 4] and len(np.unique(fast[~np.isnan(fast)])) > 20


@pytest.mark.parametrize("seed", range(3))
def test_compiled_minmax_normalise_equals_numpy_bit_for_bit(seed):
    """transforms.minmax_normalise: the kernel's values are the numpy reference's, NaN and edge cases included
    (a constant function → 1, nothing retrieved → NaN, ±inf scores, empty queries)."""
    rng = np.random.default_rng(seed)
    offsets = np.array([0, 0, 7, 8, 30, 30, 61])
    raw = wide_floats(rng, (61, 6))
    raw[rng.random(raw.shape) < 0.25] = np.nan
    raw[7, :] = 3.0                                         # a one-candidate query: constant
    raw[8:30, 1] = np.nan                                   # function 1 retrieved nothing in query 3
    raw[8:30, 2] = 0.5                                      # constant
    raw[31, 3], raw[40, 4], raw[41, 4] = -np.inf, np.inf, -np.inf
    fast = minmax_normalise(raw, offsets)
    slow = reference.minmax_normalise(raw, offsets)
    assert np.array_equal(fast, slow, equal_nan=True)
    assert np.array_equal(np.isnan(fast), np.isnan(raw) | np.isnan(slow)) and (fast[7] == 1.0).all()
