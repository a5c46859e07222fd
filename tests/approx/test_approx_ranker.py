"""ApproxAP / ApproxNDCG (Qin et al.): gradients and approximation tightness of the numpy reference implementation
(``oracles/approx_reference.py``, which the compiled kernels are compared with), training, selection."""
import numpy as np
import pytest

import pyterrier_svmmap.approx.ranker as approx
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
from pyterrier_svmmap.measures import average_precision, ndcg_at

import tests.oracles.approx_reference as reference


def finite_diff(f, s, eps=1e-6):
    return np.array([(f(s + e) - f(s - e)) / (2 * eps) for e in np.eye(len(s)) * eps])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_entries", [approx.DEFAULT_MAX_ENTRIES, 7])   # 7: one row per chunk
def test_ap_gradient_matches_finite_differences(seed, max_entries):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 15))
    s = rng.normal(size=n) * 0.3
    labels = (rng.random(n) < 0.4).astype(float)
    labels[0] = 1
    alpha, beta = rng.choice([2.0, 10.0]), rng.choice([1.0, 5.0])
    n_rel = labels.sum() + rng.integers(0, 3)
    _, g = reference.approx_ap_query(s, labels, alpha, beta, n_rel, max_entries=max_entries)
    fd = finite_diff(lambda x: reference.approx_ap_query(x, labels, alpha, beta, n_rel, grad=False)[0], s)
    np.testing.assert_allclose(g, fd, atol=1e-7, rtol=1e-5)
    assert np.abs(fd).max() > 1e-4                      # a meaningful comparison


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_entries", [approx.DEFAULT_MAX_ENTRIES, 7])
def test_ndcg_gradient_matches_finite_differences(seed, max_entries):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 15))
    s = rng.normal(size=n) * 0.3
    labels = rng.integers(0, 3, size=n).astype(float)
    labels[0] = 2
    alpha = rng.choice([2.0, 10.0])
    _, g = reference.approx_ndcg_query(s, labels, alpha, max_entries=max_entries)
    fd = finite_diff(lambda x: reference.approx_ndcg_query(x, labels, alpha, grad=False)[0], s)
    np.testing.assert_allclose(g, fd, atol=1e-7, rtol=1e-5)
    assert np.abs(fd).max() > 1e-4


def test_positions_table1():
    """Table 1 of the paper: α = 100 gives π̂ = 2.00118, 4, 1, 5, 2.99882."""
    s = np.array([4.20074, 3.12378, 4.40918, 1.55258, 4.13330])
    pi = reference.approx_positions(s, np.arange(5), 100.0)
    np.testing.assert_allclose(pi, [2.00118, 4.0, 1.0, 5.0, 2.99882], atol=1e-5)


def random_queries(seed, n_queries=8, graded=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 40, size=n_queries)
    offsets = np.r_[0, np.cumsum(sizes)]
    scores = rng.normal(size=offsets[-1])
    labels = rng.integers(0, 3 if graded else 2, size=offsets[-1]).astype(float)
    return scores, labels, offsets


@pytest.mark.parametrize("seed", range(3))
def test_approx_ap_tightens_to_ap(seed):
    scores, labels, offsets = random_queries(seed)
    exact = average_precision(scores, labels, offsets)
    errs = [np.abs(reference.approx_ap(scores, labels, offsets, a, a) - exact).mean()
            for a in (1.0, 10.0, 100.0, 1e4)]
    assert all(e1 > e2 for e1, e2 in zip(errs, errs[1:]))        # monotone in α = β
    assert errs[-1] < 1e-3
    assert errs[0] > 1e-2                                         # and loose when α, β are small


@pytest.mark.parametrize("seed", range(3))
def test_approx_ndcg_tightens_to_ndcg(seed):
    scores, labels, offsets = random_queries(seed, graded=True)
    exact = approx.ndcg(scores, labels, offsets)
    errs = [np.abs(reference.approx_ndcg(scores, labels, offsets, a) - exact).mean()
            for a in (1.0, 10.0, 100.0, 1e4)]
    assert all(e1 > e2 for e1, e2 in zip(errs, errs[1:]))
    assert errs[-1] < 1e-3 and errs[0] > 1e-2


def test_exact_ndcg_agrees_with_measures_on_binary_labels():
    scores, labels, offsets = random_queries(4)
    n_rel = np.add.reduceat(labels, offsets[:-1]) + 2
    np.testing.assert_allclose(approx.ndcg(scores, labels, offsets, n_relevant=n_rel),
                               ndcg_at(scores, labels, offsets, None, n_rel))
    np.testing.assert_allclose(approx.ndcg(scores, labels, offsets, k=5),
                               ndcg_at(scores, labels, offsets, 5))


