"""``SVMMap`` in PyTerrier pipelines (pyterrier_svmmap.estimators): fit, transform and save/load behind
``RunFeatures``; the paper's protocol choosing C on validation queries or by cross-validation; skipped
queries; the relevance rule; the prior; a PISA pipeline on a Vaswani subset with ``pt.Experiment``."""
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pyterrier as pt

from pyterrier_svmmap import RunFeatures, SVMMap
from pyterrier_svmmap.frames import candidates_from_frame
from pyterrier_svmmap.measures import average_precision

from tests.helpers import _synthetic_runs  # noqa: E402

#: the paper's protocol (C on the validation queries, or CV over the training ones), which these tests pin;
#: the package's default selection is tested in tests/selection/test_selection.py
PAPER = dict(features="bins", prior=None, selection="validation")


@pytest.mark.parametrize("features", ["bins", "raw", "minmax", "bins+minmax"])
def test_pipeline_fit_transform_and_save_load(tmp_path, features):
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(1))
    tr, va, te = topics.iloc[:6], topics.iloc[6:9], topics.iloc[9:]
    pipe = RunFeatures(runs) >> SVMMap(C=[0.1, 10.0], features=features, n_bins=10)
    pipe.fit(tr, qrels, va, qrels)
    model = pipe[1] if hasattr(pipe, "__getitem__") else pipe._transformers[1]
    assert model.C_ in (0.1, 10.0) and set(model.validation_) == {0.1, 10.0}
    assert model.converged_ and model.history_[-1]["violation"] <= model.epsilon
    out = pipe.transform(te)
    assert {"score", "rank"} <= set(out.columns) and len(out) > 0
    # the learned model ranks better than the worst base function on unseen queries
    cands = candidates_from_frame(RunFeatures(runs).transform(te), qrels)
    learned = average_precision(model.decision_function(cands.raw, cands.offsets), cands.labels, cands.offsets,
                                cands.n_relevant).mean()
    worst = min(average_precision(np.nan_to_num(cands.raw[:, f], nan=-1e9), cands.labels, cands.offsets,
                                  cands.n_relevant).mean() for f in range(3))
    assert learned > worst
    model.save(tmp_path / "m")
    again = SVMMap.load(tmp_path / "m")
    np.testing.assert_array_equal(again.decision_function(cands.raw, cands.offsets),
                                  model.decision_function(cands.raw, cands.offsets))
    assert again.base_names_ == ["f0", "f1", "f2"]


def test_queries_without_both_classes_are_skipped_with_one_warning():
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(2))
    res = RunFeatures(runs).transform(topics.iloc[:5])
    qrels = qrels[qrels.qid != "0"]                           # query 0: no relevant candidate
    with pytest.warns(UserWarning, match=r"skipping 1 of 5 training queries"):
        SVMMap(C=1.0).fit(res, qrels)


def test_c_grid_without_validation_is_chosen_by_cross_validation():
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(2))
    res = RunFeatures(runs).transform(topics.iloc[:8])
    model = SVMMap(C=[0.01, 1.0, 100.0], cv=4, n_bins=5, **PAPER).fit(res, qrels)
    assert model.selection_ == "cv" and [len(p["cv_scores"]) for p in model.path_] == [4, 4, 4]
    assert model.validation_ == {p["C"]: pytest.approx(np.mean(p["cv_scores"])) for p in model.path_}
    assert model.C_ == max(model.validation_, key=model.validation_.get)
    with pytest.raises(ValueError, match="needs at least 9 usable training queries"):
        SVMMap(C=[1.0, 10.0], cv=9, **PAPER).fit(res, qrels)


def test_transform_before_fit_is_a_clear_error():
    topics, runs, _ = _synthetic_runs(np.random.default_rng(2))
    with pytest.raises(RuntimeError, match="not fitted"):
        SVMMap().transform(RunFeatures(runs).transform(topics))


