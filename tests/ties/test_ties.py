"""The tie policy (pyterrier_svmmap.ties): equal model scores ordered by the best training base function's
score, then docno descending, written into the scores, so that validation MAP, transform, svmmap classify and
pt.Experiment / ir_measures see one ranking."""
from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import RunFeatures, SVMMap
from pyterrier_svmmap.ties import break_ties, float_to_ordered, tie_base_order, tie_order

from tests.helpers import _synthetic_runs


def test_hand_example():
    scores = np.array([2.0, 2.0, 1.0, 2.0, 5.0, 5.0])
    offsets = np.array([0, 4, 6])
    secondary = np.array([0.0, 1.0, 9.0, np.nan, 3.0, 3.0])
    docnos = np.array(["a", "b", "c", "d", "x", "y"])
    new, report = break_ties(scores, offsets, secondary, docnos)
    # query 0: b (secondary 1) > a (0) > d (missing) among the 2.0s; query 1: equal secondary → docno y > x
    assert list(tie_order(scores, offsets, secondary, docnos)) == [1, 0, 3, 2, 5, 4]
    below = lambda x: float(np.nextafter(np.float32(x), np.float32(-np.inf)))     # the next float32 down
    assert new[1] == 2.0 and new[0] == below(2.0) and new[3] == below(new[0])
    assert new[2] == 1.0 and new[5] == 5.0 and new[4] == below(5.0)
    assert (report.tied, report.tied_top_k, report.top_k, report.moved) == (5, 5, 6, 3)


def test_doubles_closer_than_a_float32_step_are_separated():
    """trec_eval keeps scores as float32: two doubles 1 ulp apart are a tie there."""
    s = 0.02739432
    lo = float(np.nextafter(s, 0))
    new, report = break_ties(np.array([lo, s, 0.5 * s]), np.array([0, 3]))
    assert new[1] == s and new[2] == 0.5 * s and report.moved == 1              # only the crowded one moves
    assert np.float32(new[0]) < np.float32(new[1])


