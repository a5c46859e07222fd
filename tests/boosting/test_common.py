"""What the boosted learners share (pyterrier_svmmap.boosting.common), and the old import path of all three."""
import numpy as np
import pytest

import pyterrier_svmmap.boosting.common as common
from pyterrier_svmmap.boosting.mcrank import McRankRanker

from tests.boosting.peers_data import synthetic


def test_fill_missing_ranks_missing_last():
    raw = np.array([[1.0], [np.nan], [3.0], [np.nan], [np.nan]])
    out = common.fill_missing(raw, np.array([0, 3, 5]))
    assert out[1, 0] < 1.0 and np.isfinite(out).all()
    assert (out[3:, 0] == 0).all()


def test_missing_lightgbm_gives_install_hint(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "lightgbm":
            raise ImportError("no lightgbm")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"pyterrier-svmmap\[peers\]"):
        McRankRanker().fit(*synthetic())


def test_a_boosted_ranker_scores_only_when_fitted_and_on_its_width():
    """Peer._scored: unfitted is a RuntimeError; candidates of another number of base functions a ValueError."""
    from pyterrier_svmmap.boosting.adarank import AdaRankRanker
    raw, labels, offsets = synthetic()
    with pytest.raises(RuntimeError, match="AdaRankRanker is not fitted"):
        AdaRankRanker().predict(raw, offsets)
    ranker = AdaRankRanker(n_rounds=3).fit(raw, labels, offsets)
    wider = np.hstack([raw, raw[:, :1]])
    with pytest.raises(ValueError, match=f"trained on {raw.shape[1]} base functions, got {raw.shape[1] + 1}"):
        ranker.predict(wider, offsets)
