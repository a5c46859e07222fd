"""The fast MAP argmax (closed-form gains + divide & conquer: the compiled kernels, and the numpy reference
implementation vectorised across queries) against the paper's O(|P|·|N|) Algorithm 2 and against brute force:
equal H on random instances, ties included."""
from __future__ import annotations


import numpy as np
import pytest

from pyterrier_svmmap.svm.losses import MAPLoss
from pyterrier_svmmap.svm.losses.base import Loss
from pyterrier_svmmap.svm.losses.map import interleave, map_slots, sort_by_score

from tests.oracles.losses_reference import map_batch_violation, map_slots_batch, map_slots_reference

LOSS = MAPLoss()


def _instance(rng, n, tie):
    scores = rng.integers(0, 3, n).astype(float) if tie else rng.normal(size=n)
    labels = (rng.random(n) < rng.uniform(0.05, 0.95)).astype(int)
    labels[rng.integers(n)] = 1
    labels[rng.integers(n)] = 0 if labels.sum() > 1 else labels[rng.integers(n)]
    return scores, labels


def _split(scores, labels):
    idx = np.arange(len(scores))
    rel = labels > 0
    return sort_by_score(idx[rel], scores), sort_by_score(idx[~rel], scores)


@pytest.mark.parametrize("tie", [False, True])
def test_fast_slots_match_reference_H(tie):
    rng = np.random.default_rng(1 + tie)
    for _ in range(400):
        scores, labels = _instance(rng, int(rng.integers(2, 120)), tie)
        pos, neg = _split(scores, labels)
        if not len(pos) or not len(neg):
            continue
        fast = map_slots(scores[pos], scores[neg])
        ref = map_slots_reference(scores[pos], scores[neg])
        assert (np.diff(fast) >= 0).all()
        h_fast = LOSS.objective(interleave(pos, neg, fast), scores, labels)
        h_ref = LOSS.objective(interleave(pos, neg, ref), scores, labels)
        assert abs(h_fast - h_ref) <= 1e-12


def test_fast_slots_batch_numpy_matches_per_query():
    rng = np.random.default_rng(5)
    P, N = rng.integers(1, 30, 25), rng.integers(1, 60, 25)
    pos = [np.sort(rng.normal(size=p))[::-1] for p in P]
    neg = [np.sort(rng.integers(-2, 3, size=n).astype(float))[::-1] for n in N]
    batch = map_slots_batch(np.concatenate(pos), np.r_[0, np.cumsum(P)], np.concatenate(neg), np.r_[0, np.cumsum(N)])
    for q in range(25):
        got = batch[np.r_[0, np.cumsum(N)][q]:np.r_[0, np.cumsum(N)][q + 1]]
        ref = map_slots_reference(pos[q], neg[q])
        gain = lambda s: sum(_gain(pos[q], neg[q], j, s[j]) for j in range(len(neg[q])))
        assert abs(gain(got) - gain(ref)) <= 1e-12


def _gain(pos, neg, j, t):
    """δ_j(t+1, |P|+1) summed step by step (Eq. 5–6), 0-based j and slot t."""
    P, N = len(pos), len(neg)
    jj = j + 1
    return sum((jj / (jj + i) - (jj - 1) / (jj + i - 1)) / P - 2 * (pos[i - 1] - neg[j]) / (P * N)
               for i in range(t + 1, P + 1))


def brute_force_H(scores, labels, rankings):
    """H(y) = Δ(y) + wᵀΨ(x, y) of every ranking y of one query at once, computed from the paper's
    definitions (independently of the package): Δ = 1 − AP(y) and
    wᵀΨ = 1/(|P||N|) Σ_{i∈P} Σ_{j∈N} y_ij (s_i − s_j), y_ij = +1 when i is ranked above j, else −1.
    ``rankings``: the fixture of tests/svm/conftest.py. Returns (all rankings, H of each)."""
    scores, labels = np.asarray(scores, float), np.asarray(labels)
    perms = rankings(len(scores))
    rel = labels[perms] > 0                                    # (n!, n): relevance by rank
    ranks = np.arange(1, len(scores) + 1)
    ap = (np.cumsum(rel, axis=1) / ranks * rel).sum(axis=1) / rel[0].sum()
    position = np.argsort(perms, axis=1)                       # rank of each candidate, per ranking
    pos, neg = np.flatnonzero(labels > 0), np.flatnonzero(labels <= 0)
    above = np.where(position[:, pos, None] < position[:, None, neg], 1.0, -1.0)   # (n!, P, N)
    diff = scores[pos, None] - scores[None, neg]
    psi = (above * diff).sum(axis=(1, 2)) / (len(pos) * len(neg))
    return perms, (1.0 - ap) + psi


