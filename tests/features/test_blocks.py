"""The registry of feature-block kinds (:mod:`pyterrier_svmmap.features.blocks`): each kind's width, names, weight
shape and prior agree with the φ the encoder builds, and a kind registered from outside the package is trained,
named, scored, saved and drawn with no other change."""
import re

import numpy as np
import pytest

from pyterrier_svmmap.features.blocks import BLOCK_KINDS, FeatureBlock, register_block
from pyterrier_svmmap.features.layout import FeatureLayout
from pyterrier_svmmap.selection import model_class
from pyterrier_svmmap.svm.ranker import StructSVMRanker



def _data(seed=0, n_q=8, per_q=20, F=3):
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n_q * per_q, F)) * [1.0, 100.0, 0.01]
    raw[rng.random(raw.shape) < 0.1] = np.nan
    labels = (rng.random(n_q * per_q) < 0.3).astype(float)
    labels[::per_q], labels[1::per_q] = 1.0, 0.0
    return raw, labels, np.arange(0, n_q * per_q + 1, per_q)


@pytest.mark.parametrize("name", list(BLOCK_KINDS))
def test_a_kind_agrees_with_the_phi_the_encoder_builds(name):
    raw, _, offsets = _data()
    layout = FeatureLayout.fit(raw, offsets, name, n_bins=4, base_names=["a", "b", "c"])
    kind = BLOCK_KINDS[name]
    X = layout.transform(raw, offsets)
    width = kind.width(3, 4)
    assert layout.dim == width == X.dim == len(layout.names()) == len(kind.names(layout.encoder, ["a", "b", "c"]))
    assert int(np.prod(kind.weight_shape(3, 4))) == width
    w = np.arange(width, dtype=float)
    assert layout.block_weights(w, name).shape == kind.weight_shape(3, 4)
    w0 = layout.prior_weights(1, span=2.0)
    assert w0.shape == (width,)
    if kind.dense:                                  # 1/span on the function's score column, nothing else
        assert np.flatnonzero(w0).tolist() == [1] and w0[1] == 0.5
    else:                                           # 1/n_bins on each of the function's thresholds
        assert np.flatnonzero(w0).tolist() == [4, 5, 6, 7] and np.all(w0[4:8] == 0.25)
    assert model_class(name) == kind.model_class


def test_unknown_kinds_are_refused_naming_the_registered_ones():
    with pytest.raises(ValueError, match="a block kind needs a new name"):
        register_block(type("Again", (FeatureBlock,), {"name": "raw"}))
    with pytest.raises(ValueError, match="features='raw\\+nope' is not valid"):
        FeatureLayout.fit(*_data()[::2], "raw+nope")


class Rank(FeatureBlock):
    """A block a user adds: each score's reciprocal rank within its query (missing → 0)."""
    name = "rank"
    description = "reciprocal ranks within queries"
    axis_label = "reciprocal rank"

    def values(self, encoder, raw, offsets):
        out = np.zeros_like(raw)
        for q in range(len(offsets) - 1):
            lo, hi = offsets[q], offsets[q + 1]
            block = np.where(np.isnan(raw[lo:hi]), -np.inf, raw[lo:hi])
            ranks = (-block).argsort(axis=0, kind="stable").argsort(axis=0, kind="stable") + 1.0
            out[lo:hi] = np.where(np.isnan(raw[lo:hi]), 0.0, 1.0 / ranks)
        return out


@pytest.fixture
def rank_block(monkeypatch):
    monkeypatch.setitem(BLOCK_KINDS, "rank", Rank())
    yield BLOCK_KINDS["rank"]


def test_a_new_kind_is_one_class_and_one_registration(rank_block, tmp_path):
    """Registered, the kind is valid in ``features``, trained with others, named, saved, loaded and drawn."""
    raw, labels, offsets = _data(1)
    ranker = StructSVMRanker(C=1.0, features="raw+rank").fit(raw, labels, offsets)
    assert ranker.layout_.dim == 12 and ranker.feature_names_[6:9] == ["rank(f0)", "rank(f1)", "rank(f2)"]
    assert np.any(ranker.layout_.block_weights(ranker.coef_, "rank") != 0)
    scores = ranker.decision_function(raw, offsets)
    again = StructSVMRanker.from_state(*ranker.get_state())
    np.testing.assert_array_equal(again.decision_function(raw, offsets), scores)

    class Fitted:
        layout_, coef_ = ranker.layout_, ranker.coef_
    from pyterrier_svmmap.plot import contributions
    kinds = [c[1] for c in contributions(Fitted())]
    assert kinds == ["raw"] * 3 + ["rank"] * 3


def test_the_warm_up_compiles_every_kind():
    from pyterrier_svmmap.cli.warm_up import feature_settings
    assert {features for features, _ in feature_settings()} == set(BLOCK_KINDS)


def test_the_documentation_and_help_name_every_kind():
    from pyterrier_svmmap.svm.params import STRUCT_SVM_PARAMS
    doc = STRUCT_SVM_PARAMS["features"].doc
    import argparse

    from pyterrier_svmmap.cli import learn
    parser = argparse.ArgumentParser()
    learn.add_arguments(parser)
    help_text = next(a.help for a in parser._actions if "--features" in a.option_strings)
    for name, kind in BLOCK_KINDS.items():
        assert f'``"{name}"`` ({kind.description})' in doc
        assert re.search(rf"\b{name}\b", help_text), name


@pytest.mark.parametrize("name,x", [("raw", [-1.0, 3.0]), ("minmax", [0.0, 1.0])])
def test_a_dense_kind_draws_its_line_over_its_scale(name, x):
    """raw's picture spans the x_range asked for; minmax's is on its own [0, 1] scale whatever is asked."""
    raw, labels, offsets = _data(2)
    ranker = StructSVMRanker(C=1.0, features=name).fit(raw, labels, offsets)

    class Fitted:
        layout_, coef_ = ranker.layout_, ranker.coef_
    from pyterrier_svmmap.plot import contributions
    curves = contributions(Fitted(), x_range=(-1.0, 3.0))
    W = ranker.layout_.block_weights(ranker.coef_, name)
    for f, (_, kind, xs, ys, base) in enumerate(curves):
        assert kind == name and xs.tolist() == x
        np.testing.assert_array_equal(ys, W[0, f] * np.array(x))
        assert base == W[1, f]
