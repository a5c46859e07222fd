"""Boosted peers (LambdaMART, McRank via LightGBM; AdaRank in numpy) learn a synthetic problem."""
import numpy as np
import pytest

import pyterrier_svmmap.boosting.peers as peers
from pyterrier_svmmap.measures import average_precision


def synthetic(n_queries=30, n_cand=60, n_funcs=6, seed=0, graded=False):
    """Relevance depends on functions 0 and 1 (1 with a negative sign → a learner must pick it up
    the right way); the rest is noise; 20% of scores are missing (NaN)."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_cand
    offsets = np.arange(n_queries + 1) * n_cand
    raw = rng.normal(size=(n, n_funcs)) * (1 + rng.integers(0, 3, size=n_queries).repeat(n_cand))[:, None]
    latent = raw[:, 0] - raw[:, 1] + 0.5 * rng.normal(size=n)
    labels = (latent > np.quantile(latent, 0.85)).astype(float)
    if graded:
        labels += latent > np.quantile(latent, 0.95)
    raw[rng.random(raw.shape) < 0.2] = np.nan
    return raw, labels, offsets


def random_map(labels, offsets, seed=1):
    rng = np.random.default_rng(seed)
    return average_precision(rng.random(len(labels)), labels, offsets).mean()


def test_fill_missing_ranks_missing_last():
    raw = np.array([[1.0], [np.nan], [3.0], [np.nan], [np.nan]])
    out = peers.fill_missing(raw, np.array([0, 3, 5]))
    assert out[1, 0] < 1.0 and np.isfinite(out).all()
    assert (out[3:, 0] == 0).all()


def test_adarank_learns_and_beats_random():
    raw, labels, offsets = synthetic()
    test_raw, test_labels, test_offsets = synthetic(seed=5)
    model = peers.AdaRankRanker(n_rounds=30).fit(raw, labels, offsets)
    got = average_precision(model.predict(test_raw, test_offsets), test_labels, test_offsets).mean()
    assert got > random_map(test_labels, test_offsets) + 0.2
    # single-feature weak rankers only get positive weights when they rank well: function 0 must
    # carry the model, function 1 (relevance falls with it) must not be used
    assert model.coef_[0] == model.coef_.max() > 0 and model.coef_[1] <= 0


def test_adarank_validation_selects_a_round():
    raw, labels, offsets = synthetic()
    vraw, vlabels, voffsets = synthetic(seed=3)
    model = peers.AdaRankRanker(n_rounds=20).fit(raw, labels, offsets, vraw, vlabels, voffsets)
    sel = [h["select"] for h in model.history_]
    assert model.best_round_ == int(np.argmax(sel)) + 1


@pytest.mark.parametrize("cls", ["LambdaMARTRanker", "McRankRanker"])
def test_lightgbm_peers_beat_random(cls):
    pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic(graded=True)
    vraw, vlabels, voffsets = synthetic(seed=3, graded=True)
    test_raw, test_labels, test_offsets = synthetic(seed=5, graded=True)
    model = getattr(peers, cls)().fit(raw, labels, offsets, vraw, vlabels, voffsets)
    got = average_precision(model.predict(test_raw, test_offsets), test_labels, test_offsets).mean()
    assert got > random_map(test_labels, test_offsets) + 0.2


def test_lambdamart_early_stopping_uses_validation():
    pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic()
    vraw, vlabels, voffsets = synthetic(seed=3)
    model = peers.LambdaMARTRanker(n_estimators=1000, early_stopping_rounds=10).fit(
        raw, labels, offsets, vraw, vlabels, voffsets)
    assert model.best_iteration_ < 1000


def test_mcrank_expected_relevance_in_label_range():
    pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic(graded=True)
    s = peers.McRankRanker().fit(raw, labels, offsets).predict(raw, offsets)
    assert s.min() >= 0 and s.max() <= labels.max()


def test_missing_lightgbm_gives_install_hint(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "lightgbm":
            raise ImportError("no lightgbm")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"pyterrier-svmmap\[peers\]"):
        peers.McRankRanker().fit(*synthetic())