def synthetic(seed, n_queries=12, n_cand=80, n_feat=8):
    """Relevance is driven by features 0 (up) and 1 (down); the rest is noise."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_cand
    offsets = np.arange(n_queries + 1) * n_cand
    V = rng.normal(size=(n, n_feat))
    latent = V[:, 0] - V[:, 1] + 0.3 * rng.normal(size=n)
    labels = (latent > np.quantile(latent, 0.9)).astype(float)
    return FeatureMatrix([DenseBlock(V)]), labels, offsets


@pytest.mark.parametrize("measure", ["ap", "ndcg"])
def test_training_improves_training_measure(measure):
    X, labels, offsets = synthetic(0)
    model = approx.ApproxRanker(measure=measure, alphas=[10.0], betas=[10.0], n_iter=20,
                                learning_rate=0.05).fit(X, labels, offsets)
    start = average_precision(np.zeros(len(labels)), labels, offsets)          # w = 0: input order
    trained = average_precision(model.decision_function(X), labels, offsets)
    assert trained.mean() > 0.8 > start.mean() + 0.3
    assert model.coef_[0] > 0 > model.coef_[1]
    # the surrogate follows the measure: ρ small and shrinking from iteration 1
    assert model.approx_error_.shape == (20,) and model.approx_error_[-1] < model.approx_error_[0]
    assert np.all(np.diff(model.train_score_[:5]) > -0.05)


def test_selection_by_validation():
    X, labels, offsets = synthetic(0)
    Xv, lv, ov = synthetic(1)
    model = approx.ApproxRanker(measure="ap", alphas=[1.0, 20.0], betas=[1.0, 10.0], n_iter=8,
                                learning_rate=0.05).fit(X, labels, offsets, X_valid=Xv,
                                                        labels_valid=lv, offsets_valid=ov)
    assert len(model.search_results_) == 4
    best = max(model.search_results_, key=lambda r: r["best_valid"])
    assert (model.alpha_, model.beta_) == (best["alpha"], best["beta"])
    assert model.best_iteration_ == best["best_iteration"] == int(np.argmax(best["valid_score"])) + 1
    # the kept coefficients are θ_t of that iteration, and reproduce its validation MAP
    np.testing.assert_array_equal(model.coef_, model.coef_path_[model.best_iteration_ - 1])
    got = average_precision(model.decision_function(Xv), lv, ov).mean()
    assert got == pytest.approx(model.best_valid_score_, abs=1e-6)
    assert model.best_valid_score_ >= max(r["valid_score"].max() for r in model.search_results_) - 1e-12


def test_selection_prefers_validation_over_training():
    """With validation queries whose relevance runs the other way, selection must follow them."""
    X, labels, offsets = synthetic(0)
    Xv, lv, ov = synthetic(1)
    V = Xv.blocks[0].values.copy()
    V[:, [0, 1]] = V[:, [1, 0]]                       # on validation, feature 1 is the good one
    flipped = FeatureMatrix([DenseBlock(V)])
    model = approx.ApproxRanker(measure="ap", alphas=[10.0], betas=[10.0], n_iter=15, learning_rate=0.05).fit(
        X, labels, offsets, X_valid=flipped, labels_valid=lv, offsets_valid=ov)
    assert model.best_iteration_ == 1                 # training only makes validation worse
    assert model.train_score_[-1] > model.train_score_[0]


def test_default_grids_are_the_papers():
    assert len(approx.ApproxRanker(measure="ap").grid()) == 20
    assert [a for a, _ in approx.ApproxRanker(measure="ndcg").grid()] == [10, 20, 50, 100, 150, 200, 250, 300]
    with pytest.raises(ValueError):
        approx.ApproxRanker(measure="err").grid()


def test_works_with_binned_features_and_long_queries():
    """A few thousand candidates per query, bins encoding, chunked pair matrices."""
    rng = np.random.default_rng(2)
    n_q, n_c = 3, 3000
    offsets = np.arange(n_q + 1) * n_c
    raw = rng.normal(size=(n_q * n_c, 4))
    labels = (raw[:, 0] + 0.5 * rng.normal(size=len(raw)) > 2.0).astype(float)
    raw[rng.random(raw.shape) < 0.3] = np.nan
    X = FeatureEncoder("bins", n_bins=20).fit(raw, offsets).transform(raw, offsets)
    model = approx.ApproxRanker(measure="ap", alphas=[10.0], betas=[10.0], n_iter=5, max_entries=50_000,
                                learning_rate=0.1).fit(X, labels, offsets)
    ap = average_precision(model.decision_function(X), labels, offsets).mean()
    assert ap > average_precision(rng.random(len(labels)), labels, offsets).mean() + 0.2
