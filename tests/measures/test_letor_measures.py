"""LETOR 4.0 measures (Eval-Score-4.0.pl semantics): hand-computed cases, a loop transcription of the
script's algorithm (ties included), and agreement with ir_measures where the definitions coincide."""
import math

import numpy as np
import pytest

from pyterrier_svmmap.measures import letor_average_precision, letor_ndcg_at, precision_at

ir_measures = pytest.importorskip("ir_measures")


# -------------------------------------------------------------------------------------------------
# a direct loop version of what Eval-Score-4.0.pl does for one query (file order, stable sort by
# decreasing prediction; MAP/P@k with labels 1, 2 relevant; NDCG gain 2^l - 1, ranks 1-2 undiscounted,
# then 1/log2(rank); NDCG@k undefined (→ 0) for queries of fewer than k documents)
# -------------------------------------------------------------------------------------------------
def script_query(pred, labels, k):
    rates = [labels[i] for i in sorted(range(len(pred)), key=lambda i: -pred[i])]   # Python's sort is stable
    n_rel, ap = 0, 0.0
    for pos, r in enumerate(rates):
        if r >= 1:
            n_rel += 1
            ap += n_rel / (pos + 1)
    ap = ap / n_rel if n_rel else 0.0
    p_at = sum(1 for r in rates[:k] if r >= 1) / k

    def dcg(rs):
        total = 0.0
        for pos in range(min(k, len(rs))):
            g = 2 ** rs[pos] - 1
            total += g if pos < 2 else g * math.log(2) / math.log(pos + 1)
        return total

    best = dcg(sorted(rates, reverse=True))
    ndcg = dcg(rates) / best if best and len(rates) >= k else 0.0
    return ap, p_at, ndcg


def random_instance(rng, n_q, tied):
    sizes = rng.integers(1, 15, size=n_q)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    labels = rng.choice([0, 0, 0, 1, 2], size=offsets[-1])
    scores = rng.integers(0, 3, size=offsets[-1]).astype(float) if tied else rng.normal(size=offsets[-1])
    return scores, labels, offsets


# -------------------------------------------------------------------------------------------------
# hand-computed cases
# -------------------------------------------------------------------------------------------------
def test_hand_computed_query():
    # ranking by score: labels 0, 2, 1, 0
    s, y, o = np.array([4.0, 3, 2, 1]), np.array([0, 2, 1, 0]), np.array([0, 4])
    assert letor_average_precision(s, y, o)[0] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert letor_average_precision(s, y, o, rel=2)[0] == pytest.approx(1 / 2)
    assert precision_at(s, y, o, 2)[0] == pytest.approx(1 / 2)
    assert precision_at(s, y, o, 3)[0] == pytest.approx(2 / 3)
    assert precision_at(s, y, o, 1, rel=2)[0] == 0.0
    assert precision_at(s, y, o, 3, rel=2)[0] == pytest.approx(1 / 3)
    # DCG@3 = 0 + 3 (rank 2 undiscounted) + 1/log2(3); ideal 3 + 1 (rank 2 undiscounted) + 0
    assert letor_ndcg_at(s, y, o, 3)[0] == pytest.approx((3 + 1 / math.log2(3)) / 4)
    assert letor_ndcg_at(s, y, o, 2)[0] == pytest.approx(3 / 4)
    assert letor_ndcg_at(s, y, o, 1)[0] == 0.0
    # trec_eval's form: gain = label, discount 1/log2(rank + 1)
    trec = (2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3))
    assert letor_ndcg_at(s, y, o, 3, discount="trec", gain="linear")[0] == pytest.approx(trec)


def test_short_query_ndcg_is_zero_as_the_script_reports_it():
    s, y, o = np.array([2.0, 1.0]), np.array([2, 0]), np.array([0, 2])
    assert letor_ndcg_at(s, y, o, 2)[0] == 1.0
    assert letor_ndcg_at(s, y, o, 3)[0] == 0.0                             # 2 documents < k = 3
    assert letor_ndcg_at(s, y, o, 3, short_query="score")[0] == 1.0
    assert precision_at(s, y, o, 4)[0] == pytest.approx(1 / 4)           # the hole counts non-relevant