@pytest.mark.parametrize("seed", range(4))
def test_random_instances(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        sizes = rng.integers(0, 25, rng.integers(1, 5))
        offsets = np.r_[0, np.cumsum(sizes)]
        n = int(offsets[-1])
        scores = rng.integers(-3, 3, n) * rng.choice([1.0, 0.1, 1e-300, 1e30])          # within float32 range
        secondary = rng.integers(0, 3, n).astype(float)
        secondary[rng.random(n) < 0.2] = np.nan
        docnos = np.array([f"d{rng.integers(0, 40)}" for _ in range(n)])
        new, report = break_ties(scores, offsets, secondary, docnos)
        qid = np.repeat(np.arange(len(sizes)), sizes)
        order = tie_order(scores, offsets, secondary, docnos)
        base = tie_base_order(offsets, secondary, docnos)                          # the scores' sort alone
        assert np.array_equal(tie_order(scores, offsets, base_order=base), order)
        assert np.array_equal(break_ties(scores, offsets, base_order=base)[0], new)
        for q in range(len(sizes)):
            seg = slice(offsets[q], offsets[q + 1])
            as32 = new[seg].astype(np.float32)
            assert len(np.unique(as32)) == sizes[q]                                # no tie left, even as float32
            assert np.array_equal(offsets[q] + np.argsort(-as32, kind="stable"), order[seg])
            assert np.array_equal(offsets[q] + np.argsort(-new[seg], kind="stable"), order[seg])
        f32 = scores.astype(np.float32)
        alone = np.array([((f32 == f32[i]) & (qid == qid[i])).sum() == 1 for i in range(n)], dtype=bool)
        assert report.moved <= (~alone).sum()
        assert np.array_equal(new[alone & (scores == new)], scores[alone & (scores == new)])
        steps = np.abs(float_to_ordered(new, np.float32) - float_to_ordered(scores, np.float32))   # ≤ the group's size
        assert np.all(steps < np.maximum(sizes[qid], 1))


def test_candidates_docno_codes_order_as_the_docno_strings():
    """Candidates.docno_codes stand for the docnos in the tie policy: the same order as converting the
    strings, for docnos whose string order is not their numeric or object order (and after subset)."""
    from pyterrier_svmmap.frames import candidates_from_frame
    rng = np.random.default_rng(7)
    docnos = [10, 9, "9", "d10", "d9", 100, "D1", "b", "a"]              # "10" < "100" < "9"; 9 and "9" differ
    rows = [(q, d, np.array([float(rng.integers(0, 2)), float(rng.integers(0, 2))]))
            for q in ("q2", "q1") for d in docnos]
    res = pd.DataFrame(rows, columns=["qid", "docno", "features"])
    res["score"] = 0.0
    cands = candidates_from_frame(res)
    for c in (cands, cands.subset(np.array([False, True]))):
        scores = np.zeros(len(c.raw))                                    # all tied: secondary, then docno
        strings = c.frame["docno"].to_numpy()
        want = tie_order(scores, c.offsets, c.raw[:, 0], strings)
        assert np.array_equal(tie_order(scores, c.offsets, c.raw[:, 0], docno_codes=c.docno_codes), want)
        assert np.array_equal(break_ties(scores, c.offsets, c.raw[:, 0], docno_codes=c.docno_codes)[0],
                              break_ties(scores, c.offsets, c.raw[:, 0], strings)[0])
        base = c.tie_base_order(0)                                   # computed once per function
        assert c.tie_base_order(0) is base and np.array_equal(tie_order(scores, c.offsets, base_order=base), want)
        assert not np.array_equal(c.tie_base_order(1), base) or np.array_equal(c.raw[:, 0], c.raw[:, 1])
    import dataclasses
    assert dataclasses.replace(cands, labels=None)._tie_orders == {}      # a copy starts without them


def test_crowded_scores_cascade_below_in_order():
    tiny = np.array([1.0, 1.0, 1.0, float(np.nextafter(np.float32(1.0), np.float32(0)))])   # 3 tied, one 1 step below
    new, report = break_ties(tiny, np.array([0, 4]), np.array([1.0, 2.0, 3.0, 0.0]))
    assert list(np.argsort(-new)) == [2, 1, 0, 3] and report.moved == 3
    assert len(np.unique(new.astype(np.float32))) == 4


def test_validation_transform_and_ir_measures_agree():
    """A coarsely binned model ties a lot; its validation MAP must equal ir_measures' AP of what transform
    outputs (pt.Experiment's number) on the same queries."""
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(6), n_q=14)
    res = RunFeatures(runs).transform(topics)
    train, valid = res[res.qid.astype(int) < 8], res[res.qid.astype(int) >= 8]
    model = SVMMap(C=[0.01, 1.0], n_bins=2, features="bins", prior=None, selection="validation").fit(
        train, qrels, valid, qrels)
    raw_scores = model.decision_function(np.stack(valid.sort_values("qid", kind="stable").features.to_numpy()),
                                         np.r_[0, np.cumsum(valid.sort_values("qid").groupby("qid").size())])
    assert len(raw_scores) > len(np.unique(raw_scores)) + 20                      # many ties to decide
    out = model.transform(valid)
    run = out.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    judged = qrels[qrels.qid.isin(valid.qid)].rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    ap = ir_measures.calc_aggregate([ir_measures.AP], judged, run)[ir_measures.AP]
    assert model.validation_[model.C_] == pytest.approx(ap, abs=1e-12)
    assert out.groupby("qid")["score"].apply(lambda s: s.is_unique).all()


def test_classify_writes_the_tie_broken_scores(tmp_path, examples_dir):
    from pyterrier_svmmap.cli import main
    from pyterrier_svmmap.io.model_files import load_ranker
    from pyterrier_svmmap.io.svmlight import read_svmlight
    examples = examples_dir
    assert main(["learn", "--bins", "2", str(examples / "letor_train.txt"), str(tmp_path / "m")]) == 0
    assert main(["classify", str(examples / "letor_test.txt"), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    got = np.array([float(x) for x in (tmp_path / "p").read_text().split()])
    d = read_svmlight(examples / "letor_test.txt")
    ranker = load_ranker(tmp_path / "m")
    plain = d.ungroup(ranker.decision_function(d.grouped(d.features), d.offsets))
    expected = d.ungroup(ranker.ranking_scores(d.grouped(d.features), d.offsets, d.grouped(d.docids)))
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(got, plain)                                          # there were ties to break
    for q in np.unique(d.qids):
        assert len(np.unique(got[d.qids == q])) == (d.qids == q).sum()
