"""The fitted model's contracts pinned by values computed independently of the package: weights paired
with their feature names (every score rebuilt from the names and a from-scratch φ), the C path (each C
validated with its own solution, MAP from ir_measures), and save → load keeping every documented field and
the scores bit for bit (``SVMMap`` and ``StructSVM``, pyterrier_svmmap.estimators.structsvm)."""
from __future__ import annotations

import math

import ir_measures
import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import StructSVM, SVMMap
from pyterrier_svmmap.frames import candidates_from_frame

nan, inf = np.nan, np.inf


NAMES = ["noise_a", "good", "noise_b"]


def _frame(seed, n_q, prefix, n_d=10):
    """Candidates whose relevance only the function "good" (column 1) tells; scores rounded to 0.01 so
    that thresholds print exactly in the feature names; about 10% missing scores. About 30% of the
    non-relevant candidates are unjudged (absent from the qrels), and the qrels hold, for every query,
    one relevant document that is not among the candidates."""
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_q):
        qid = f"{prefix}{q}"
        rel = np.zeros(n_d, dtype=int)
        rel[rng.choice(n_d, 3, replace=False)] = 1
        for d in range(n_d):
            f = np.round([rng.normal(), 2.0 * rel[d] + rng.normal(scale=0.7), rng.normal()], 2)
            if rng.random() < 0.1:
                f[rng.integers(3)] = nan
            rows.append(dict(qid=qid, docno=f"d{d}", features=f))
            if rel[d] or rng.random() < 0.7:                     # some non-relevant candidates are unjudged
                qrels.append(dict(qid=qid, docno=f"d{d}", label=int(rel[d])))
        qrels.append(dict(qid=qid, docno="unretrieved", label=1))
    res = pd.DataFrame(rows)
    res.attrs["feature_names"] = list(NAMES)
    return res, pd.DataFrame(qrels)


TRAIN = _frame(1, 8, "t")
VALID = _frame(2, 5, "v")


def _by_hand_phi_raw(res):
    """The "raw" block from scratch: (filled scores, indicators) in the frame's row order."""
    raw = np.stack(res["features"].to_numpy()).astype(float)
    filled = raw.copy()
    for _, idx in res.groupby("qid").indices.items():
        for f in range(raw.shape[1]):
            v = raw[idx, f]
            low = np.nanmin(v) if (~np.isnan(v)).any() else 0.0
            filled[idx, f] = np.where(np.isnan(v), low, v)
    return filled, (~np.isnan(raw)).astype(float)


def _map(res, scores, qrels):
    run = pd.DataFrame({"query_id": res["qid"].to_numpy(), "doc_id": res["docno"].to_numpy(), "score": scores})
    qr = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return ir_measures.calc_aggregate([ir_measures.AP], qr, run)[ir_measures.AP]


def _scores(model, res):
    """The model's own scores wᵀφ of ``res``'s rows, in ``res``'s order (transform's ``score`` column also
    separates tied scores by a few float32 steps, pyterrier_svmmap.ties; those are checked in test_ties)."""
    out = model.transform(res)
    cands = candidates_from_frame(out)
    scores = pd.Series(model.decision_function(cands.raw, cands.offsets),
                       index=pd.MultiIndex.from_frame(cands.frame[["qid", "docno"]]))
    ranked = out.set_index(["qid", "docno"])["score"].reindex(scores.index)
    assert np.all(np.abs(ranked - scores) <= 1e-6 * np.maximum(1.0, np.abs(scores)))      # within float32 steps
    return scores.reindex(pd.MultiIndex.from_frame(res[["qid", "docno"]]))


def test_normalised_raw_weights_rebuild_the_scores_from_the_names_and_the_column_scales():
    res, qrels = TRAIN
    m = SVMMap(C=10.0, features="raw").fit(res, qrels)
    w = dict(zip(m.feature_names_, m.coef_))
    assert max(w, key=lambda k: abs(w[k])) == "raw(good)" and w["raw(good)"] > 0
    # φ of a normalised raw block: (f − the query's lowest f) · column_scale_, missing → 0
    filled, retrieved = _by_hand_phi_raw(res)
    lows = np.stack([pd.Series(filled[:, i]).groupby(res["qid"].to_numpy()).transform("min").to_numpy()
                     for i in range(len(NAMES))], axis=1)
    scale = m.layout_.encoder.column_scale_ * m.layout_.encoder.prescale_
    by_hand = sum(w[f"raw({n})"] * (filled[:, i] - lows[:, i]) * scale[i] + w[f"retrieved({n})"] * retrieved[:, i]
                  for i, n in enumerate(NAMES))
    np.testing.assert_allclose(_scores(m, res).to_numpy(), by_hand, rtol=0, atol=1e-9)


def test_raw_weights_are_paired_with_their_names_and_the_informative_function_weighs_most():
    res, qrels = TRAIN
    m = SVMMap(C=10.0, features="raw", normalise=None).fit(res, qrels)
    assert m.base_names_ == NAMES
    assert m.feature_names_ == ["raw(noise_a)", "raw(good)", "raw(noise_b)",
                                "retrieved(noise_a)", "retrieved(good)", "retrieved(noise_b)"]
    w = dict(zip(m.feature_names_, m.coef_))
    assert max(w, key=lambda k: abs(w[k])) == "raw(good)" and w["raw(good)"] > 0
    # the score is Σ_name w[name]·φ_name(d), with φ built from scratch
    filled, retrieved = _by_hand_phi_raw(res)
    by_hand = sum(w[f"raw({n})"] * filled[:, i] + w[f"retrieved({n})"] * retrieved[:, i] for i, n in enumerate(NAMES))
    np.testing.assert_allclose(_scores(m, res).to_numpy(), by_hand, rtol=0, atol=1e-9)


