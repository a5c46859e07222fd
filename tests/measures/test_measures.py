"""The measures (pyterrier_svmmap.measures) against ir_measures: AP, nDCG, nDCG@10 and RR@10 per query
(relevant documents that were not retrieved counted); the MAP loss's AP (svm/losses/map.py) is ir_measures'
AP with the qrels restricted to the candidates; ``rank_within_queries``' order."""
from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap.measures import average_precision, ndcg_at, reciprocal_rank_at
from pyterrier_svmmap.svm.losses.map import MAPLoss


# -- measures agree with ir_measures ----------------------------------------------------------
def _run_and_qrels(rng, n_q=6, n=30):
    rows, qrels, scores, labels, n_rel = [], [], [], [], []
    for q in range(n_q):
        s = rng.permutation(n).astype(float) + rng.uniform(0, 0.5)      # distinct scores
        lab = (rng.random(n) < 0.3).astype(int)
        lab[0] = 1
        extra = rng.integers(0, 3)                                        # relevant but not retrieved
        for d in range(n):
            rows.append((str(q), f"d{d}", s[d]))
            if lab[d]:
                qrels.append((str(q), f"d{d}", 1))
        for e in range(extra):
            qrels.append((str(q), f"missing{e}", 1))
        scores.append(s), labels.append(lab), n_rel.append(lab.sum() + extra)
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    qr = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    offsets = np.arange(n_q + 1) * n
    return run, qr, np.concatenate(scores), np.concatenate(labels), offsets, np.array(n_rel)


def test_measures_agree_with_ir_measures():
    run, qrels, scores, labels, offsets, n_rel = _run_and_qrels(np.random.default_rng(3))
    ref = {(m, r.query_id): r.value for m in ("AP", "nDCG@10", "RR@10", "nDCG")
           for r in ir_measures.iter_calc([ir_measures.parse_measure(m)], qrels, run)}
    ours = {"AP": average_precision(scores, labels, offsets, n_rel),
            "nDCG@10": ndcg_at(scores, labels, offsets, 10, n_rel),
            "nDCG": ndcg_at(scores, labels, offsets, None, n_rel),
            "RR@10": reciprocal_rank_at(scores, labels, offsets, 10)}
    for m, values in ours.items():
        for q, v in enumerate(values):
            assert v == pytest.approx(ref[(m, str(q))], abs=1e-12), (m, q)


def test_rank_within_queries_is_stable_by_query_then_score():
    """By query, then decreasing score, ties (−0.0 = 0.0 included) by position; NaN scores last (lexsort)."""
    from pyterrier_svmmap.measures import rank_within_queries
    scores = np.array([1.0, 2.0, 1.0, -0.0, 0.0, 2.0, 3.0, 0.0, 5.0, 5.0, 4.0])
    offsets = np.array([0, 6, 6, 7, 11])
    assert rank_within_queries(scores, offsets).tolist() == [1, 5, 0, 2, 3, 4, 6, 8, 9, 10, 7]
    with_nan = scores.copy()
    with_nan[1] = np.nan
    assert rank_within_queries(with_nan, offsets).tolist()[:6] == [5, 0, 2, 3, 4, 1]
    rng = np.random.default_rng(1)
    sizes = rng.integers(0, 300, size=40)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    scores = np.round(rng.normal(size=offsets[-1]), 1)
    want = np.lexsort((np.arange(len(scores)), -scores, np.repeat(np.arange(40), sizes)))
    assert np.array_equal(rank_within_queries(scores, offsets), want)