def test_pisa_pipeline_on_vaswani_subset_with_experiment(tmp_path, vaswani_dir):
    from pyterrier_pisa import PisaIndex
    from pyterrier_svmmap.experiments.reproduce.base_runs import iter_trec_docs, read_trec_qrels, read_trec_topics
    docs = [d for _, d in zip(range(3000), iter_trec_docs(vaswani_dir / "docs.trec"))]
    qrels = read_trec_qrels(vaswani_dir / "qrels")
    qrels = qrels[qrels.docno.isin({d["docno"] for d in docs})]
    topics = read_trec_topics(vaswani_dir / "topics.trec")
    topics = topics[topics.qid.isin(qrels.qid.unique())].reset_index(drop=True)
    PisaIndex(str(tmp_path / "idx"), stemmer="porter2").index(iter(docs))
    index = PisaIndex(str(tmp_path / "idx"))
    bm25 = index.bm25(num_results=100)
    base = {"bm25": bm25, "dph": index.dph(num_results=100), "qld": index.qld(num_results=100)}
    n = len(topics)
    tr, va, te = topics.iloc[: n // 3], topics.iloc[n // 3: n // 2], topics.iloc[n // 2:]
    pipe = RunFeatures(base) >> SVMMap(C=[0.1, 1.0, 10.0], n_bins=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(tr, qrels, va, qrels)
    table = pt.Experiment([bm25, pipe], te, qrels, eval_metrics=["map", "ndcg_cut_10"], names=["bm25", "svm-map"])
    assert list(table.name) == ["bm25", "svm-map"]
    # a learned combination of three reasonable functions stays in their league on unseen queries
    assert table.loc[1, "map"] > 0.5 * table.loc[0, "map"]


@pytest.mark.parametrize("features", ["bins", "raw", "minmax"])
def test_prior_best_keeps_the_best_training_function_at_small_c(features):
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(4))
    res = RunFeatures(runs).transform(topics)
    model = SVMMap(C=1e-6, features=features, n_bins=20, prior="best", prior_scale=100.0).fit(res, qrels)
    assert model.prior_function_ == "f1"                      # the least noisy run
    cands = candidates_from_frame(res, qrels)
    ours = average_precision(model.decision_function(cands.raw, cands.offsets), cands.labels, cands.offsets,
                             cands.n_relevant).mean()
    best = average_precision(np.nan_to_num(cands.raw[:, 1], nan=-1e9), cands.labels, cands.offsets,
                             cands.n_relevant).mean()
    assert ours == pytest.approx(best, abs=0.02)      # up to ties among missing documents and bins


def test_transform_keeps_the_input_query_order():
    """Issue: transform reordered queries by qid as text (1, 10, 13, ...)."""
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(5), n_q=12)
    res = RunFeatures(runs).transform(topics)
    model = SVMMap(C=1.0, n_bins=5).fit(res, qrels)
    shuffled_qids = ["11", "2", "10", "0", "9", "1"]
    inp = pd.concat([res[res.qid == q] for q in shuffled_qids])
    out = model.transform(inp)
    assert list(pd.unique(out["qid"])) == shuffled_qids
    for _, g in out.groupby("qid"):
        assert list(g["rank"]) == list(range(len(g))) and (np.diff(g["score"].to_numpy()) <= 0).all()


def test_one_relevance_rule_label_at_least_rel():
    """Issue: fractional labels counted as relevant for the SVMs while LightGBM rounded them. The rule:
    label >= rel (default 1, ir_measures' AP(rel=1)); graded learners refuse fractional grades."""
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(8))
    res = RunFeatures(runs).transform(topics)
    half = qrels.assign(label=0.5)
    assert candidates_from_frame(res, half).n_relevant.sum() == 0
    assert candidates_from_frame(res, half, rel=0.5).n_relevant.sum() == len(qrels)
    tr, va = res[res.qid.astype(int) < 8], res[res.qid.astype(int) >= 8]
    with pytest.raises(ValueError, match="training candidates is relevant \\(label >= 1\\)"):
        SVMMap(C=1.0, n_bins=5).fit(tr, half)                             # nothing is relevant at rel=1
    a = SVMMap(C=[0.1, 10.0], n_bins=5, rel=0.5).fit(tr, half, va, half)
    b = SVMMap(C=[0.1, 10.0], n_bins=5).fit(tr, qrels, va, qrels)          # the same judgements as 1s
    np.testing.assert_array_equal(a.coefs_, b.coefs_)
    assert a.validation_ == b.validation_
    graded = qrels.assign(label=np.where(np.arange(len(qrels)) % 2, 2, 1))  # grades 1 and 2: both relevant
    c = SVMMap(C=[0.1, 10.0], n_bins=5).fit(tr, graded, va, graded)
    np.testing.assert_array_equal(c.coefs_, b.coefs_)
    judged = graded.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    judged = judged[judged.query_id.isin(va.qid)]
    for r in (1, 2):                   # validation MAP at rel=r is ir_measures' AP(rel=r) of what transform outputs
        d = SVMMap(C=[0.1, 10.0], n_bins=5, rel=r, **PAPER).fit(tr, graded, va, graded)
        out = d.transform(va).rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        ap = ir_measures.calc_aggregate([ir_measures.AP(rel=r)], judged, out)[ir_measures.AP(rel=r)]
        assert d.validation_[d.C_] == pytest.approx(ap, abs=1e-12)


def test_boosted_learners_refuse_fractional_grades():
    lightgbm = pytest.importorskip("lightgbm")
    from pyterrier_svmmap import LambdaMART
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(9))
    res = RunFeatures(runs).transform(topics)
    with pytest.raises(ValueError, match="labels are not whole numbers .*LambdaMART and McRank"):
        LambdaMART(n_estimators=5).fit(res, qrels.assign(label=1.5))
    del lightgbm
