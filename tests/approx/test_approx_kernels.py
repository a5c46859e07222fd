"""The compiled ApproxAP / ApproxNDCG kernels (numba, ``pyterrier_svmmap/approx/_kernels.py``) against the numpy
reference implementation (``oracles/approx_reference.py``): per-query values and gradients, exact measures, whole
fits (the reference monkeypatched in as ``ApproxRanker._query``).
"""
import numpy as np
import pytest

import pyterrier_svmmap.approx.ranker as approx
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
from pyterrier_svmmap.measures import average_precision

import tests.oracles.approx_reference as reference

jit = approx.jit()


def random_query(rng, n, kind):
    """Scores and labels of one query: ``kind`` picks ties, all-relevant, one-relevant, graded."""
    scale = rng.choice([0.01, 0.3, 3.0])
    s = rng.normal(size=n) * scale
    if kind in ("ties", "all_relevant"):
        s = np.round(s / scale, 0) * scale / 2                     # many exact ties
    if kind == "all_tied":
        s = np.full(n, 0.7)
    if kind == "graded":
        labels = rng.integers(0, 4, size=n).astype(float)
    else:
        labels = (rng.random(n) < 0.3).astype(float)
    if kind in ("all_relevant", "all_tied"):
        labels = np.ones(n) if kind == "all_relevant" else rng.integers(1, 3, size=n).astype(float)
    if kind == "one_relevant":
        labels = np.zeros(n)
        labels[rng.integers(n)] = 1
    if not (labels > 0).any():
        labels[rng.integers(n)] = 2
    labels[rng.random(n) < 0.05] = -1                             # negative judgements gain 0
    if not (labels > 0).any():
        labels[0] = 1
    return s, labels


KINDS = ["plain", "ties", "graded", "one_relevant", "all_relevant", "all_tied"]
CASES = [(seed, kind) for seed in range(12) for kind in KINDS]


def assert_grad_close(g_fast, g_ref, alpha, beta=1.0):
    """Within 1e-10 of the gradient's largest entry; when every candidate is relevant the gradient is
    mostly cancellation (exactly 0 when all are tied), hence the floor 1e-13·α·max(1, β)."""
    assert g_fast.shape == g_ref.shape
    floor = 1e-13 * alpha * max(1.0, beta)
    assert np.abs(g_fast - g_ref).max() <= max(1e-10 * np.abs(g_ref).max(), floor)


@pytest.mark.parametrize("seed,kind", CASES)
def test_ap_query_matches_reference(seed, kind):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 5, 37, 300]))
    s, labels = random_query(rng, n, kind)
    rel = np.flatnonzero(labels > 0).astype(np.int64)
    for alpha, beta in [(1.0, 1.0), (20.0, 10.0), (100.0, 50.0), (300.0, 1.0)]:
        n_rel = float(len(rel) + rng.integers(0, 3))
        v_ref, g_ref = reference.approx_ap_query(s, labels, alpha, beta, n_rel)
        out = np.empty(n)
        v = jit.ap_query(s, rel, alpha, beta, n_rel, True, out)
        assert v == pytest.approx(v_ref, rel=1e-12, abs=0)
        assert jit.ap_query(s, rel, alpha, beta, n_rel, False, np.empty(0)) == v
        assert_grad_close(out, g_ref, alpha, beta)


@pytest.mark.parametrize("seed,kind", CASES)
def test_ndcg_query_matches_reference(seed, kind):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.choice([1, 2, 5, 37, 300]))
    s, labels = random_query(rng, n, kind)
    rel = np.flatnonzero(labels > 0).astype(np.int64)
    gains = approx.gains(labels)[rel]
    idcg = float(approx.ideal_dcg(labels, np.array([0, n]))[0])
    for alpha in [1.0, 20.0, 100.0, 300.0]:
        v_ref, g_ref = reference.approx_ndcg_query(s, labels, alpha, idcg)
        out = np.empty(n)
        v = jit.ndcg_query(s, rel, gains, alpha, idcg, True, out)
        assert v == pytest.approx(v_ref, rel=1e-12, abs=0)
        assert jit.ndcg_query(s, rel, gains, alpha, idcg, False, np.empty(0)) == v
        assert_grad_close(out, g_ref, alpha)