@pytest.mark.parametrize("seed", range(4))
def test_tie_ordered_ap_is_the_sorted_rankings_ap_bit_for_bit(seed):
    """Ranks counted by binary searches among the relevant candidates give the AP of the ranking by score with
    ties in the given order, to the bit: heavy ties, ±0, ±∞, NaN, empty queries, queries without a relevant
    candidate, relevant documents beyond the candidates, and a query of ~150 relevant candidates."""
    from pyterrier_svmmap.measures import rank_within_queries, ranked_average_precision, tie_ordered_average_precision
    from pyterrier_svmmap.queries import query_ids
    rng = np.random.default_rng(seed)
    sizes = np.r_[0, 192, rng.integers(0, 60, size=30)]
    offsets = np.r_[0, np.cumsum(sizes)]
    n, qid = int(offsets[-1]), query_ids(offsets)
    labels = (rng.random(n) < 0.3).astype(float)
    labels[offsets[1]:offsets[2]] = rng.random(sizes[1]) < 0.8                  # many relevant
    scores = np.round(rng.normal(size=n), 1) * 2.0 ** rng.integers(-40, 40)
    scores[rng.integers(0, n, 6)] = [np.inf, -np.inf, 0.0, -0.0, 0.0, -0.0]
    base = np.lexsort((rng.random(n), qid))                                     # a tie order within each query
    position = np.empty(n, dtype=np.int64)
    position[base] = np.arange(n)
    n_rel = np.bincount(qid, weights=labels, minlength=len(sizes)) + rng.integers(0, 2, len(sizes))
    for with_nan in (False, True):
        if with_nan:
            scores[rng.integers(0, n, 3)] = np.nan
        for nr in (None, n_rel):
            want = ranked_average_precision(base[rank_within_queries(scores[base], offsets)], labels, offsets, nr)
            got = tie_ordered_average_precision(scores, labels, offsets, position, nr)
            assert got.tobytes() == want.tobytes()
    assert tie_ordered_average_precision(scores, labels, offsets, np.arange(n)).tobytes() == \
        ranked_average_precision(rank_within_queries(scores, offsets), labels, offsets).tobytes()


def test_training_loss_ap_equals_ir_measures_ap_with_qrels_restricted_to_candidates():
    rng = np.random.default_rng(5)
    run, qrels, scores, labels, offsets, _ = _run_and_qrels(rng, n_q=4)
    loss = MAPLoss()
    restricted = qrels[~qrels.doc_id.str.startswith("missing")]
    ref = {r.query_id: r.value for r in ir_measures.iter_calc([ir_measures.AP], restricted, run)}
    for q in range(4):
        lo, hi = offsets[q], offsets[q + 1]
        ranking = np.argsort(-scores[lo:hi])
        assert 1 - loss.delta(ranking, labels[lo:hi]) == pytest.approx(ref[str(q)], abs=1e-12)


@pytest.mark.parametrize("kind", ["continuous", "tied", "clustered", "skewed", "extreme", "one value", "infinite"])
def test_rank_within_queries_sorts_each_query_by_decreasing_score_whatever_the_scores(kind):
    """Candidates by query then decreasing score, equal scores by index (the stable lexsort), for scores that fill
    the bucket sort's buckets evenly, tie in long runs, crowd into one bucket (sorted by buckets again, then a
    mergesort), span many magnitudes, or are all equal or infinite (a mergesort)."""
    from pyterrier_svmmap.queries import query_ids
    from pyterrier_svmmap.measures import rank_within_queries
    rng = np.random.default_rng(len(kind))
    sizes = [3, 3000, 7, 1, 40, 2, 0, 5, 200]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    scores = {"continuous": rng.normal(size=n), "tied": np.round(rng.normal(size=n), 1),
              "clustered": np.where(rng.random(n) < 0.9, rng.normal(size=n) * 1e-9, rng.normal(size=n) * 1e6),
              "skewed": np.exp(rng.normal(size=n) * 20), "extreme": rng.normal(size=n) * 1e300,
              "one value": np.full(n, 2.5), "infinite": np.where(rng.random(n) < 0.1, np.inf, rng.normal(size=n))}[kind]
    got = rank_within_queries(scores, offsets)
    assert np.array_equal(got, np.lexsort((-scores, query_ids(offsets))))      # stable: equal scores by index


def test_rank_within_queries_puts_nan_last():
    from pyterrier_svmmap.measures import rank_within_queries
    scores = np.array([1.0, np.nan, 3.0, 2.0, np.nan, 0.5])
    assert rank_within_queries(scores, np.array([0, 6])).tolist() == [2, 3, 0, 5, 1, 4]
    long = np.r_[scores, np.arange(100.0) + 10]
    assert rank_within_queries(long, np.array([0, 106])).tolist() == list(range(105, 5, -1)) + [2, 3, 0, 5, 1, 4]
