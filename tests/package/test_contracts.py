"""Public contracts pinned by exact, hand-computed values: the per-query score transforms and their ties,
missing-score handling, bin codes at threshold boundaries, feature names and block order, RunFeatures'
candidate order and names, and the model's saved fields, weights ↔ names pairing and the C path.

Every expected number below is worked out by hand in a comment, or computed independently of the package
(ir_measures for MAP, a from-scratch φ for the learned weights); none is a re-run of the code under test.
"""
from __future__ import annotations

import math

import ir_measures
import numpy as np
import pandas as pd

from pyterrier_svmmap.frames import candidates_from_frame
import pytest

from pyterrier_svmmap import RunFeatures, StructSVM, SVMMap
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.thresholds import function_thresholds, top_of_queries
from pyterrier_svmmap.features.transforms import minmax_normalise, percentiles, query_min_max

nan, inf = np.nan, np.inf


def col(*values):
    return np.array(values, dtype=float)[:, None]


# =============================================================================================
# per-query transforms
# =============================================================================================
def test_percentiles_ties_share_the_larger_value_top_is_one_nan_stays_nan():
    # q0: retrieved scores 3, 1, 3, 2 (4 of them): #{≤3}=4 → 1, #{≤1}=1 → 1/4, #{≤2}=2 → 2/4
    # q1: three equal scores: all share the larger percentile 3/3 = 1
    # q2: a single retrieved candidate → 1; the other is NaN
    raw = col(3, 1, 3, nan, 2,   5, 5, 5,   nan, -7)
    offsets = np.array([0, 5, 8, 10])
    got = percentiles(raw, offsets)[:, 0]
    np.testing.assert_array_equal(got, [1, 0.25, 1, nan, 0.5,   1, 1, 1,   nan, 1])


def test_percentiles_ties_in_the_middle_and_per_function_columns():
    # f0: scores 1, 2, 2, 2, 9 → 1/5, 4/5, 4/5, 4/5, 5/5 (the three 2s share #{≤2} = 4)
    # f1: scores 4, 4, NaN, 0, 4 → retrieved 4: 0 → 1/4, the three 4s → 4/4
    raw = np.array([[1, 4], [2, 4], [2, nan], [2, 0], [9, 4]], dtype=float)
    got = percentiles(raw, np.array([0, 5]))
    np.testing.assert_array_equal(got, [[0.2, 1], [0.8, 1], [0.8, nan], [0.8, 0.25], [1, 1]])


def test_minmax_normalise_constant_function_is_one_nothing_retrieved_stays_nan():
    # f0, q0: 2, 4, NaN, 6 → (x−2)/4 = 0, 0.5, NaN, 1;  q1: constant 7, 7 → 1, 1
    # f1, q0: −1, −3, −2, NaN → (x+3)/2 = 1, 0, 0.5, NaN;  q1: retrieved nothing → NaN, NaN
    raw = np.array([[2, -1], [4, -3], [nan, -2], [6, nan], [7, nan], [7, nan]], dtype=float)
    offsets = np.array([0, 4, 6])
    got = minmax_normalise(raw, offsets)
    np.testing.assert_array_equal(got, [[0, 1], [0.5, 0], [nan, 0.5], [1, nan], [1, nan], [1, nan]])
    # a single retrieved candidate is a constant function too
    np.testing.assert_array_equal(minmax_normalise(col(nan, 3.5, nan), np.array([0, 3]))[:, 0], [nan, 1, nan])


def test_query_min_max_per_query_and_function_nan_when_nothing_retrieved():
    raw = np.array([[2, -1], [4, -3], [nan, -2], [6, nan], [7, nan], [7, nan]], dtype=float)
    lo, hi = query_min_max(raw, np.array([0, 4, 6]))
    np.testing.assert_array_equal(lo, [[2, -3], [7, nan]])
    np.testing.assert_array_equal(hi, [[6, -1], [7, nan]])


def quantile_thresholds(values, n_bins):
    """One function's thresholds: :func:`function_thresholds` of a one-column sample."""
    return function_thresholds(np.asarray(values, dtype=float)[:, None], n_bins)[0]


