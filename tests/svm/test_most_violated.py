"""The compiled single-query argmax (``Loss.argmax``, what :func:`most_violated` returns) of every loss.

Each loss's ranking kernel (``kernel_call(n, "ranking")``) shares its solver with the loss's batch kernel; it is checked
against brute force over all rankings (n ≤ 7), against the numpy reference implementation
(``oracles/losses_reference.py``: equal H, and the very same ranking for the losses whose kernels keep the
reference's tie rule), and against the batch path (the constraint of the returned ranking is the batch's).
"""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap.svm.losses import (ComboLoss, DORMLoss, MAPLoss, MRRLoss, NDCGLoss, ROCLoss, get_loss,
                                          most_violated)

from tests.oracles.losses_reference import argmax_reference
from tests.svm.test_losses_bruteforce import brute_max, INSTANCES

LOSSES = [MAPLoss(), ROCLoss(), NDCGLoss(None), NDCGLoss(1), NDCGLoss(3), NDCGLoss(10), MRRLoss(None), MRRLoss(1),
          MRRLoss(4), DORMLoss(k=None, window=None), DORMLoss(k=2, window=3), DORMLoss(k=3, window=None)]
#: kernels with the reference's tie rule: the same ranking, not only the same H
SAME_RANKING = (MAPLoss, ROCLoss, MRRLoss)


def queries(seed, n_max=60, count=40):
    """(scores, labels) of one query each: ties (grids, steps of ½, tiny differences) and continuous scores,
    with the edge cases one relevant, one non-relevant, none relevant and all relevant."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, n_max))
        kind = i % 6
        z = (rng.random(n) < rng.uniform(0.05, 0.6)).astype(int)
        if kind == 3:
            z = np.zeros(n, dtype=int)
        elif kind == 4:
            z = np.ones(n, dtype=int)
        elif kind == 5:
            z = np.zeros(n, dtype=int)
            z[rng.integers(n)] = 1
        s = [rng.integers(-2, 3, n) * 0.5, rng.standard_normal(n), rng.integers(1, 4, n) * 1e-20][i % 3]
        out.append((s.astype(float), z))
    return out


def objective(loss, ranking, scores, labels):
    return loss.objective(ranking, scores, labels)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_compiled_argmax_matches_brute_force(loss, rankings):
    for scores, labels in INSTANCES:
        if len(scores) > 7:
            continue
        y = loss.argmax(scores, labels)
        assert sorted(y.tolist()) == list(range(len(scores)))
        assert abs(loss.objective(y, scores, labels) - brute_max(loss, scores, labels, rankings)) <= 1e-12


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_compiled_argmax_matches_the_reference(loss):
    for scores, labels in queries(1):
        y = loss.argmax(scores, labels)
        ref = argmax_reference(loss, scores, labels)
        assert sorted(y.tolist()) == list(range(len(scores)))
        h, h_ref = objective(loss, y, scores, labels), objective(loss, ref, scores, labels)
        assert abs(h - h_ref) <= 1e-12 * max(1.0, abs(h_ref)), (loss, scores, labels)
        if isinstance(loss, SAME_RANKING) or (isinstance(loss, NDCGLoss) and loss.k is not None
                                              and loss.k < len(scores)):
            np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_compiled_argmax_gives_the_batch_constraint(loss):
    """Δ and the coefficients of the returned ranking are the batch kernel's for that query."""
    for scores, labels in queries(2):
        y = loss.argmax(scores, labels)
        d, c = loss.batch_violation(scores, labels, np.array([0, len(scores)]))
        if not (0 < (labels > 0).sum() < len(labels)):
            continue
        assert abs(loss.delta(y, labels) - d[0]) <= 1e-12
        viol = loss.delta(y, labels) - (loss.ideal_psi_coef(labels) - loss.psi_coef(y, labels)) @ scores
        assert abs(viol - (d[0] - c @ scores)) <= 1e-12 * max(1.0, abs(viol))


@pytest.mark.parametrize("members", [["map", "ndcg@3", "mrr@4"], ["roc", "ndcg"], ["mrr@2", "map"]])
def test_combo_argmax_is_the_most_violated_members(members):
    loss = ComboLoss([get_loss(m) for m in members])
    for scores, labels in queries(3):
        y = loss.argmax(scores, labels)
        ref = argmax_reference(loss, scores, labels)
        v, v_ref = loss.member_values(y, scores, labels).max(), loss.member_values(ref, scores, labels).max()
        assert abs(v - v_ref) <= 1e-12 * max(1.0, abs(v_ref))


def test_public_most_violated_checks_its_input():
    with pytest.raises(ValueError, match="1-d"):
        most_violated(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="finite"):
        most_violated(np.array([0.0, np.nan]), np.array([1, 0]))
    assert most_violated(np.zeros(0), np.zeros(0), loss="ndcg@10").tolist() == []