@pytest.mark.parametrize("alpha", [20.0, 100.0])
def test_wide_queries_take_the_per_pair_path(alpha):
    """α·(max s − min s) above FACTOR_SPAN: one exponential per pair, saturated terms, same values."""
    rng = np.random.default_rng(3)
    s = rng.normal(size=200) * 40.0
    labels = (rng.random(200) < 0.2).astype(float)
    assert alpha * np.ptp(s) > 1400.0
    rel = np.flatnonzero(labels > 0).astype(np.int64)
    v_ref, g_ref = reference.approx_ap_query(s, labels, alpha, 10.0)
    out = np.empty(200)
    assert jit.ap_query(s, rel, alpha, 10.0, float(len(rel)), True, out) == pytest.approx(v_ref, rel=1e-12)
    assert_grad_close(out, g_ref, alpha, 10.0)
    v_ref, g_ref = reference.approx_ndcg_query(s, labels, alpha)
    idcg = float(approx.ideal_dcg(labels, np.array([0, 200]))[0])
    assert jit.ndcg_query(s, rel, approx.gains(labels)[rel], alpha, idcg, True, out) == pytest.approx(v_ref, rel=1e-12)
    assert_grad_close(out, g_ref, alpha)


def test_gradient_matches_finite_differences():
    """The kernel's own gradient, independently of the numpy one."""
    rng = np.random.default_rng(7)
    s = rng.normal(size=12) * 0.3
    labels = np.array([2, 0, 1, 0, 0, 1, 0, 3, 0, 0, 1, 0], float)
    rel = np.flatnonzero(labels > 0).astype(np.int64)
    gains = approx.gains(labels)[rel]
    idcg = float(approx.ideal_dcg(labels, np.array([0, 12]))[0])
    eps = 1e-6
    for f in (lambda x, g, out: jit.ap_query(x, rel, 5.0, 3.0, 6.0, g, out),
              lambda x, g, out: jit.ndcg_query(x, rel, gains, 5.0, idcg, g, out)):
        out = np.empty(12)
        f(s, True, out)
        fd = np.array([(f(s + e, False, out[:0]) - f(s - e, False, out[:0])) / (2 * eps) for e in np.eye(12) * eps])
        np.testing.assert_allclose(out, fd, atol=1e-7, rtol=1e-5)
        assert np.abs(fd).max() > 1e-3


@pytest.mark.parametrize("seed", range(20))
def test_exact_measures_are_bit_identical(seed):
    """The compiled exact AP / NDCG@n of model selection equal measures.py's to the last bit (ties,
    signed zeros, negative labels, n_relevant above the relevant candidates, empty queries)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 300, size=int(rng.integers(1, 8)))
    offsets = np.r_[0, np.cumsum(sizes)]
    N = int(offsets[-1])
    labels = rng.integers(-1, 4, size=N).astype(float) * (rng.random(N) < rng.random())
    scores = rng.normal(size=N)
    if seed % 2:
        scores = np.round(scores, 1)
    if seed % 5 == 0:
        scores[:] = 0.0
        scores[::3] = -0.0
    n_rel = None if seed % 3 else np.array([(labels[a:b] > 0).sum() + rng.integers(0, 3)
                                            for a, b in zip(offsets[:-1], offsets[1:])], float)
    qs = approx._QuerySet(FeatureMatrix([DenseBlock(np.zeros((N, 1)))]), labels, offsets, n_rel, split=False)
    assert np.array_equal(qs.exact("ap", scores), average_precision(scores, labels, offsets, n_rel))
    assert np.array_equal(qs.exact("ndcg", scores), approx.ndcg(scores, labels, offsets, idcg=qs.idcg))


def synthetic(seed, n_queries, n=300, F=16):
    """Vaswani-like candidates: few relevant per query, base functions correlated with relevance."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(n_queries + 1) * n
    labels = np.zeros(offsets[-1])
    raw = np.empty((offsets[-1], F))
    for q in range(n_queries):
        lab = (rng.random(n) < 0.03).astype(float)
        lab[rng.integers(n)] = 1
        labels[q * n:(q + 1) * n] = lab
        raw[q * n:(q + 1) * n] = (rng.normal(size=n) + 1.5 * lab)[:, None] * rng.uniform(0.3, 1, F) \
            + rng.normal(size=(n, F))
    raw[rng.random(raw.shape) < 0.2] = np.nan
    return raw, labels, offsets