def test_quantile_thresholds_lower_quantiles_first_minus_inf_padding_plus_inf():
    # 4 values, n_bins 4: quantiles 1/4, 2/4, 3/4 by method "lower" sit at sorted positions
    # floor(0.75)=0, floor(1.5)=1, floor(2.25)=2 → 1, 2, 3 (linear interpolation would give 1.75, ...)
    np.testing.assert_array_equal(quantile_thresholds(col(4, 2, nan, 1, 3)[:, 0], 4), [-inf, 1, 2, 3])
    # few distinct values: 5, 5, 5, 7 → quantiles 5, 5, 5 → one distinct threshold, the rest +inf
    np.testing.assert_array_equal(quantile_thresholds(np.array([5.0, 7, 5, 5]), 4), [-inf, 5, inf, inf])
    # nothing retrieved: only −inf, padded
    np.testing.assert_array_equal(quantile_thresholds(np.array([nan, nan]), 3), [-inf, inf, inf])
    # one bin: just "retrieved or not"
    np.testing.assert_array_equal(quantile_thresholds(np.array([1.0, 2.0]), 1), [-inf])


def test_top_of_queries_keeps_ties_at_the_boundary_and_nan():
    # q0, depth 2: the 2nd highest is 3 and both 3s are kept; 1 is dropped, NaN stays NaN
    # q1: the 2nd highest of 2, 2, 2 is 2 → all kept
    # q2: NaN, 4, 4, 0 → 4, 4 kept, 0 dropped (NaN never counts among the top)
    raw = col(5, 3, 3, 1, nan,   2, 2, 2,   nan, 4, 4, 0)
    offsets = np.array([0, 5, 8, 12])
    got = top_of_queries(raw, offsets, 2)[:, 0]
    np.testing.assert_array_equal(got, [5, 3, 3, nan, nan,   2, 2, 2,   nan, 4, 4, nan])
    # depth at least every query's size: unchanged
    np.testing.assert_array_equal(top_of_queries(raw, offsets, 5), raw)


# =============================================================================================
# the encoder: blocks, missing scores, codes, names
# =============================================================================================
#  q0: f0 = 2, NaN, 6      f1 = NaN, −1, −3
#  q1: f0 = NaN, NaN       f1 = 5, 4
RAW = np.array([[2, nan], [nan, -1], [6, -3], [nan, 5], [nan, 4]], dtype=float)
OFFSETS = np.array([0, 3, 5])


def test_raw_block_fills_missing_with_the_querys_lowest_score_or_zero_and_adds_indicators():
    # columns raw(a), raw(b), retrieved(a), retrieved(b). Missing f1 in q0 → q0's lowest f1 = −3 (not 0,
    # not the highest −1); f0 retrieved nothing in q1 → 0.
    X = FeatureEncoder("raw", normalise=None).fit(RAW, OFFSETS).transform(RAW, OFFSETS).dense()
    np.testing.assert_array_equal(X, [[2, -3, 1, 0],
                                      [2, -1, 0, 1],
                                      [6, -3, 1, 1],
                                      [0, 5, 0, 1],
                                      [0, 4, 0, 1]])


def test_normalised_raw_block_is_the_score_above_the_querys_lowest_in_within_query_spreads():
    # σ_f pools the squared deviations from each query's mean: f0 {2, 6} → 8 / 2 → σ = 2;
    # f1 {−1, −3} and {5, 4} → (2 + 0.5) / 4 → σ = √0.625. z = (f − lowest of the query) / σ, missing → 0.
    enc = FeatureEncoder("raw").fit(RAW, OFFSETS)
    s1 = np.sqrt(0.625)
    np.testing.assert_allclose(1 / enc.column_scale_ / enc.prescale_, [2.0, s1], rtol=1e-15)
    np.testing.assert_allclose(enc.transform(RAW, OFFSETS).dense(), [[0, 0, 1, 0],
                                                                     [0, 2 / s1, 0, 1],
                                                                     [2, 0, 1, 1],
                                                                     [0, 1 / s1, 0, 1],
                                                                     [0, 0, 0, 1]], rtol=1e-15, atol=0)


def test_minmax_block_missing_is_zero_and_adds_indicators():
    # q0 f0: (2, ·, 6) → 0, missing→0, 1;  q0 f1: (·, −1, −3) → missing→0, 1, 0
    # q1 f0: nothing → 0, 0;               q1 f1: (5, 4) → 1, 0
    X = FeatureEncoder("minmax").fit(RAW, OFFSETS).transform(RAW, OFFSETS).dense()
    np.testing.assert_array_equal(X, [[0, 0, 1, 0],
                                      [0, 1, 0, 1],
                                      [1, 0, 1, 1],
                                      [0, 1, 0, 1],
                                      [0, 0, 0, 1]])


