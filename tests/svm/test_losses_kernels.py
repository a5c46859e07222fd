"""The compiled batch violations (numba kernels of ``losses/_rank_kernels.py``, what ``batch_violation`` runs)
against the per-query reference (each query's constraint from the numpy reference argmax of
``oracles/losses_reference.py``), and the vectorised numpy references against the kernels.

Compared per query, on batches of queries of different sizes: the constraint value
Δ(ŷ) − (c(y*) − c(ŷ))·s (= H(ŷ) − c(y*)·s, so equal values mean equal H) to 1e-12 relative, Δ(ŷ), and
the coefficients where the argmax is unique (distinct continuous scores) — for the kernels that keep
the reference's tie rule (NDCG@k's DP, MRR, ROC) on tied scores too.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from pyterrier_svmmap.svm.losses import BalancedClassificationLoss, ClassificationLoss, DORMLoss, MRRLoss, NDCGLoss, ROCLoss, get_loss
from pyterrier_svmmap.svm.losses import _numba
from pyterrier_svmmap.svm.losses.combo import ComboLoss, combine_members, most_violated_member

from tests.oracles.losses_reference import argmax_reference, batch_violation_reference

REL = 1e-12


# ------------------------------------------------------------------------------------------------
# instances
# ------------------------------------------------------------------------------------------------
def _labels(rng, n, kind):
    """Labels of one query: random, or one of the edge cases."""
    if kind == "one_rel":
        z = np.zeros(n, dtype=int)
        z[rng.integers(n)] = 1
    elif kind == "one_nonrel":
        z = np.ones(n, dtype=int)
        z[rng.integers(n)] = 0
    elif kind == "all_rel":
        z = np.ones(n, dtype=int)
    elif kind == "none_rel":
        z = np.zeros(n, dtype=int)
    else:
        z = (rng.random(n) < rng.uniform(0.05, 0.7)).astype(int)
    return z * rng.integers(1, 3, n)                    # graded labels: only > 0 counts


def _scores(rng, n, ties):
    if ties == "grid":
        return rng.integers(-2, 3, n) * 0.5             # ties, and differences of exactly ½ (ROC's key ties)
    if ties == "int":
        return rng.integers(0, 3, n).astype(float)
    if ties == "tiny":
        return rng.integers(1, 4, n) * 1e-20            # distinct scores, equal ROC keys s ± ¼
    if ties == "keys":
        # distinct non-relevant scores ~1e-20 share the key ¼ with a relevant score ½ (and −½ + ¼ = −¼
        # with relevant ~1e-20): ROC's merge must order equal keys by index, within a class too
        return rng.choice([0.5, -0.5, 1e-20, 2e-20, 3e-20], n)
    return rng.normal(0.0, rng.choice([0.01, 0.3, 3.0]), n)


def batch(rng, ties, n_queries=12, max_n=40, edge=True):
    """(scores, labels, offsets): queries of sizes 1..max_n, edge cases mixed in, one empty query."""
    kinds = ["random"] * 6 + (["one_rel", "one_nonrel", "all_rel", "none_rel"] if edge else [])
    sizes = rng.integers(1, max_n + 1, n_queries)
    sizes[rng.integers(n_queries)] = 0 if edge else sizes[0]
    s, z = [], []
    for n in sizes:
        kind = kinds[rng.integers(len(kinds))] if n > 1 else "random"
        s.append(_scores(rng, n, ties))
        z.append(_labels(rng, n, kind))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return np.concatenate(s), np.concatenate(z), offsets


def reference_violation(loss, scores, labels):
    """(Δ(ŷ), c(y*) − c(ŷ)) of one query, ŷ the reference argmax (a combo: its most violated member's)."""
    if isinstance(loss, ComboLoss):
        found = [reference_violation(m, scores, labels) for m in loss.losses]
        return found[int(most_violated_member(np.array([[d - float(c @ scores)] for d, c in found]))[0])]
    y = argmax_reference(loss, scores, labels)
    return loss.delta(y, labels), loss.ideal_psi_coef(labels) - loss.psi_coef(y, labels)


def reference(loss, scores, labels, offsets):
    """The per-query reference, query by query (the generic loop of :class:`Loss`)."""
    n_q = len(offsets) - 1
    deltas, coef = np.empty(n_q), np.empty(len(scores))
    for q in range(n_q):
        lo, hi = offsets[q], offsets[q + 1]
        deltas[q], coef[lo:hi] = reference_violation(loss, scores[lo:hi], labels[lo:hi])
    return deltas, coef


def compare(loss, scores, labels, offsets, coefficients: bool, got=None):
    """Assert the batch path equals the per-query reference on every query."""
    d, c = got if got is not None else loss.batch_violation(scores, labels, offsets)
    rd, rc = reference(loss, scores, labels, offsets)
    assert d.shape == rd.shape and c.shape == rc.shape
    for q in range(len(offsets) - 1):
        lo, hi = offsets[q], offsets[q + 1]
        s = scores[lo:hi]
        scale = 1.0 + np.abs(rc[lo:hi] * s).sum() + abs(rd[q])
        v, rv = d[q] - c[lo:hi] @ s, rd[q] - rc[lo:hi] @ s
        ctx = (loss, q, s, labels[lo:hi])
        assert abs(v - rv) <= REL * scale, ctx + (v, rv)
        if coefficients or _same_ties(loss):
            assert abs(d[q] - rd[q]) <= REL * max(1.0, abs(rd[q])), ctx + (d[q], rd[q])
        else:       # tied scores: another optimal ranking may have another Δ; it must be that ranking's Δ
            implied = implied_delta(loss, c[lo:hi], labels[lo:hi])
            if implied is not None:
                assert abs(d[q] - implied) <= 1e-9, ctx + (d[q], implied)
                assert abs(rd[q] - implied_delta(loss, rc[lo:hi], labels[lo:hi])) <= 1e-9   # the helper
        if coefficients:
            np.testing.assert_allclose(c[lo:hi], rc[lo:hi], rtol=0, atol=1e-12 * max(1.0, np.abs(rc[lo:hi]).max(initial=0)),
                                       err_msg=str(ctx))


def implied_delta(loss, coef, labels):
    """Δ of the ranking that coefficients c(y*) − c(ŷ) describe (NDCG, DORM; None for other losses),
    to check a batch result that differs from the reference on ties against itself."""
    rel = labels > 0
    P, n = int(rel.sum()), len(labels)
    if P in (0, n) or not isinstance(loss, (NDCGLoss, DORMLoss)):
        return None if not isinstance(loss, (NDCGLoss, DORMLoss)) else 0.0
    d = 1.0 / np.log2(np.arange(n) + 2.0)
    if loss.k is not None:
        d[loss.k:] = 0.0
    if isinstance(loss, NDCGLoss):
        # relevant g has a_g non-relevant above: coef = 2·a_g/(|P||N|); ranks are g + a_(g) in order
        a = np.sort(np.rint(coef[rel] * P * (n - P) / 2.0))
        ranks = np.arange(P) + a.astype(int)
    else:
        # A(rank) = c(y*) − coef within the window; 0 outside (rank ≥ window ≥ k: no discount)
        a = loss.ideal_psi_coef(labels)[rel] - coef[rel]
        inside = a > 1e-9
        ranks = np.where(inside, np.rint(1.0 / np.where(inside, a, 1.0) ** 2 - 1.0), n).astype(int)
        ranks = ranks[ranks < n]
    return 1.0 - d[ranks].sum() / d[:P].sum()


def single_losses():
    ls = [ROCLoss()]
    ls += [NDCGLoss(k) for k in (None, 1, 2, 3, 5, 10, 50)]
    ls += [MRRLoss(k) for k in (None, 1, 2, 3, 10)]
    ls += [DORMLoss(k=None, window=None), DORMLoss(k=1, window=1), DORMLoss(k=2, window=4),
           DORMLoss(k=3, window=None), DORMLoss(k=10, window=12), DORMLoss()]
    return ls


COMBOS = [["map", "ndcg@10", "mrr@10"], ["roc", "dorm@2"], ["ndcg", "mrr"], ["map", "roc", "ndcg@3"]]

#: kernels that keep the reference's tie rule exactly (NDCG-NC uses another algorithm than the
#: reference's DP, DORM a DP instead of the assignment solver: equal H, maybe other optimal rankings)
SAME_TIES = (ROCLoss, MRRLoss)


def _same_ties(loss):
    return isinstance(loss, SAME_TIES) or (isinstance(loss, NDCGLoss) and loss.k is not None and loss.k <= 10)


# ------------------------------------------------------------------------------------------------
# the batch paths against the per-query reference
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", single_losses(), ids=repr)
@pytest.mark.parametrize("ties", ["none", "grid", "int", "tiny", "keys"])
def test_batch_matches_per_query(loss, ties):
    rng = np.random.default_rng(zlib.crc32(f"{loss!r} {ties}".encode()))
    for _ in range(25):
        scores, labels, offsets = batch(rng, ties)
        coefficients = ties == "none" or _same_ties(loss)
        compare(loss, scores, labels, offsets, coefficients)


@pytest.mark.parametrize("names", COMBOS, ids="+".join)
@pytest.mark.parametrize("ties", ["none", "grid"])
def test_combo_batch_matches_per_query(names, ties):
    loss = get_loss("combo", losses=names)
    rng = np.random.default_rng(len(names) + 7 * (ties == "grid"))
    for _ in range(15):
        scores, labels, offsets = batch(rng, ties)
        compare(loss, scores, labels, offsets, coefficients=ties == "none")


@pytest.mark.parametrize("loss", [NDCGLoss(None), NDCGLoss(10), MRRLoss(10), ROCLoss(), DORMLoss(),
                                  DORMLoss(k=5, window=None)], ids=repr)
def test_batch_matches_per_query_on_big_queries(loss):
    """Queries of up to 300 candidates: deep slot recursion (NDCG-NC), windows shorter than both classes
    (DORM), cutoffs far below n."""
    rng = np.random.default_rng(3)
    for ties in ("none", "grid"):
        scores, labels, offsets = batch(rng, ties, n_queries=4, max_n=300, edge=False)
        compare(loss, scores, labels, offsets, coefficients=ties == "none")


@pytest.mark.parametrize("loss", [NDCGLoss(k) for k in (None, 1, 3, 10)] + [MRRLoss(3), ROCLoss()]
                         + [DORMLoss(k=2, window=3), DORMLoss(k=None, window=None)], ids=repr)
def test_degenerate_queries_have_no_constraint(loss):
    """All relevant, none relevant, one candidate, empty: Δ = 0; zero coefficients for the losses with
    Ψ(y*) = Ψ(ŷ) then (DORM's Ψ(y*) is an average over correct rankings: its coefficients are those of
    the reference, checked by compare)."""
    rng = np.random.default_rng(4)
    sizes = [5, 5, 1, 1, 0, 7]
    labels = np.concatenate([np.ones(5), np.zeros(5), [1], [0], [], np.full(7, 2)]).astype(int)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for scores in (rng.normal(size=offsets[-1]), rng.integers(0, 2, offsets[-1]).astype(float)):
        d, c = loss.batch_violation(scores, labels, offsets)
        assert np.all(d == 0.0)
        if not isinstance(loss, DORMLoss):
            assert np.all(c == 0.0)
        compare(loss, scores, labels, offsets, coefficients=True, got=(d, c))


@pytest.mark.parametrize("loss", [NDCGLoss(3), NDCGLoss(None), MRRLoss(2), DORMLoss(k=2, window=3)], ids=repr)
def test_cutoff_around_query_size(loss):
    """k = n − 1, n, n + 1 (the NDCG kernel switches from the DP to the slot search at k ≥ n)."""
    rng = np.random.default_rng(5)
    k = loss.k or 3
    for n in (k - 1, k, k + 1, k + 2):
        if n < 2:
            continue
        for _ in range(30):
            scores = _scores(rng, n, ["none", "grid"][_ % 2])
            labels = _labels(rng, n, "random")
            compare(loss, scores, labels, np.array([0, n]), coefficients=_ % 2 == 0)


def test_combine_members_ties_go_to_the_first_member():
    """Violations equal up to rounding (1e-13 apart) pick the first member, as the per-query path does
    (whose sums round differently); a clear winner is taken whatever its position."""
    scores = np.array([0.3, -0.2, 1.0])
    offsets = np.array([0, 2, 3])
    first = (np.array([0.5, 0.2]), np.array([0.1, -0.1, 0.0]))
    near = (np.array([0.5 + 1e-13, 0.2]), np.array([0.1, -0.1, 0.5]))
    d, c = combine_members([first, near], scores, offsets)
    np.testing.assert_array_equal(d, [0.5, 0.2])
    np.testing.assert_array_equal(c, [0.1, -0.1, 0.0])
    d, c = combine_members([near, first], scores, offsets)
    np.testing.assert_array_equal(d, [0.5 + 1e-13, 0.2])     # query 1: 0.2 beats 0.2 − 0.5·1.0
    np.testing.assert_array_equal(c, [0.1, -0.1, 0.0])
    clear = (np.array([0.5, 0.9]), np.array([0.1, -0.1, 0.1]))
    d, c = combine_members([first, clear], scores, offsets)
    np.testing.assert_array_equal(d, [0.5, 0.9])       # query 0 tied: first; query 1: clear wins
    np.testing.assert_array_equal(c, [0.1, -0.1, 0.1])


# ------------------------------------------------------------------------------------------------
# the kernels' parts, and the vectorised references
# ------------------------------------------------------------------------------------------------
def test_split_query_restores_the_stable_order_for_short_and_long_tie_runs():
    """The kernels' split of a query into classes, each by decreasing score with equal scores by
    candidate index, from an order whose ties are shuffled: runs of 2 to 200 equal scores (insertion
    below ``_INSERTION_RUN``, np.sort above), against a stable lexsort."""
    import pyterrier_svmmap.svm.losses._rank_kernels as _rank_jit
    rng = np.random.default_rng(12)
    lengths = [1, 2, 3, _rank_jit._INSERTION_RUN, _rank_jit._INSERTION_RUN + 1, 200, 5, 1]
    scores = np.concatenate([np.full(n, float(v)) for v, n in zip(rng.permutation(len(lengths)), lengths)])
    perm = rng.permutation(len(scores))                     # candidates' positions shuffled
    scores = scores[perm]
    rel = np.ascontiguousarray(rng.random(len(scores)) < 0.5)
    by_score = np.argsort(-scores, kind="stable")
    shuffled = np.concatenate([rng.permutation(by_score[scores[by_score] == v]) for v in np.unique(scores)[::-1]])
    pi, ps, ni, ns = _rank_jit.split_query(scores, rel, shuffled.astype(np.int64), 0, len(scores))
    np.testing.assert_array_equal(pi, by_score[rel[by_score]])
    np.testing.assert_array_equal(ni, by_score[~rel[by_score]])
    np.testing.assert_array_equal(ps, scores[pi])
    np.testing.assert_array_equal(ns, scores[ni])


@pytest.mark.parametrize("loss", [ClassificationLoss(), ClassificationLoss(2.5), BalancedClassificationLoss()],
                         ids=repr)
def test_classification_kernel_equals_numpy_bit_for_bit(loss):
    """SVM_acc / SVM_acc2's compiled batch against the vectorised numpy reference:
    the same floats, ties at the margin z·s = 1 and NaN scores included; costs and n̄ from the batch."""
    rng = np.random.default_rng(11)
    for ties in ("none", "grid", "int"):
        scores, labels, offsets = batch(rng, ties, edge=True)
        scores[rng.integers(len(scores))] = np.nan
        d, c = loss.batch_violation(scores, labels, offsets)
        rd, rc = batch_violation_reference(loss, scores, labels, offsets)
        np.testing.assert_array_equal(d, rd)
        np.testing.assert_array_equal(c, rc)
        assert (c != 0).any() and (c == 0).any()


@pytest.mark.parametrize("loss", [NDCGLoss(10), NDCGLoss(None), MRRLoss(10), ROCLoss(), DORMLoss(),
                                  get_loss("combo", losses=["map", "ndcg@10", "mrr@10", "roc", "dorm"]),
                                  ClassificationLoss(), BalancedClassificationLoss()],
                         ids=repr)
def test_batch_uses_the_kernels_by_default(loss, monkeypatch):
    """batch_violation never calls the per-query argmax or violation."""
    def boom(*args, **kwargs):
        raise AssertionError("per-query path called")

    for cls in (NDCGLoss, MRRLoss, ROCLoss, DORMLoss, ClassificationLoss):
        for name in ("argmax", "violation"):
            if hasattr(cls, name):
                monkeypatch.setattr(cls, name, boom)
    rng = np.random.default_rng(6)
    scores, labels, offsets = batch(rng, "none", edge=False)
    d, c = loss.batch_violation(scores, labels, offsets)
    assert d.shape == (len(offsets) - 1,) and c.shape == scores.shape and (d > 0).any()


@pytest.mark.parametrize("loss", [ROCLoss(), MRRLoss(None), MRRLoss(1), MRRLoss(3), MRRLoss(10)], ids=repr)
@pytest.mark.parametrize("ties", ["none", "grid", "tiny"])
def test_vectorised_references_match_the_kernels(loss, ties):
    """ROC's and MRR's vectorised numpy references give the kernels' constraints (ties included: both keep
    the stable tie rule)."""
    rng = np.random.default_rng(zlib.crc32(f"{loss!r} {ties} vectorised".encode()))
    for _ in range(10):
        scores, labels, offsets = batch(rng, ties)
        compare(loss, scores, labels, offsets, coefficients=True,
                got=batch_violation_reference(loss, scores, labels, offsets))


def test_combo_shares_one_sort(monkeypatch):
    """A combo of kernel losses sorts the scores once, not once per member."""
    calls = []
    real = _numba.score_sorter
    monkeypatch.setattr(_numba, "score_sorter", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(8)
    scores, labels, offsets = batch(rng, "none", edge=False)
    get_loss("combo", losses=["map", "ndcg@10", "mrr@10", "dorm"]).batch_violation(scores, labels, offsets)
    assert len(calls) == 1


@pytest.mark.parametrize("loss", [NDCGLoss(10), MRRLoss(10), ROCLoss(), DORMLoss()], ids=repr)
def test_bad_batches_raise_clear_errors(loss):
    s, z = np.zeros(6), np.array([1, 0, 1, 0, 0, 1])
    with pytest.raises(ValueError, match="one length"):
        loss.batch_violation(s, z[:5], np.array([0, 6]))
    with pytest.raises(ValueError, match="offsets"):
        loss.batch_violation(s, z, np.array([0, 4]))
    with pytest.raises(ValueError, match="offsets"):
        loss.batch_violation(s, z, np.array([0, 4, 2, 6]))


def test_empty_batch():
    for loss in (NDCGLoss(3), MRRLoss(2), ROCLoss(), DORMLoss(k=2, window=2)):
        d, c = loss.batch_violation(np.zeros(0), np.zeros(0, dtype=int), np.array([0]))
        assert d.shape == (0,) and c.shape == (0,)