def fit(measure, X, labels, offsets, Xv, labels_v, offsets_v, **kw):
    grid = dict(alphas=(20, 100), betas=(10, 50)) if measure == "ap" else dict(alphas=(20, 100))
    return approx.ApproxRanker(measure=measure, n_iter=kw.pop("n_iter", 15), **grid, **kw).fit(
        X, labels, offsets, X_valid=Xv, labels_valid=labels_v, offsets_valid=offsets_v)


@pytest.mark.parametrize("measure", approx.MEASURES)
def test_fit_matches_reference_on_dense_features(measure, monkeypatch):
    """The registry's features (minmax, dense, trained in float32): same selection, same models."""
    raw, y, o = synthetic(0, 6)
    rawv, yv, ov = synthetic(1, 3)
    enc = FeatureEncoder("minmax").fit(raw, o)
    X, Xv = enc.transform(raw, o), enc.transform(rawv, ov)
    fast = fit(measure, X, y, o, Xv, yv, ov)
    monkeypatch.setattr(approx.ApproxRanker, "_query", reference.reference_query)
    ref = fit(measure, X, y, o, Xv, yv, ov)
    assert (fast.alpha_, fast.best_iteration_) == (ref.alpha_, ref.best_iteration_)
    assert fast.beta_ == ref.beta_ or (np.isnan(fast.beta_) and np.isnan(ref.beta_))
    np.testing.assert_allclose(fast.coef_path_, ref.coef_path_, rtol=1e-8, atol=1e-12 * np.abs(ref.coef_path_).max())
    for a, b in zip(fast.search_results_, ref.search_results_):
        np.testing.assert_allclose(a["valid_score"], b["valid_score"], rtol=1e-10)
        np.testing.assert_allclose(a["approx_error"], b["approx_error"], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("measure", approx.MEASURES)
def test_fit_matches_reference_on_binned_features_early(measure, monkeypatch):
    """Binned features at small α: the first passes agree to ~1e-10 (SGD with large α on binned features
    amplifies rounding differences exponentially, for the reference's own chunking too)."""
    raw, y, o = synthetic(2, 6)
    enc = FeatureEncoder("bins", n_bins=10).fit(raw, o)
    X = enc.transform(raw, o)
    kw = dict(alphas=(5.0,), betas=(5.0,)) if measure == "ap" else dict(alphas=(5.0,))
    fast = approx.ApproxRanker(measure=measure, n_iter=3, **kw).fit(X, y, o)
    monkeypatch.setattr(approx.ApproxRanker, "_query", reference.reference_query)
    ref = approx.ApproxRanker(measure=measure, n_iter=3, **kw).fit(X, y, o)
    np.testing.assert_allclose(fast.coef_path_, ref.coef_path_, rtol=1e-9, atol=1e-9 * np.abs(ref.coef_path_).max())
    np.testing.assert_allclose(fast.approx_error_, ref.approx_error_, rtol=1e-8)


def test_fit_is_deterministic():
    raw, y, o = synthetic(4, 5)
    enc = FeatureEncoder("bins", n_bins=10).fit(raw, o)
    X = enc.transform(raw, o)
    a = approx.ApproxRanker(measure="ap", alphas=(100,), betas=(50,), n_iter=10, random_state=3).fit(X, y, o)
    b = approx.ApproxRanker(measure="ap", alphas=(100,), betas=(50,), n_iter=10, random_state=3).fit(X, y, o)
    assert np.array_equal(a.coef_path_, b.coef_path_)
    assert np.array_equal(a.valid_score_, b.valid_score_)


def test_queries_without_relevant_candidates():
    """Zero value and gradient from the kernels and the reference; a training query without relevant
    candidates is skipped."""
    X = FeatureMatrix([DenseBlock(np.eye(4))])
    qs = approx._QuerySet(X, np.array([0, 0, 1, 0.0]), np.array([0, 2, 4]), None, split=True)
    for measure in approx.MEASURES:
        r = approx.ApproxRanker(measure=measure)
        for query in (approx.ApproxRanker._query, reference.reference_query):
            v, g = query(r, qs, 0, np.array([0.3, 0.1]), 10.0, 10.0, True)
            assert v == 0.0 and np.array_equal(g, np.zeros(2))
