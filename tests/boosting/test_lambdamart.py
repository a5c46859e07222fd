"""LambdaMART (LightGBM) learns a synthetic problem and stops early on validation queries."""
import pytest

from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker

from tests.boosting.peers_data import held_out_map, synthetic


def test_lambdamart_beats_random():
    pytest.importorskip("lightgbm")
    got, random = held_out_map(LambdaMARTRanker)
    assert got > random + 0.2


def test_lambdamart_early_stopping_uses_validation():
    pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic()
    vraw, vlabels, voffsets = synthetic(seed=3)
    model = LambdaMARTRanker(n_estimators=1000, early_stopping_rounds=10).fit(
        raw, labels, offsets, vraw, vlabels, voffsets)
    assert model.best_iteration_ < 1000
