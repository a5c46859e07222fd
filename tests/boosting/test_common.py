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