def test_query_without_relevant_document_scores_zero_and_counts():
    s = np.array([1.0, 2.0, 3.0, 1.0, 2.0])
    y = np.array([0, 0, 0, 1, 0])
    o = np.array([0, 3, 5])
    for values in (letor_average_precision(s, y, o), precision_at(s, y, o, 1),
                   letor_ndcg_at(s, y, o, 2)):
        assert len(values) == 2 and values[0] == 0.0
    assert letor_average_precision(s, y, o).tolist() == [0.0, 0.5]       # mean over both: 0.25


def test_ties_keep_candidate_order():
    s, o = np.array([1.0, 1.0, 1.0]), np.array([0, 3])
    assert letor_average_precision(s, np.array([1, 0, 0]), o)[0] == 1.0
    assert letor_average_precision(s, np.array([0, 0, 1]), o)[0] == pytest.approx(1 / 3)
    assert letor_ndcg_at(s, np.array([0, 2, 1]), o, 3)[0] == pytest.approx(
        (3 + 1 / math.log2(3)) / 4)


def test_invalid_arguments():
    s, y, o = np.array([1.0]), np.array([1]), np.array([0, 1])
    with pytest.raises(ValueError):
        letor_ndcg_at(s, y, o, 0)
    with pytest.raises(ValueError):
        letor_ndcg_at(s, y, o, 5, discount="log")
    with pytest.raises(ValueError):
        precision_at(s, y, o, 0)


# -------------------------------------------------------------------------------------------------
# the script's algorithm on random instances, ties included
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_matches_loop_transcription_of_the_script(tied, k):
    rng = np.random.default_rng(k + 100 * tied)
    s, y, o = random_instance(rng, 60, tied)
    ap, p_at, ndcg = letor_average_precision(s, y, o), precision_at(s, y, o, k), letor_ndcg_at(s, y, o, k)
    for q in range(len(o) - 1):
        want = script_query(s[o[q]:o[q + 1]], y[o[q]:o[q + 1]], k)
        assert (ap[q], p_at[q], ndcg[q]) == pytest.approx(want, abs=1e-12), f"query {q}"


# -------------------------------------------------------------------------------------------------
# ir_measures (trec_eval) where the definitions coincide: no score ties
# -------------------------------------------------------------------------------------------------
def ir_measures_per_query(measure, s, y, o):
    qrels, run = [], []
    for q in range(len(o) - 1):
        for i in range(o[q], o[q + 1]):
            qrels.append(ir_measures.Qrel(str(q), f"d{i}", int(y[i])))
            run.append(ir_measures.ScoredDoc(str(q), f"d{i}", float(s[i])))
    got = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    agg = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    return np.array([got[str(q)] for q in range(len(o) - 1)]), agg


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_ir_measures_without_ties(seed):
    from ir_measures import AP, P, nDCG
    rng = np.random.default_rng(seed)
    s, y, o = random_instance(rng, 80, tied=False)
    cases = [
        (AP(rel=1), letor_average_precision(s, y, o)),
        (AP(rel=2), letor_average_precision(s, y, o, rel=2)),
        (P(rel=1) @ 5, precision_at(s, y, o, 5)),
        (P(rel=2) @ 5, precision_at(s, y, o, 5, rel=2)),
        (nDCG @ 10, letor_ndcg_at(s, y, o, 10, discount="trec", gain="linear", short_query="score")),
        (nDCG(gains={0: 0, 1: 1, 2: 3}) @ 10,
         letor_ndcg_at(s, y, o, 10, discount="trec", gain="exp", short_query="score")),
    ]
    for measure, ours in cases:
        theirs, agg = ir_measures_per_query(measure, s, y, o)
        np.testing.assert_allclose(ours, theirs, atol=1e-9, err_msg=str(measure))
        assert ours.mean() == pytest.approx(agg, abs=1e-9), str(measure)
