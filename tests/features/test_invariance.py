"""The learners do not depend on the features' units: rescalings and shifts of a base function, and columns that
carry no ranking information, leave φ, the model and its ranking unchanged (issue: a default that holds on any
data). Power-of-two rescalings are exact in floating point, so for them the models are equal bit for bit;
other rescalings and shifts round differently in the last bits, so there the scores agree to rounding."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pyterrier_svmmap import StructSVMRanker
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.selection import resolve_c_grid
from pyterrier_svmmap.svm.losses import LOSSES

LOSS_NAMES = sorted(LOSSES)


def problem(seed: int, n_q: int = 12, n_d: int = 14, F: int = 3, missing: float = 0.15):
    """Candidates of n_q queries; function 0 is informative, with a per-query level (as BM25's), some missing."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_q * n_d) < 0.3).astype(float)
    labels[::n_d] = 1.0
    labels[1::n_d] = 0.0
    level = np.repeat(rng.normal(0, 3, n_q), n_d)
    raw = rng.normal(size=(n_q * n_d, F)) + np.outer(labels, [1.5, 0.5, 0.0][:F] + [0.0] * max(0, F - 3))
    raw[:, 0] += level
    raw[rng.random(raw.shape) < missing] = np.nan
    offsets = np.arange(0, n_q * n_d + 1, n_d, dtype=np.int64)
    return raw, labels, offsets


def fit(raw, labels, offsets, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return StructSVMRanker(**params).fit(raw, labels, offsets)


def rescaled(raw, f, factor=1.0, shift=0.0, per_query=None, offsets=None):
    """Column ``f`` as (f + shift + per_query[q]) · factor: shifts in the column's own units, so that the input
    keeps its precision (a shift far larger than the column's spread would round its differences away)."""
    out = raw.copy()
    out[:, f] = out[:, f] + shift
    if per_query is not None:
        out[:, f] += np.repeat(per_query, np.diff(offsets))
    out[:, f] *= factor
    return out


def ranking(model, raw, offsets):
    """Each query's candidates by decreasing model score (the tie policy's order)."""
    s = model.ranking_scores(raw, offsets)
    return [tuple(np.argsort(-s[a:b], kind="stable")) for a, b in zip(offsets[:-1], offsets[1:])]


# -- φ ----------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(-60, 60), st.integers(0, 2))
def test_power_of_two_rescaling_leaves_every_block_bit_for_bit(seed, exponent, f):
    raw, _, offsets = problem(seed)
    scaled = rescaled(raw, f, 2.0 ** exponent)
    for features in ("raw", "bins", "minmax", "bins+raw"):
        a = FeatureEncoder(features, n_bins=6, threshold_depth=None).fit(raw, offsets).transform(raw, offsets)
        b = FeatureEncoder(features, n_bins=6, threshold_depth=None).fit(scaled, offsets).transform(scaled, offsets)
        np.testing.assert_array_equal(a.dense(), b.dense(), err_msg=features)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e-6, 1e6), st.floats(-1e3, 1e3), st.integers(0, 2))
def test_normalised_raw_block_is_free_of_units_and_of_per_query_levels(seed, factor, shift, f):
    raw, _, offsets = problem(seed)
    per_query = np.random.default_rng(seed + 1).normal(0, 50, len(offsets) - 1)
    moved = rescaled(raw, f, factor, shift, per_query, offsets)
    a = FeatureEncoder("raw").fit(raw, offsets).transform(raw, offsets).dense()
    b = FeatureEncoder("raw").fit(moved, offsets).transform(moved, offsets).dense()
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e-6, 1e6), st.integers(0, 2))
def test_bins_are_free_of_any_positive_rescaling(seed, factor, f):
    raw, _, offsets = problem(seed)
    a = FeatureEncoder("bins", n_bins=8, threshold_depth=None).fit(raw, offsets)
    moved = rescaled(raw, f, factor)
    b = FeatureEncoder("bins", n_bins=8, threshold_depth=None).fit(moved, offsets)
    np.testing.assert_array_equal(a.bin_codes(raw, offsets), b.bin_codes(moved, offsets))


