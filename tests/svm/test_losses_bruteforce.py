"""Every loss's argmax against brute force over all rankings (n ≤ 8), Δ against ir_measures, and the
constraint / solver plumbing (violation, batch_violation, combo slack groups).

The brute force evaluates Δ(y) and c(y)·s for *all* permutations at once with numpy, written here
independently of the losses' code; a random subset of permutations is checked against
``loss.objective`` so that the vectorised evaluators and the losses agree on what H is.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
from pyterrier_svmmap.svm.losses import (ComboLoss, DORMLoss, MAPLoss, MRRLoss, NDCGLoss, ROCLoss,
                                     ClassificationLoss, get_loss, most_violated)
from pyterrier_svmmap.svm.slack import make_slack_groups
from pyterrier_svmmap.svm.losses.base import Loss
from tests.oracles.losses_reference import ndcg_counts
from pyterrier_svmmap.svm.cutting_plane import SlackGroup, train_structural_svm

TOL = 1e-12


# ------------------------------------------------------------------------------------------------
# vectorised Δ and c(y)·s over a matrix of rankings (one per row)
# ------------------------------------------------------------------------------------------------
def _disc(n, k):
    d = 1.0 / np.log2(np.arange(n) + 2.0)
    if k is not None:
        d[k:] = 0
    return d


def delta_all(loss: Loss, R: np.ndarray, labels: np.ndarray) -> np.ndarray:
    rel = labels[R] > 0
    n = R.shape[1]
    P = int((labels > 0).sum())
    N = n - P
    ranks = np.arange(1, n + 1)
    if isinstance(loss, MAPLoss):
        prec = np.cumsum(rel, axis=1) / ranks
        return 1.0 - (prec * rel).sum(axis=1) / P
    if isinstance(loss, ROCLoss):
        neg_above = np.cumsum(~rel, axis=1)
        return (neg_above * rel).sum(axis=1) / (P * N)
    if isinstance(loss, (NDCGLoss, DORMLoss)):
        d = _disc(n, loss.k)
        return 1.0 - (rel * d).sum(axis=1) / d[:P].sum()
    if isinstance(loss, MRRLoss):
        first = np.argmax(rel, axis=1)
        rr = 1.0 / (first + 1.0)
        if loss.k is not None:
            rr[first >= loss.k] = 0.0
        return 1.0 - rr
    raise TypeError(loss)


def score_all(loss: Loss, R: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    rel = labels[R] > 0
    S = scores[R]
    n = R.shape[1]
    P = int((labels > 0).sum())
    N = n - P
    if isinstance(loss, (MAPLoss, ROCLoss, NDCGLoss)):
        # F(y) = 1/(PN) Σ_{i∈P, j∈N} y_ij (s_i − s_j), directly over pairs of positions
        tot = np.zeros(len(R))
        for a in range(n):
            for b in range(a + 1, n):      # position a above position b
                pair = rel[:, a] != rel[:, b]
                sign = np.where(rel[:, a], 1.0, -1.0)          # +1 if the relevant one is above
                s_rel = np.where(rel[:, a], S[:, a], S[:, b])
                s_non = np.where(rel[:, a], S[:, b], S[:, a])
                tot += np.where(pair, sign * (s_rel - s_non), 0.0)
        return tot / (P * N)
    if isinstance(loss, MRRLoss):
        first = np.argmax(rel, axis=1)
        above = np.arange(n)[None, :] < first[:, None]
        return (S * above).sum(axis=1) - first * S[np.arange(len(R)), first]
    if isinstance(loss, DORMLoss):
        return S @ loss.decay(n)
    raise TypeError(loss)


def brute_max(loss: Loss, scores: np.ndarray, labels: np.ndarray, rankings) -> float:
    """max over every ranking of Δ + c·s; ``rankings``: the fixture of tests/svm/conftest.py."""
    R = rankings(len(scores))
    return float((delta_all(loss, R, labels) + score_all(loss, R, labels, scores)).max())


# ------------------------------------------------------------------------------------------------
# instances
# ------------------------------------------------------------------------------------------------
def instances(seed: int = 0):
    """(scores, labels) for n = 2..8: ties (small integer grids, incl. steps of ½) and distinct floats."""
    rng = np.random.default_rng(seed)
    out = []
    for n in range(2, 9):
        reps = 3 if n == 8 else 6
        for rep in range(reps):
            labels = np.zeros(n, dtype=int)
            n_rel = rng.integers(1, n)                 # at least one of each
            labels[rng.choice(n, n_rel, replace=False)] = 1
            kind = rep % 3
            if kind == 0:
                scores = rng.integers(0, 3, n) * 0.5          # ties, and differences of exactly ½
            elif kind == 1:
                scores = rng.normal(0, [0.05, 0.5, 3.0][rep % 3 if n % 2 else (rep + 1) % 3], n)
            else:
                scores = rng.integers(-2, 3, n).astype(float)  # ties on an integer grid
            out.append((scores, labels))
    return out


INSTANCES = instances()


def single_losses():
    ls = [MAPLoss(), ROCLoss()]
    ls += [NDCGLoss(k) for k in (None, 1, 2, 3, 5, 10)]
    ls += [MRRLoss(k) for k in (None, 1, 2, 4, 10)]
    ls += [DORMLoss(k=None, window=None), DORMLoss(k=2, window=2), DORMLoss(k=2, window=4),
           DORMLoss(k=3, window=None), DORMLoss(k=10, window=12)]
    return ls


@pytest.mark.parametrize("loss", single_losses(), ids=repr)
def test_argmax_matches_brute_force(loss, rankings):
    rng = np.random.default_rng(1)
    for scores, labels in INSTANCES:
        y_hat = loss.argmax(scores, labels)
        assert sorted(y_hat.tolist()) == list(range(len(scores))), "argmax must return a permutation"
        h_hat = loss.objective(y_hat, scores, labels)
        best = brute_max(loss, scores, labels, rankings)
        assert abs(h_hat - best) <= TOL, (loss, scores, labels, y_hat, h_hat, best)
        # the vectorised evaluators agree with the loss's own Δ and Ψ on a few rankings
        R = rankings(len(scores))
        pick = rng.choice(len(R), min(len(R), 4), replace=False)
        vec = delta_all(loss, R[pick], labels) + score_all(loss, R[pick], labels, scores)
        own = [loss.objective(r, scores, labels) for r in R[pick]]
        np.testing.assert_allclose(vec, own, rtol=0, atol=TOL)


def test_brute_force_is_not_vacuous(rankings):
    """A deliberately wrong argmax (sort by score) must lose to the brute force somewhere."""
    loss = NDCGLoss(3)
    gaps = [brute_max(loss, s, z, rankings) - loss.objective(np.argsort(-s, kind="stable"), s, z) for s, z in INSTANCES]
    assert max(gaps) > 1e-3


@pytest.mark.parametrize("k", [None, 1, 3, 10])
def test_ndcg_reduced_table_matches_full_table(k):
    """Facts 3.3/3.4 (reduced table + tail) against the plain O(|P|·|N|) table of Figure 2, bigger n."""
    rng = np.random.default_rng(2)
    for _ in range(30):
        n_pos, n_neg = rng.integers(1, 25), rng.integers(1, 40)
        pos = np.sort(rng.normal(0, rng.choice([0.01, 0.1, 1.0]), n_pos))[::-1]
        neg = np.sort(rng.normal(0, rng.choice([0.01, 0.1, 1.0]), n_neg))[::-1]
        n = n_pos + n_neg
        d = _disc(n, k)
        idcg = d[:n_pos].sum()
        pref = np.concatenate([[0.0], np.cumsum(neg)])
        a = np.arange(n_neg + 1)
        prev = np.zeros(n_neg + 1)
        for g in range(n_pos):
            v = (2 * pref[a] - pref[-1] + (n_neg - 2 * a) * pos[g]) / (n_pos * n_neg) - d[g + a] / idcg
            prev = v + np.maximum.accumulate(prev)
        full = 1.0 + prev.max()
        counts, h = ndcg_counts(pos, neg, k)
        assert abs(h - full) <= 1e-10
        assert np.all(np.diff(counts) >= 0) and counts.min() >= 0 and counts.max() <= n_neg
        # and the returned counts achieve it
        g = np.arange(n_pos)
        val = (2 * pref[counts] - pref[-1] + (n_neg - 2 * counts) * pos) / (n_pos * n_neg) - d[g + counts] / idcg
        assert abs(1.0 + val.sum() - full) <= 1e-10


# ------------------------------------------------------------------------------------------------
# combos and classification, also by brute force
# ------------------------------------------------------------------------------------------------
COMBOS = [["map", "ndcg@3"], ["roc", "mrr@2"], ["map", "ndcg", "mrr@4", "roc"], ["ndcg@2", "dorm@2"]]


@pytest.mark.parametrize("names", COMBOS, ids="+".join)
def test_combo_shared_slack_is_most_violated_member(names, rankings):
    combo = get_loss("combo", losses=names)
    for scores, labels in INSTANCES[::3]:
        R = rankings(len(scores))
        best = -np.inf
        for l in combo.losses:
            c_star = l.ideal_psi_coef(labels) @ scores
            best = max(best, float((delta_all(l, R, labels) + score_all(l, R, labels, scores)).max() - c_star))
        d, c = combo.violation(scores, labels)
        assert abs((d - c @ scores) - best) <= TOL
        y = combo.argmax(scores, labels)
        assert abs(combo.member_values(y, scores, labels).max() - best) <= TOL


@pytest.mark.parametrize("fn_cost", [1.0, "balanced", 3.5])
def test_classification_argmax_brute_force(fn_cost):
    loss = ClassificationLoss(fn_cost)
    for scores, labels in INSTANCES[::2]:
        n = len(scores)
        Y = np.array(list(itertools.product([False, True], repeat=n)))
        H = [loss.objective(y, scores, labels) for y in Y]
        assert abs(loss.objective(loss.argmax(scores, labels), scores, labels) - max(H)) <= TOL
        # the 1-slack constraint value is the cost-weighted hinge loss
        d, c = loss.violation(scores, labels)
        z = np.where(labels > 0, 1.0, -1.0)
        cost = loss._costs(labels > 0)
        assert abs((d - c @ scores) - (cost * np.maximum(0, 1 - z * scores)).sum() / n) <= TOL


# ------------------------------------------------------------------------------------------------
# Δ against ir_measures / sklearn
# ------------------------------------------------------------------------------------------------
def test_delta_agrees_with_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import AP, RR, nDCG
    rng = np.random.default_rng(3)
    qrels, run, rankings, labels_of = [], [], {}, {}
    for q in range(12):
        n = int(rng.integers(2, 15))
        labels = (rng.random(n) < 0.35).astype(int)
        labels[rng.integers(n)] = 1
        scores = rng.permutation(n).astype(float) + rng.random()      # distinct
        qid = f"q{q}"
        for d in range(n):
            qrels.append((qid, f"d{d}", int(labels[d])))
            run.append((qid, f"d{d}", float(scores[d])))
        rankings[qid] = np.argsort(-scores)
        labels_of[qid] = labels
    qrels = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
    measures = {AP: MAPLoss(), nDCG: NDCGLoss(None), nDCG @ 3: NDCGLoss(3), nDCG @ 10: NDCGLoss(10),
                RR: MRRLoss(None), RR @ 2: MRRLoss(2), RR @ 5: MRRLoss(5)}
    got = 0
    for m in ir_measures.iter_calc(list(measures), qrels, run):
        loss = measures[m.measure]
        ours = 1.0 - loss.delta(rankings[m.query_id], labels_of[m.query_id])
        assert abs(ours - m.value) <= 1e-9, (m, ours)
        got += 1
    assert got == 12 * len(measures)
    # DORM's Δ is nDCG@k too
    for qid, r in rankings.items():
        assert DORMLoss(k=3).delta(r, labels_of[qid]) == NDCGLoss(3).delta(r, labels_of[qid])


def test_roc_delta_is_one_minus_auc():
    from sklearn.metrics import roc_auc_score
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        labels = np.zeros(n, dtype=int)
        labels[rng.choice(n, rng.integers(1, n), replace=False)] = 1
        scores = rng.permutation(n).astype(float)
        ranking = np.argsort(-scores)
        assert abs(ROCLoss().delta(ranking, labels) - (1 - roc_auc_score(labels, scores))) <= 1e-12


# ------------------------------------------------------------------------------------------------
# violation / batch_violation / public API
# ------------------------------------------------------------------------------------------------
ALL_FOR_VIOLATION = single_losses() + [ClassificationLoss(1.0), get_loss("combo", losses=["map", "mrr@3"])]


@pytest.mark.parametrize("loss", ALL_FOR_VIOLATION, ids=repr)
def test_violation_consistent_with_argmax_and_psi(loss):
    for scores, labels in INSTANCES[::2]:
        d, c = loss.violation(scores, labels)
        y = loss.argmax(scores, labels)
        if isinstance(loss, ComboLoss):
            vals = loss.member_values(y, scores, labels)
            assert abs(d - c @ scores - vals.max()) <= TOL
            continue
        assert abs(d - loss.delta(y, labels)) <= TOL
        np.testing.assert_allclose(c, loss.ideal_psi_coef(labels) - loss.psi_coef(y, labels), atol=TOL, rtol=0)
        # H(ŷ) − c(y*)·s is the constraint's violation, and no less than the ideal ranking's own
        ideal = loss.ideal(labels)
        assert d - c @ scores >= loss.delta(ideal, labels) - (loss.ideal_psi_coef(labels) - loss.psi_coef(ideal, labels)) @ scores - TOL


@pytest.mark.parametrize("loss", ALL_FOR_VIOLATION, ids=repr)
def test_batch_violation_matches_per_query(loss):
    sub = INSTANCES[5:25]
    scores = np.concatenate([s for s, _ in sub])
    labels = np.concatenate([z for _, z in sub])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s, _ in sub])])
    deltas, coef = loss.batch_violation(scores, labels, offsets)
    n_bar = len(scores) / len(sub)
    for q, (s, z) in enumerate(sub):
        d, c = loss.violation(s, z)
        if isinstance(loss, ClassificationLoss):       # batch normalises by the mean query size
            d, c = d * len(s) / n_bar, c * len(s) / n_bar
        lo, hi = offsets[q], offsets[q + 1]
        assert abs(deltas[q] - d) <= 1e-12
        # several rankings may be optimal: compare the violations they give
        assert abs((d - c @ s) - (deltas[q] - coef[lo:hi] @ s)) <= 1e-12


def test_most_violated_public_api_and_shorthands():
    s, z = np.array([0.3, 2.0, -1.0, 0.5]), np.array([1, 0, 1, 0])
    for spec, params in [("map", {}), ("roc", {}), ("ndcg", {"k": 2}), ("ndcg@2", {}), ("ndcg", {}),
                         ("mrr", {"k": 1}), ("mrr@1", {}), ("dorm", {"k": 2, "window": 3}), ("dorm@2", {})]:
        y = most_violated(s, z, loss=spec, **params)
        assert sorted(y.tolist()) == [0, 1, 2, 3]
    assert get_loss("ndcg@10").k == 10 and get_loss("ndcg").k is None and get_loss("mrr@10").k == 10
    with pytest.raises(ValueError):
        get_loss("ndcg@3", k=4)
    with pytest.raises(ValueError):
        get_loss("nope")
    with pytest.raises(ValueError):
        DORMLoss(k=5, window=3)


def test_make_slack_groups():
    g = make_slack_groups("ndcg@10", 2.0)
    assert len(g) == 1 and isinstance(g[0], SlackGroup) and g[0].loss.k == 10 and g[0].C == 2.0
    g = make_slack_groups("mrr", 1.0, k=5)
    assert g[0].loss.k == 5
    g = make_slack_groups("combo", 3.0, losses=["map", "ndcg@10", "mrr@10"], slack="separate",
                          C_weights=[1, 2, 0.5])
    assert [x.C for x in g] == [3.0, 6.0, 1.5]
    assert [type(x.loss) for x in g] == [MAPLoss, NDCGLoss, MRRLoss]
    g = make_slack_groups("combo", 3.0, losses=["map", "roc"], slack="shared")
    assert len(g) == 1 and isinstance(g[0].loss, ComboLoss) and g[0].C == 3.0
    with pytest.raises(ValueError):
        make_slack_groups("combo", 1.0, losses=["map"], slack="shared", C_weights=[2])
    with pytest.raises(ValueError):
        make_slack_groups("combo", 1.0, losses=["map"], slack="both")


# ------------------------------------------------------------------------------------------------
# training with the solver
# ------------------------------------------------------------------------------------------------
def synthetic(seed=5, n_queries=25, n_cand=12, dim=4):
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=dim)
    X = rng.normal(size=(n_queries * n_cand, dim))
    util = X @ w_true + 0.3 * rng.normal(size=len(X))
    labels = np.zeros(len(X), dtype=int)
    offsets = np.arange(0, len(X) + 1, n_cand)
    for q in range(n_queries):
        lo, hi = offsets[q], offsets[q + 1]
        top = lo + np.argsort(-util[lo:hi])[:3]
        labels[top] = 1
    return FeatureMatrix([DenseBlock(X)]), labels, offsets, w_true


def _mean_ap(X, w, labels, offsets):
    s = X.dot(w)
    return np.mean([1 - MAPLoss().delta(np.argsort(-s[lo:hi]), labels[lo:hi])
                    for lo, hi in zip(offsets[:-1], offsets[1:])])


@pytest.mark.parametrize("spec", [
    dict(loss="combo", losses=["map", "ndcg@5", "mrr@3"], slack="separate"),
    dict(loss="combo", losses=["map", "ndcg@5", "mrr@3"], slack="shared"),
    dict(loss="combo", losses=["roc", "dorm@3"], slack="separate", C_weights=[1.0, 0.5]),
    dict(loss="roc"), dict(loss="ndcg"), dict(loss="mrr@3"), dict(loss="dorm@3"),
], ids=lambda d: "-".join(str(v) for v in d.values()))
def test_groups_train_and_converge(spec):
    X, labels, offsets, w_true = synthetic()
    spec = dict(spec)
    groups = make_slack_groups(spec.pop("loss"), 10.0, **spec)
    res = train_structural_svm(X, labels, offsets, groups, epsilon=1e-3, max_iter=500)
    assert res.converged
    assert res.history[-1]["gap"] >= -1e-9
    cos = res.w @ w_true / (np.linalg.norm(res.w) * np.linalg.norm(w_true))
    assert cos > 0.8, cos
    assert _mean_ap(X, res.w, labels, offsets) > _mean_ap(X, -res.w, labels, offsets) + 0.3


def test_classification_trains_with_bias():
    from pyterrier_svmmap.svm.losses import add_bias
    X, labels, offsets, w_true = synthetic(seed=6)
    Xb = add_bias(X)
    assert Xb.dim == X.dim + 1
    for name in ("acc", "acc2"):
        groups = make_slack_groups(name, 10.0)
        assert groups[0].loss.needs_bias
        res = train_structural_svm(Xb, labels, offsets, groups, epsilon=1e-3, max_iter=500)
        assert res.converged
        pred = Xb.dot(res.w) > 0
        acc = (pred == (labels > 0)).mean()
        assert acc > 0.8, acc
        if name == "acc2":      # false negatives are expensive: it predicts more positives than acc
            assert pred.sum() >= n_pos_acc
        else:
            n_pos_acc = pred.sum()


@pytest.mark.parametrize("loss", [ROCLoss(), MRRLoss(None), MRRLoss(1), MRRLoss(3), ClassificationLoss(2.0),
                                  get_loss("combo", losses=["roc", "mrr@2"])], ids=repr)
def test_vectorised_batch_matches_query_loop(loss):
    """The vectorised batch_violation overrides against the generic per-query loop, many queries."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 15, 300)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    labels = (rng.random(offsets[-1]) < 0.3).astype(int)     # includes all-relevant / none-relevant queries
    scores = rng.integers(-3, 4, offsets[-1]) * 0.5
    deltas, coef = loss.batch_violation(scores, labels, offsets)
    ref_d, ref_c = Loss.batch_violation(loss, scores, labels, offsets)
    if isinstance(loss, ClassificationLoss):
        n_bar = offsets[-1] / len(sizes)
        ref_d, ref_c = ref_d * np.repeat(1, len(sizes)), ref_c
        ref_d = ref_d * sizes / n_bar
        ref_c = ref_c * np.repeat(sizes, sizes) / n_bar
    np.testing.assert_allclose(deltas, ref_d, atol=1e-12, rtol=0)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    np.testing.assert_allclose(deltas - np.bincount(qid, coef * scores, len(sizes)),
                               ref_d - np.bincount(qid, ref_c * scores, len(sizes)), atol=1e-12, rtol=0)


