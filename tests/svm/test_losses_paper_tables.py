"""The losses on the paper's toy examples (Yue et al. 2007, Tables 1–4), and ``most_violated``'s input
checks (pyterrier_svmmap.svm.losses)."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap import get_loss, most_violated
from pyterrier_svmmap.svm.losses.map import average_precision_of_ranking


# -- the paper's toy examples (Yue et al. 2007, Tables 1–4) --------------------------------------
def _toy(p, rank_h1):
    labels = np.array(p)
    h1 = np.argsort(-np.array(rank_h1), kind="stable")      # rank value 8 (highest) first
    return labels, h1, h1[::-1]


def test_table_1_and_2_map_and_roc():
    labels, h1, h2 = _toy([1, 0, 0, 0, 0, 1, 1, 0], [8, 7, 6, 5, 4, 3, 2, 1])
    assert round(average_precision_of_ranking(h1, labels), 2) == 0.59
    assert round(average_precision_of_ranking(h2, labels), 2) == 0.51
    roc = get_loss("roc")
    assert round(1 - roc.delta(h1, labels), 2) == 0.47
    assert round(1 - roc.delta(h2, labels), 2) == 0.53


def test_table_3_and_4_map():
    # one copy of the paper prints 0.70/0.64 here; the ranking gives 0.56/0.51
    labels, h1, h2 = _toy([1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0], list(range(11, 0, -1)))
    assert round(average_precision_of_ranking(h1, labels), 2) == 0.56
    assert round(average_precision_of_ranking(h2, labels), 2) == 0.51


# -- Algorithm 2's exactness against brute force: test_losses_bruteforce.py, test_map_loss_kernels.py
def test_most_violated_rejects_bad_input():
    with pytest.raises(ValueError, match="finite"):
        most_violated([0.1, np.nan], [1, 0])
    with pytest.raises(ValueError, match="same length|one length"):
        most_violated([0.1, 0.2], [1, 0, 1])