def test_bins_do_depend_on_per_query_levels_by_design():
    # thresholds compare scores across queries (the paper's features): a per-query shift moves candidates
    # between bins, while the normalised raw block does not see it
    raw, _, offsets = problem(3)
    moved = rescaled(raw, 0, per_query=np.arange(len(offsets) - 1) * 10.0, offsets=offsets)
    a = FeatureEncoder("bins", n_bins=8, threshold_depth=None).fit(raw, offsets)
    b = FeatureEncoder("bins", n_bins=8, threshold_depth=None).fit(moved, offsets)
    assert not np.array_equal(a.bin_codes(raw, offsets), b.bin_codes(moved, offsets))


# -- columns that carry no ranking information ------------------------------------------------------
@pytest.mark.parametrize("features", ["raw", "bins", "minmax", "bins+raw"])
@pytest.mark.parametrize("normalise", ["query", None])
@pytest.mark.parametrize("column", ["constant", "huge constant", "per-query constant"])
def test_a_column_constant_within_every_query_has_only_zero_dimensions(features, normalise, column):
    raw, _, offsets = problem(5, missing=0.0)
    n_q = len(offsets) - 1
    value = {"constant": np.full(n_q, 3.0), "huge constant": np.full(n_q, 1e20),
             "per-query constant": np.arange(n_q) * 7.0 - 20}[column]
    if normalise is None and column == "huge constant":
        return                                   # beyond normalise=None's range: refused (test below)
    extra = np.hstack([raw, np.repeat(value, np.diff(offsets))[:, None]])
    enc = FeatureEncoder(features, n_bins=5, threshold_depth=None, normalise=normalise).fit(extra, offsets)
    X = enc.transform(extra, offsets).dense()
    names = enc.feature_names(["a", "b", "c", "k"])
    assert all(not X[:, j].any() for j, n in enumerate(names) if "(k)" in n or n.startswith("k>")), names


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_a_constant_column_changes_no_model_of_any_loss(loss):
    raw, labels, offsets = problem(7, missing=0.0)
    extra = np.hstack([raw, np.full((len(raw), 1), 1e20)])
    params = dict(C=1.0, features="raw", loss=loss, **({"loss_params": {"k": 3}} if loss == "dorm" else {}))
    a, b = fit(raw, labels, offsets, **params), fit(extra, labels, offsets, **params)
    F = raw.shape[1]
    wa, wb = a.layout_.block_weights(a.coef_, "raw"), b.layout_.block_weights(b.coef_, "raw")
    assert not wb[:, F].any()                                     # the constant's score and indicator weights
    np.testing.assert_allclose(wb[:, :F], wa, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.decision_function(extra, offsets), a.decision_function(raw, offsets),
                               rtol=1e-9, atol=1e-9)


# -- models -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("features", ["raw", "bins", "bins+raw"])
def test_every_loss_and_block_trains_the_same_model_on_power_of_two_rescaled_features(loss, features):
    raw, labels, offsets = problem(11)
    params = dict(C=[0.1, 10.0], features=features, n_bins=6, loss=loss, cv=3,
                  **({"loss_params": {"k": 3}} if loss == "dorm" else {}))
    a = fit(raw, labels, offsets, **params)
    scaled = rescaled(rescaled(raw, 0, 2.0 ** 40), 2, 2.0 ** -30)
    b = fit(scaled, labels, offsets, **params)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.C_ == b.C_
    np.testing.assert_array_equal(a.ranking_scores(raw, offsets), b.ranking_scores(scaled, offsets))