def test_bin_codes_a_score_equal_to_a_threshold_does_not_exceed_it():
    # training scores 1, 2, 3, 4 → thresholds −inf, 1, 2, 3 (see the quantile test)
    enc = FeatureEncoder("bins", n_bins=4, threshold_depth=None).fit(col(1, 2, 3, 4), np.array([0, 4]))
    np.testing.assert_array_equal(enc.thresholds_, [[-inf, 1, 2, 3]])
    x = col(1, 2, 3, 0.5, 3.5, nan, 2.0000001, 100)
    codes = enc.bin_codes(x, np.array([0, len(x)]))[:, 0]
    #        1 > −inf only; 2 > −inf, 1; 3 > −inf, 1, 2; 0.5 > −inf; 3.5 > all; missing 0; just above 2 → 3
    np.testing.assert_array_equal(codes, [1, 2, 3, 1, 4, 0, 3, 4])
    # φ of the bins block is the indicator matrix 1[x > k], missing → all zero
    X = enc.transform(x, np.array([0, len(x)])).dense()
    expected = np.array([[v > k for k in (-inf, 1, 2, 3)] for v in x[:, 0]], dtype=float)
    np.testing.assert_array_equal(X, expected)


def test_bin_codes_percentile_and_minmax_binning_at_even_thresholds():
    # thresholds 0, 1/4, 2/4, 3/4 for both. One query, scores 1, 2, 3, 4:
    #   percentiles 1/4, 2/4, 3/4, 1 → codes 1 (1/4 exceeds k₀ = 0, not k₁ = 1/4), 2, 3, 4
    #   min–max 0, 1/3, 2/3, 1 → codes 0 (0 does not exceed the threshold 0: like a missing score), 2, 3, 4
    x, off = col(1, 2, 3, 4, nan), np.array([0, 5])
    pct = FeatureEncoder("bins", n_bins=4, binning="percentile").fit(x, off)
    np.testing.assert_array_equal(pct.thresholds_, [[0, 0.25, 0.5, 0.75]])
    np.testing.assert_array_equal(pct.bin_codes(x, off)[:, 0], [1, 2, 3, 4, 0])
    mm = FeatureEncoder("bins", n_bins=4, binning="minmax").fit(x, off)
    np.testing.assert_array_equal(mm.bin_codes(x, off)[:, 0], [0, 2, 3, 4, 0])


def test_bins_rdot_is_the_transpose_of_dot():
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(12, 3))
    raw[rng.random(raw.shape) < 0.25] = nan
    off = np.array([0, 5, 12])
    X = FeatureEncoder("bins+raw+minmax", n_bins=4, threshold_depth=None).fit(raw, off).transform(raw, off)
    c = rng.normal(size=12)
    np.testing.assert_allclose(X.rdot(c), X.dense().T @ c, rtol=0, atol=1e-12)


def test_feature_names_function_by_function_threshold_by_threshold_then_raw_then_retrieved():
    # f "a": training 1, 2, 3, 4 → −inf, 1, 2, 3;  f "b": 10, 10, 10, 20 → −inf, 10, inf, inf
    raw = np.array([[1, 10], [2, 10], [3, 10], [4, 20]], dtype=float)
    enc = FeatureEncoder("bins+raw", n_bins=4, threshold_depth=None).fit(raw, np.array([0, 4]))
    assert enc.feature_names(["a", "b"]) == [
        "a>-inf", "a>1", "a>2", "a>3", "b>-inf", "b>10", "b>inf", "b>inf",
        "raw(a)", "raw(b)", "retrieved(a)", "retrieved(b)"]
    enc2 = FeatureEncoder("minmax+bins", n_bins=2, threshold_depth=None).fit(raw, np.array([0, 4]))
    assert enc2.feature_names(["a", "b"]) == [
        "minmax(a)", "minmax(b)", "retrieved(a)", "retrieved(b)", "a>-inf", "a>2", "b>-inf", "b>10"]


@pytest.mark.parametrize("order", [("bins", "raw"), ("raw", "bins"), ("minmax", "raw", "bins")])
def test_block_order_is_the_order_given(order):
    # φ of "x+y" is φ of "x" then φ of "y", side by side, with the names in the same order
    raw = np.array([[1, nan], [2, 5], [3, 4], [nan, 1]], dtype=float)
    off = np.array([0, 2, 4])
    whole = FeatureEncoder("+".join(order), n_bins=3, threshold_depth=None).fit(raw, off)
    parts = [FeatureEncoder(b, n_bins=3, threshold_depth=None).fit(raw, off) for b in order]
    np.testing.assert_array_equal(whole.transform(raw, off).dense(),
                                  np.hstack([p.transform(raw, off).dense() for p in parts]))
    assert whole.feature_names(["u", "v"]) == sum((p.feature_names(["u", "v"]) for p in parts), [])