# ------------------------------------------------------------------------------------------
# when the NDCG@k and MRR@k hinges are vacuous (README, "What the training losses learn")
# ------------------------------------------------------------------------------------------
def _hinge(loss, scores, labels):
    """max_y Δ(y) − wᵀ(Ψ(y*) − Ψ(y)) for one query, from the loss's exact most violated constraint."""
    d, c = loss.violation(scores, labels)
    return d - float(c @ scores)


def _random_query(seed):
    """(scores, labels, k): 12–59 candidates, about 30 % relevant (at least one of each), relevant ones
    scoring higher on average, and a cutoff k in 1..5."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(12, 60)), int(rng.integers(1, 6))
    labels = (rng.random(n) < 0.3).astype(int)
    labels[:2] = [1, 0]
    return rng.normal(size=n) + 0.8 * labels, labels, k


@pytest.mark.parametrize("seed", range(40))
def test_ndcg_hinge_bound_from_the_top_k_non_relevant(seed):
    """For Δ = 1 − nDCG@k with φ_po, ranking the k best non-relevant candidates first (Δ = 1) flips only
    their pairs with the relevant ones, so hinge ≥ 1 − (2k/|N|)·(mean s_P − mean of the top-k s_N):
    at least 1 (w = 0's value) for every scale of w once the average relevant candidate scores below
    the k best non-relevant ones."""
    scores, labels, k = _random_query(seed)
    pos, neg = scores[labels > 0], np.sort(scores[labels == 0])[::-1]
    if len(neg) < k:
        return
    gap = pos.mean() - neg[:k].mean()
    for t in (0.01, 1.0, 100.0):
        h = _hinge(NDCGLoss(k), t * scores, labels)
        assert h >= 1 - 2 * k / len(neg) * t * gap - 1e-9
        if gap <= 0:
            assert h >= 1 - 1e-9


@pytest.mark.parametrize("seed", range(40))
def test_mrr_hinge_is_vacuous_below_the_kth_non_relevant(seed):
    """For Δ = 1 − RR@k with φ_mrr: if the lowest-scoring relevant candidate scores at most the k-th best
    non-relevant one, then putting the k best non-relevant candidates above it (Δ = 1) gives a
    hinge ≥ 1 for every scale of w: the bound says nothing, whatever w is."""
    scores, labels, k = _random_query(seed)
    neg = np.sort(scores[labels == 0])[::-1]
    if len(neg) < k:
        return
    vacuous = scores[labels > 0].min() <= neg[k - 1]
    for t in (0.01, 1.0, 100.0):
        h = _hinge(MRRLoss(k), t * scores, labels)
        assert h >= 0.0
        if vacuous:
            assert h >= 1 - 1e-9