#: losses whose structure is the whole ranking; MRR@k and DORM@k constrain the top k only, so below it the order
#: of an ε-optimal model is free, and two ε-optimal models may order those candidates differently
WHOLE_RANKING_LOSSES = [name for name in LOSS_NAMES if name not in ("mrr", "dorm")]


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_every_loss_solves_the_same_problem_after_any_rescaling_and_shift(loss):
    raw, labels, offsets = problem(13)
    params = dict(C=1.0, features="raw", loss=loss, **({"loss_params": {"k": 3}} if loss == "dorm" else {}))
    a = fit(raw, labels, offsets, **params)
    per_query = np.random.default_rng(2).normal(0, 100, len(offsets) - 1)
    moved = rescaled(rescaled(raw, 0, 1e6, 5e3, per_query, offsets), 1, 3e-5, -2.0)
    b = fit(moved, labels, offsets, **params)
    # the same problem up to rounding: both models are within C·ε of its optimum
    assert a.converged_ and b.converged_
    assert abs(a.history_[-1]["primal"] - b.history_[-1]["primal"]) <= 2 * 1.0 * 1e-3
    if loss in WHOLE_RANKING_LOSSES:
        assert ranking(a, raw, offsets) == ranking(b, moved, offsets)


def test_the_default_rule_chooses_the_same_model_after_a_rescaling():
    raw, labels, offsets = problem(17, n_q=20)
    params = dict(C="auto", features="auto", prior="best", selection="auto", n_bins=6)
    a = fit(raw, labels, offsets, **params)
    b = fit(rescaled(raw, 0, 1e6, 7.0), labels, offsets, **params)
    assert (a.features_, a.choice_["fallback"]) == (b.features_, b.choice_["fallback"])
    assert a.C_ == pytest.approx(b.C_, rel=1e-9)
    assert ranking(a, raw, offsets) == ranking(b, rescaled(raw, 0, 1e6, 7.0), offsets)


def test_auto_c_is_a_grid_relative_to_the_spread_of_phi():
    raw, labels, offsets = problem(19)
    m = fit(raw, labels, offsets, C="auto", features="bins", n_bins=6)
    X = m.layout_.transform(raw, offsets)
    # the path's C values are AUTO_C_GRID / R², R² the mean squared distance from the query's mean φ
    dense = X.dense()
    r2 = sum(((dense[a:b] - dense[a:b].mean(axis=0)) ** 2).sum() for a, b in zip(offsets[:-1], offsets[1:])) / len(raw)
    assert [p["C"] for p in m.path_] == pytest.approx(resolve_c_grid("auto", r2), rel=1e-12)
    assert resolve_c_grid("auto", 4.0) == [c / 4.0 for c in resolve_c_grid("auto", 1.0)]
    assert resolve_c_grid([0.5, 2.0], 4.0) == [0.5, 2.0]


# -- values far from the training data's --------------------------------------------------------------
@pytest.mark.parametrize("factor", [-1e40, 1e40, 1e200, -1e300])
def test_finite_features_give_finite_scores(factor):
    raw, labels, offsets = problem(23, missing=0.0)
    model = fit(raw, labels, offsets, C=1.0, features="raw")
    far = raw * factor
    assert np.isfinite(model.decision_function(far, offsets)).all()
    s = model.ranking_scores(far, offsets)
    assert np.isfinite(s).all() and np.abs(s).max() < np.finfo(np.float32).max
    trained = fit(far, labels, offsets, C=1.0, features="raw")            # and training on them
    assert np.isfinite(trained.coef_).all() and trained.converged_


def test_unnormalised_scores_beyond_the_arithmetic_are_refused_with_the_function_named():
    raw, labels, offsets = problem(29, missing=0.0)
    huge = rescaled(raw, 2, 1e200)
    with pytest.raises(ValueError, match="base function f2 has scores up to .*normalise='query'"):
        fit(huge, labels, offsets, C=1.0, features="raw", normalise=None)
    model = fit(raw, labels, offsets, C=1.0, features="raw", normalise=None)
    with pytest.raises(ValueError, match="base function f2"):
        model.decision_function(huge, offsets)
    assert np.isfinite(fit(huge, labels, offsets, C=1.0, features="bins", normalise=None).coef_).all()