# =============================================================================================
# RunFeatures
# =============================================================================================
def _runs():
    # run "A": qid 2: d1 1.0, d2 3.0, d3 1.0; qid 7 is not among the topics
    # run "B": qid 2: d4 9.0, d2 0.5; qid 1 (given as an int): d9 2.0, d10 2.0
    a = pd.DataFrame({"qid": ["2", "2", "2", "7"], "docno": ["d1", "d2", "d3", "d1"], "score": [1.0, 3.0, 1.0, 8.0]})
    b = pd.DataFrame({"qid": [2, 2, 1, 1], "docno": ["d4", "d2", "d9", "d10"], "score": [9.0, 0.5, 2.0, 2.0]})
    topics = pd.DataFrame({"qid": ["2", "1", "3"], "query": ["two", "one", "three"]})
    return a, b, topics


def _feats(res):
    return np.stack(res["features"].to_numpy())


def test_run_features_candidate_order_and_nan_for_missing():
    a, b, topics = _runs()
    res = RunFeatures({"A": a, "B": b}).transform(topics)
    # queries in the topics' order (2 before 1; 3 retrieved nothing and has no row); within a query by
    # the first function's score, best first, candidates it missed last; ties by docno as strings
    # ("d1" < "d3"; "d10" < "d9")
    assert list(zip(res.qid, res.docno)) == [("2", "d2"), ("2", "d1"), ("2", "d3"), ("2", "d4"),
                                             ("1", "d10"), ("1", "d9")]
    np.testing.assert_array_equal(_feats(res), [[3, 0.5], [1, nan], [1, nan], [nan, 9], [nan, 2], [nan, 2]])
    assert list(res["query"]) == ["two"] * 4 + ["one"] * 2              # the topics' columns are kept
    assert res.attrs["feature_names"] == ["A", "B"]


def test_run_features_feature_order_is_the_base_order():
    a, b, topics = _runs()
    rf = RunFeatures({"B": b, "A": a})
    res = rf.transform(topics)
    assert rf.names == ["B", "A"] and res.attrs["feature_names"] == ["B", "A"]
    # now B is first: d4 9, d2 0.5, then A-only d1, d3 (tie by docno); qid 1: d10, d9 tie at 2
    assert list(zip(res.qid, res.docno)) == [("2", "d4"), ("2", "d2"), ("2", "d1"), ("2", "d3"),
                                             ("1", "d10"), ("1", "d9")]
    np.testing.assert_array_equal(_feats(res), [[9, nan], [0.5, 3], [nan, 1], [nan, 1], [2, nan], [2, nan]])


def test_run_features_names_from_a_list_and_errors():
    a, b, topics = _runs()
    rf = RunFeatures([a, b])
    assert rf.names == ["run0", "run1"]
    assert rf.transform(topics).attrs["feature_names"] == ["run0", "run1"]
    with pytest.raises(ValueError, match="at least one"):
        RunFeatures([])
    with pytest.raises(ValueError, match="lacks column"):
        RunFeatures([a.drop(columns="score")])
    with pytest.raises(ValueError, match="more than once"):
        RunFeatures([pd.concat([a, a.iloc[:1]])]).transform(topics)
    with pytest.raises(ValueError, match="NaN or infinite"):
        RunFeatures([a.assign(score=[1.0, nan, 2.0, 3.0])]).transform(topics)


# =============================================================================================
# the model: weights ↔ names, the C path, save → load
# =============================================================================================
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


def test_the_public_api_documents_its_parameters_numpydoc_style():
    """Every function and public method of ``pyterrier_svmmap.__all__`` that takes parameters has a numpydoc
    ``Parameters`` section (and no Google-style ``Args:``)."""
    import inspect

    import pyterrier_svmmap as ps
    missing = []
    for name in ps.__all__:
        obj = getattr(ps, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        targets = [obj] if inspect.isfunction(obj) else \
            [obj] + [m for k, m in vars(obj).items() if inspect.isfunction(m) and not k.startswith("_")]
        for target in targets:
            doc = inspect.getdoc(target) or ""
            try:
                params = [p for p in inspect.signature(target).parameters if p not in ("self", "cls")]
            except (TypeError, ValueError):
                params = []
            if "Args:" in doc or (params and "Parameters\n----------" not in doc):
                missing.append(target.__qualname__)
    assert not missing, missing
