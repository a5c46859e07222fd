"""AdaRank (numpy) learns a synthetic problem and selects its round on validation queries."""
import numpy as np

from pyterrier_svmmap.boosting.adarank import AdaRankRanker
from pyterrier_svmmap.measures import average_precision

from tests.boosting.peers_data import random_map, synthetic


def test_adarank_learns_and_beats_random():
    raw, labels, offsets = synthetic()
    test_raw, test_labels, test_offsets = synthetic(seed=5)
    model = AdaRankRanker(n_rounds=30).fit(raw, labels, offsets)
    got = average_precision(model.predict(test_raw, test_offsets), test_labels, test_offsets).mean()
    assert got > random_map(test_labels, test_offsets) + 0.2
    # single-feature weak rankers only get positive weights when they rank well: function 0 must
    # carry the model, function 1 (relevance falls with it) must not be used
    assert model.coef_[0] == model.coef_.max() > 0 and model.coef_[1] <= 0


def test_adarank_validation_selects_a_round():
    raw, labels, offsets = synthetic()
    vraw, vlabels, voffsets = synthetic(seed=3)
    model = AdaRankRanker(n_rounds=20).fit(raw, labels, offsets, vraw, vlabels, voffsets)
    sel = [h["select"] for h in model.history_]
    assert model.best_round_ == int(np.argmax(sel)) + 1