def test_bin_weights_are_paired_with_their_names_and_the_informative_function_weighs_most():
    res, qrels = TRAIN
    m = SVMMap(C=10.0, features="bins", n_bins=4, threshold_depth=None).fit(res, qrels)
    assert len(m.feature_names_) == len(m.coef_) == 12
    # a name "f>t" is the indicator 1[f(d) > t]: rebuild every score from the names alone
    raw = np.stack(res["features"].to_numpy()).astype(float)
    by_hand = np.zeros(len(res))
    span = {n: 0.0 for n in NAMES}
    for name, w in zip(m.feature_names_, m.coef_):
        fname, t = name.split(">", 1)
        x = raw[:, NAMES.index(fname)]
        by_hand += w * (np.nan_to_num(x, nan=-inf) > float(t))
        span[fname] += abs(w)
    np.testing.assert_allclose(_scores(m, res).to_numpy(), by_hand, rtol=0, atol=1e-9)
    assert max(span, key=span.get) == "good"
    # names and learned thresholds agree, function by function
    th = np.asarray(m.encoder_.thresholds_)
    assert [float(n.split(">", 1)[1]) for n in m.feature_names_] == th.ravel().tolist()


def test_c_path_every_c_is_validated_with_its_own_solution_and_the_best_is_kept():
    (tr, tq), (va, vq) = TRAIN, VALID
    grid = [0.1, 10.0, 0.001]                 # not sorted: the best (10 here) is neither first nor last
    m = SVMMap(C=grid, features="raw", prior=None, selection="validation").fit(tr, tq, va, vq)
    assert list(m.validation_) == grid                                    # every C, in the grid's order
    assert m.C_ == max(grid, key=lambda c: m.validation_[c]) == 10.0
    coefs = np.asarray(m.coefs_)
    assert coefs.shape == (len(grid), 6)
    np.testing.assert_array_equal(coefs[grid.index(m.C_)], m.coef_)
    # validation_[C] is the validation MAP (ir_measures, unretrieved relevant documents counted) of the
    # solution of that C, scored with φ built from scratch
    filled, retrieved = _by_hand_phi_raw(va)
    phi = np.hstack([filled, retrieved])
    for c, w in zip(grid, coefs):
        assert m.validation_[c] == pytest.approx(_map(va, phi @ w, vq), abs=1e-9)
    assert len({round(v, 6) for v in m.validation_.values()}) > 1          # the grid is not degenerate
    assert len({tuple(np.round(w, 6)) for w in coefs}) == len(grid)        # one solution per C


MODEL_FIELDS = ("C", "loss", "loss_params", "features", "n_bins", "binning", "epsilon", "max_iter",
                "threshold_depth", "prior", "prior_scale")


@pytest.mark.parametrize("make", [
    lambda: SVMMap(C=[0.05, 5.0], features="bins+raw", n_bins=3, binning="quantile", threshold_depth=4,
                   epsilon=2e-3, max_iter=77, prior="best", prior_scale=2.5),
    lambda: StructSVM(C=[0.5, 50.0], loss="ndcg", loss_params={"k": 3}, features="minmax+bins", n_bins=5,
                      binning="percentile", threshold_depth=None, epsilon=5e-3, max_iter=123),
], ids=["svmmap-prior", "ndcg-percentile"])
def test_save_load_keeps_every_documented_field_and_scores_bit_identically(tmp_path, make):
    (tr, tq), (va, vq) = TRAIN, VALID
    m = make().fit(tr, tq, va, vq)
    m.save(tmp_path / "m")
    again = type(m).load(tmp_path / "m")
    assert type(again) is type(m)
    fresh = make()
    for name in MODEL_FIELDS:
        got, want = getattr(again, name), getattr(fresh, name)
        if name == "C":
            got, want = [float(c) for c in np.atleast_1d(got)], [float(c) for c in np.atleast_1d(want)]
        assert got == want, name
    assert again.base_names_ == m.base_names_ == NAMES
    assert again.feature_names_ == m.feature_names_
    assert again.C_ == m.C_
    assert list(again.validation_.items()) == list(m.validation_.items())
    assert all(math.isfinite(v) for v in again.validation_.values()) and set(again.validation_) == set(fresh.C)
    assert again.n_iter_ == m.n_iter_ and again.converged_ == m.converged_
    np.testing.assert_array_equal(np.asarray(again.encoder_.thresholds_), np.asarray(m.encoder_.thresholds_))
    np.testing.assert_array_equal(again.coef_, m.coef_)
    np.testing.assert_array_equal(np.asarray(again.coefs_), np.asarray(m.coefs_))
    assert len(again.history_) == len(m.history_)
    both = pd.concat([tr, va], ignore_index=True)
    np.testing.assert_array_equal(_scores(again, both).to_numpy(), _scores(m, both).to_numpy())
