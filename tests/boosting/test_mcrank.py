"""McRank (LightGBM) learns a synthetic problem; its scores are expected grades."""
import pytest

from pyterrier_svmmap.boosting.mcrank import McRankRanker

from tests.boosting.peers_data import held_out_map, synthetic


def test_mcrank_beats_random():
    pytest.importorskip("lightgbm")
    got, random = held_out_map(McRankRanker)
    assert got > random + 0.2


def test_mcrank_expected_relevance_in_label_range():
    pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic(graded=True)
    s = McRankRanker().fit(raw, labels, offsets).predict(raw, offsets)
    assert s.min() >= 0 and s.max() <= labels.max()
