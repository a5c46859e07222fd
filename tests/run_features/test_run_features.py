"""``RunFeatures`` (pyterrier_svmmap.run_features): the union of the base runs' candidates, in which order,
with NaN where a run missed a candidate; its names; after a first stage."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_svmmap import RunFeatures, SVMMap

from tests.helpers import _synthetic_runs

nan = np.nan


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


def test_run_features_union_and_nan_for_missing():
    topics, runs, _ = _synthetic_runs(np.random.default_rng(0))
    res = RunFeatures(runs).transform(topics)
    assert res.attrs["feature_names"] == ["f0", "f1", "f2"]
    expected = pd.concat(runs.values()).drop_duplicates(["qid", "docno"])
    assert len(res) == len(expected)
    assert not res.duplicated(["qid", "docno"]).any()
    feats = np.stack(res.features.to_numpy())
    for i, (name, run) in enumerate(runs.items()):
        merged = res[["qid", "docno"]].assign(v=feats[:, i]).merge(run, on=["qid", "docno"], how="left")
        np.testing.assert_array_equal(merged.v.to_numpy(), merged.score.to_numpy())   # NaN where missing


def _first_stage(run: pd.DataFrame):
    """A retriever returning a precomputed run for the topics it gets (a stand-in for bm25)."""
    def retrieve(topics):
        out = topics[["qid", "query"]].merge(run, on="qid")
        return out.sort_values(["qid", "score"], ascending=[True, False]).reset_index(drop=True)
    return pt.apply.generic(retrieve)


def test_run_features_after_a_first_stage():
    """Issue: ``bm25 >> RunFeatures({...}) >> SVMMap()`` raised. The first stage's candidates are kept in
    their order, its score is feature 0 ('input'), the others are the base runs' scores (NaN if missed)."""
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(3))
    first = _first_stage(runs["f0"])
    others = {"f1": runs["f1"], "f2": runs["f2"]}
    res = (first >> RunFeatures(others)).transform(topics)
    inp = first.transform(topics)
    assert res[["qid", "docno"]].equals(inp[["qid", "docno"]]) and res.attrs["feature_names"] == ["input", "f1", "f2"]
    feats = np.stack(res.features.to_numpy())
    np.testing.assert_array_equal(feats[:, 0], inp["score"].to_numpy())
    for j, name in ((1, "f1"), (2, "f2")):
        look = runs[name].set_index(["qid", "docno"])["score"]
        expected = look.reindex(pd.MultiIndex.from_frame(res[["qid", "docno"]])).to_numpy()
        np.testing.assert_array_equal(feats[:, j], expected)          # NaN where that run missed the document
    assert np.isnan(feats[:, 1:]).any()
    pipe = first >> RunFeatures(others) >> SVMMap(C=[0.1, 10.0], n_bins=5)
    pipe.fit(topics.iloc[:6], qrels, topics.iloc[6:9], qrels)
    out = pipe.transform(topics.iloc[9:])
    assert len(out) == len(first.transform(topics.iloc[9:])) and {"score", "rank"} <= set(out.columns)


def test_run_features_default_names_are_unique_and_stable():
    a, b = pt.apply.doc_score(lambda r: 1.0), pt.apply.doc_score(lambda r: 2.0)
    assert repr(a) == repr(b)                                       # why names are not reprs
    rf = RunFeatures([a, b])
    assert rf.names == [f"{type(a).__name__}0", f"{type(b).__name__}1"] == RunFeatures([a, b]).names