def test_brute_force_H_agrees_with_hand_computation_and_loss_objective(rankings):
    # two candidates, relevant one scored 1.0, non-relevant 3.0: ranking (0, 1) has AP 1, wᵀΨ = 1 − 3;
    # ranking (1, 0) has AP 1/2, wᵀΨ = −(1 − 3) = 2
    perms, h = brute_force_H([1.0, 3.0], [1, 0], rankings)
    assert perms.tolist() == [[0, 1], [1, 0]]
    np.testing.assert_allclose(h, [0.0 + -2.0, 0.5 + 2.0], rtol=0, atol=1e-15)
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores, labels = _instance(rng, int(rng.integers(2, 7)), False)
        if labels.all() or not labels.any():
            continue
        perms, h = brute_force_H(scores, labels, rankings)
        for k in rng.integers(0, len(perms), 5):
            assert abs(LOSS.objective(perms[k], scores, labels) - h[k]) <= 1e-12


@pytest.mark.parametrize("tie", [False, True])
def test_fast_argmax_matches_brute_force(tie, rankings):
    rng = np.random.default_rng(11 + tie)
    checked = 0
    for _ in range(60):
        n = int(rng.integers(2, 8))
        scores, labels = _instance(rng, n, tie)
        if labels.all() or not labels.any():
            continue
        best = brute_force_H(scores, labels, rankings)[1].max()
        got = LOSS.objective(LOSS.argmax(scores, labels), scores, labels)
        assert abs(got - best) <= 1e-12
        delta, coef = LOSS.violation(scores, labels)
        h = delta - coef @ scores + LOSS.ideal_psi_coef(labels) @ scores
        assert abs(h - best) <= 1e-12
        checked += 1
    assert checked >= 40


@pytest.mark.parametrize("path", ["default", "numpy"])
def test_batch_violation_matches_per_query_reference(path):
    rng = np.random.default_rng(7)
    for it in range(60):
        sizes = rng.integers(1, 50, int(rng.integers(1, 15)))
        offsets = np.r_[0, np.cumsum(sizes)]
        scores = rng.integers(0, 3, offsets[-1]).astype(float) if it % 2 else rng.normal(size=offsets[-1])
        labels = (rng.random(offsets[-1]) < rng.random()).astype(int)
        batch = LOSS.batch_violation if path == "default" else map_batch_violation
        deltas, coef = batch(scores, labels, offsets)
        for q in range(len(sizes)):
            lo, hi = offsets[q], offsets[q + 1]
            s, y = scores[lo:hi], labels[lo:hi]
            pos, neg = _split(s, y)
            if not len(pos) or not len(neg):
                assert deltas[q] == 0 and not coef[lo:hi].any()
                continue
            h_ref = LOSS.objective(interleave(pos, neg, map_slots_reference(s[pos], s[neg])), s, y)
            h = deltas[q] - coef[lo:hi] @ s + LOSS.ideal_psi_coef(y) @ s
            assert abs(h - h_ref) <= 1e-12
            # the coefficients are those of a ranking whose Δ is the reported one
            assert abs(Loss.violation(LOSS, s, y)[0] - deltas[q]) <= 1e-12 or abs(
                LOSS.objective(LOSS.argmax(s, y), s, y) - h) <= 1e-12


def test_large_query_matches_reference():
    rng = np.random.default_rng(3)
    for n, frac in [(3000, 0.01), (3000, 0.3), (2000, 0.5)]:
        s = np.round(rng.normal(size=n), 1)                  # many ties
        y = (rng.random(n) < frac).astype(int)
        pos, neg = _split(s, y)
        h_fast = LOSS.objective(interleave(pos, neg, map_slots(s[pos], s[neg])), s, y)
        h_np = LOSS.objective(interleave(pos, neg, map_slots_batch(s[pos], [0, len(pos)], s[neg], [0, len(neg)])), s, y)
        h_ref = LOSS.objective(interleave(pos, neg, map_slots_reference(s[pos], s[neg])), s, y)
        assert abs(h_fast - h_ref) <= 1e-12 and abs(h_np - h_ref) <= 1e-12
