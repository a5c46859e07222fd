"""Frames to candidates (pyterrier_svmmap.frames.candidates_from_frame) at the user's edges: duplicate qrels
count once and conflicting ones warn; a features cell that is not a flat array of numbers is refused with
the fix."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import RunFeatures, SVMMap
from pyterrier_svmmap.frames import candidates_from_frame

from tests.frames.small_frames import small_frames
from tests.helpers import _synthetic_runs


def test_duplicate_qrels_count_once_and_conflicts_warn():
    """Issue: pd.concat([qrels, qrels]) halved validation MAP (the relevant count doubled)."""
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(4))
    res = RunFeatures(runs).transform(topics)
    once = candidates_from_frame(res, qrels)
    twice = candidates_from_frame(res, pd.concat([qrels, qrels]))
    np.testing.assert_array_equal(once.n_relevant, twice.n_relevant)
    np.testing.assert_array_equal(once.labels, twice.labels)
    a = SVMMap(C=[0.1, 10.0], n_bins=5).fit(res.iloc[:200], qrels, res.iloc[200:], qrels)
    b = SVMMap(C=[0.1, 10.0], n_bins=5).fit(res.iloc[:200], qrels, res.iloc[200:], pd.concat([qrels, qrels]))
    assert a.validation_ == b.validation_
    flipped = qrels.iloc[:3].assign(label=0)
    with pytest.warns(UserWarning, match="3 \\(qid, docno\\) pairs have different labels.*last label"):
        c = candidates_from_frame(res, pd.concat([qrels, flipped]))
    assert c.n_relevant.sum() == once.n_relevant.sum() - 3


def test_a_two_dimensional_features_cell_is_rejected():
    res = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"],
                        "features": [np.ones((2, 2)), np.ones((2, 2))]})
    with pytest.raises(ValueError, match=r"has shape \(2, 2\); each row needs a flat array"):
        candidates_from_frame(res)


@pytest.mark.parametrize("cell", ["1 2", np.array(["1", "2"]), b"12", np.array([1, "x"], dtype=object)])
def test_features_that_are_not_numbers_are_refused_with_the_fix(cell):
    res, qrels = small_frames()
    res["features"] = [cell] * len(res)
    with pytest.raises(ValueError, match=r"features of qid='0' docno='d0' is .*, not numbers: the features column "
                                         r"must hold numeric arrays.*np.array\(s.split\(\), dtype=float\)"):
        SVMMap(C=1.0).fit(res, qrels)
