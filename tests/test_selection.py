"""Model selection (pyterrier_svmmap.selection): the grids, the folds, the rule that picks, the evidence."""
import math

import numpy as np
import pytest

from pyterrier_svmmap import selection
from pyterrier_svmmap.selection import (AUTO_FEATURES, c_grid, cv_folds, feature_options, features_name,
                                        first_best, select)


def test_the_rule_takes_the_first_maximum_and_ranks_nan_lowest():
    assert first_best([0.2, 0.5, 0.5, 0.1]) == 1
    assert first_best([float("nan"), 0.1, None]) == 1
    assert first_best([float("nan"), float("nan")]) == 0           # nothing scored: the first setting


def test_select_records_the_evidence_of_the_choice():
    folds = np.array([[0.1, 0.3], [0.2, 0.4]])
    choice = select(folds.mean(axis=0), "cv", folds)
    assert choice.chosen == 1 and choice.method == "cv" and choice.fold_scores is folds
    assert choice.scores == [pytest.approx(0.15), pytest.approx(0.35)]
    assert all(isinstance(s, float) for s in choice.scores)
    none = select([None], "none")
    assert none.chosen == 0 and math.isnan(none.scores[0])
    with pytest.raises(ValueError, match="method"):
        select([0.1], "best")


def test_select_applies_the_rule_of_the_module(monkeypatch):
    monkeypatch.setattr(selection, "RULE", lambda scores: len(scores) - 1)      # where a new rule goes
    assert select([0.9, 0.1], "validation").chosen == 1


def test_cv_folds_deal_shuffled_queries_round_robin():
    fold = cv_folds(11, 3, random_state=0, n_settings=2)
    assert sorted(np.bincount(fold)) == [3, 4, 4]
    assert np.array_equal(fold, cv_folds(11, 3, random_state=0, n_settings=2))
    assert not np.array_equal(fold, cv_folds(11, 3, random_state=1, n_settings=2))
    with pytest.raises(ValueError, match="needs at least 5 usable training queries"):
        cv_folds(4, 5, random_state=0, n_settings=6)


def test_grids_and_feature_options():
    assert c_grid(1) == [1.0] and c_grid([0.1, 10]) == [0.1, 10.0]
    for bad in ([], [0.0], [1.0, 1.0], "x", [float("inf")]):
        with pytest.raises(ValueError):
            c_grid(bad)
    assert feature_options("auto") == list(AUTO_FEATURES)
    assert feature_options(("bins", "raw")) == [("bins", "raw")]
    assert features_name(("bins", "raw")) == "bins+raw" == features_name("bins+raw")
