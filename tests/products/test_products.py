"""Products that add in a fixed order (:mod:`pyterrier_svmmap.products`): the compiled kernels give the numpy
references' bits on every thread count, and a fit does not depend on how many threads a BLAS runs."""
import warnings

import numpy as np
import pytest

import pyterrier_svmmap.products as products
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.matrices import DenseBlock

SHAPES = [(0, 3), (1, 1), (3, 7), (5, 8), (6, 128), (40, 129), (300, 2300), (2000, 46), (7, 0),
          (80_000, 46), (1000, 2300)]   # the last two are cut into pieces on 2 or 3 threads


def _compiled():
    pytest.importorskip("numba")
    if products._kernels() is None:
        pytest.skip("numba is disabled")


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_kernels_give_the_numpy_references_bits(shape, n_jobs):
    _compiled()
    rng = np.random.default_rng(sum(shape))
    M = rng.normal(size=shape) * rng.choice([1e-8, 1.0, 1e8], size=shape)
    x, c = rng.normal(size=shape[1]), rng.normal(size=shape[0])
    with threads.using(n_jobs):
        assert np.array_equal(products.rows_dot(M, x), products.products_sum(M * x))
        if shape[1] <= 128:
            assert np.array_equal(products.rows_dot(M, x), (M * x).sum(axis=1))     # numpy's pairwise sum
        expected = (c[:, None] * M).sum(axis=0) if shape[0] else np.zeros(shape[1])
        assert np.array_equal(products.weighted_rows(c, M), expected)
        assert products.dot(x, x) == float(products.products_sum((x * x)[None, :])[0])


@pytest.mark.parametrize("shape", SHAPES)
def test_the_numpy_path_is_the_same(monkeypatch, shape):
    _compiled()
    rng = np.random.default_rng(1)
    M, x, c = rng.normal(size=shape), rng.normal(size=shape[1]), rng.normal(size=shape[0])
    compiled = products.rows_dot(M, x), products.weighted_rows(c, M), products.dot(x, x)
    monkeypatch.setattr(products, "_kernels", lambda: None)
    numpy = products.rows_dot(M, x), products.weighted_rows(c, M), products.dot(x, x)
    for a, b in zip(compiled, numpy):
        assert np.array_equal(a, b)


def test_the_products_are_the_mathematical_ones():
    rng = np.random.default_rng(2)
    M, x, c = rng.normal(size=(50, 30)), rng.normal(size=30), rng.normal(size=50)
    assert np.allclose(products.rows_dot(M, x), M @ x, rtol=1e-13, atol=1e-13)
    assert np.allclose(products.weighted_rows(c, M), c @ M, rtol=1e-13, atol=1e-13)
    assert np.isclose(products.dot(x, M[0]), x @ M[0], rtol=1e-13)


def test_the_order_of_a_long_row():
    """Above 128 terms, 32 partial sums over i mod 32, halved by neighbours: 1e16 (lane 0) meets 1 (lane 1)
    before −1e16 (lane 8), so the 1 is lost; 8 lanes (numpy's pairwise sum) would cancel ±1e16 first."""
    x = np.zeros(200)
    x[0], x[8], x[1] = 1e16, -1e16, 1.0
    assert products.dot(x, np.ones(200)) == 0.0
    assert float(products.products_sum(x[None, :])[0]) == 0.0
    assert float(x.sum()) == 1.0
    short = x[:100]                                                     # up to 128 terms: numpy's own sum
    assert products.dot(short, np.ones(100)) == float(short.sum()) == 1.0


def test_a_column_sum_adds_the_rows_in_order():
    """1e16 + 1 − 1e16 is 0 in order, 1 in another: the first row first."""
    M = np.array([[1e16], [1.0], [-1e16]])
    assert products.weighted_rows(np.ones(3), M)[0] == 0.0


@pytest.mark.parametrize("bad", [(np.zeros((2, 3)), np.zeros(2)), (np.zeros(3), np.zeros(3))])
def test_shapes_that_do_not_multiply_are_refused(bad):
    with pytest.raises(ValueError, match="cannot"):
        products.rows_dot(*bad)


def test_dense_block_uses_them():
    rng = np.random.default_rng(3)
    V, w, c = rng.normal(size=(100, 9)), rng.normal(size=9), rng.normal(size=100)
    block = DenseBlock(V)
    assert np.array_equal(block.dot(w), (V * w).sum(axis=1))                 # 9 columns: numpy's own sum
    assert np.array_equal(block.rdot(c), (c[:, None] * V).sum(axis=0))


def _mq_like(seed=0, n_q=120, n=60, F=46):
    rng = np.random.default_rng(seed)
    raw = rng.random((n_q * n, F))
    labels = (raw[:, :5].sum(axis=1) + rng.normal(scale=0.5, size=n_q * n) > 3.2).astype(float)
    return raw, labels, np.arange(0, n_q * n + 1, n, dtype=np.int64)


@pytest.mark.parametrize("features", ["raw", "bins"])
def test_a_fit_does_not_depend_on_the_blas_thread_count(features):
    """Raw features (a dense block) and a large working set (C = 1000, bins) on data where a BLAS's
    products differ between one thread and two."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from pyterrier_svmmap import StructSVMRanker
    raw, labels, offsets = _mq_like()
    coefs = []
    for n in (1, 2):
        with threadpoolctl.threadpool_limits(n, user_api="blas"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            coefs.append(StructSVMRanker(C=1000.0, features=features, n_bins=50).fit(raw, labels, offsets).coef_)
    assert np.array_equal(coefs[0], coefs[1])
