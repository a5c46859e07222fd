"""The core path: the paper's toy examples, AP agreement with ir_measures, the PyTerrier pipeline on a
Vaswani subset with PISA, and save/load."""
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pyterrier as pt

from pyterrier_svmmap import RunFeatures, SVMMap, get_loss, most_violated
from pyterrier_svmmap.frames import candidates_from_frame
from pyterrier_svmmap.svm.losses.map import MAPLoss, average_precision_of_ranking
from pyterrier_svmmap.measures import average_precision, ndcg_at, reciprocal_rank_at

from tests.helpers import _synthetic_runs  # noqa: E402

#: the paper's protocol (C on the validation queries, or CV over the training ones), which these tests pin;
#: the package's default selection is tested in tests/selection/test_selection.py
PAPER = dict(features="bins", prior=None, selection="validation")


# -- the paper's toy examples (Yue et al. 2007, Tables 1–4) --------------------------------------
def _toy(p, rank_h1):
    labels = np.array(p)
    h1 = np.argsort(-np.array(rank_h1), kind="stable")      # rank value 8 (highest) first
    return labels, h1, h1[::-1]


def test_table_1_and_2_map_and_roc():
    labels, h1, h2 = _toy([1, 0, 0, 0, 0, 1, 1, 0], [8, 7, 6, 5, 4, 3, 2, 1])
    assert round(average_precision_of_ranking(h1, labels), 2) == 0.59
    assert round(average_precision_of_ranking(h2, labels), 2) == 0.51
    roc = get_loss("roc")
    assert round(1 - roc.delta(h1, labels), 2) == 0.47
    assert round(1 - roc.delta(h2, labels), 2) == 0.53


def test_table_3_and_4_map():
    # one copy of the paper prints 0.70/0.64 here; the ranking gives 0.56/0.51
    labels, h1, h2 = _toy([1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0], list(range(11, 0, -1)))
    assert round(average_precision_of_ranking(h1, labels), 2) == 0.56
    assert round(average_precision_of_ranking(h2, labels), 2) == 0.51


# -- Algorithm 2's exactness against brute force: tests/svm/test_losses_bruteforce.py, tests/svm/test_map_loss_kernels.py
def test_most_violated_rejects_bad_input():
    with pytest.raises(ValueError, match="finite"):
        most_violated([0.1, np.nan], [1, 0])
    with pytest.raises(ValueError, match="same length|one length"):
        most_violated([0.1, 0.2], [1, 0, 1])


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


@pytest.mark.parametrize("seed", range(3))
def test_best_function_kernel_gives_the_sorted_aps_bit_for_bit(seed):
    """selection.best_function: the kernel's per-query APs equal average_precision's (NaN scores last,
    ties by position, empty queries, queries without relevant candidates), and so does its choice, whether
    it counts (few relevant candidates) or sorts (more than COUNT_RELEVANT_MAX)."""
    from pyterrier_svmmap import _jit
    import pyterrier_svmmap.selection as selection
    kernels = _jit.load("measures._kernels")
    rng = np.random.default_rng(seed)
    for _ in range(60):
        sizes = rng.integers(0, 30, rng.integers(1, 10))
        offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        raw = np.round(rng.normal(size=(offsets[-1], rng.integers(1, 6))), 1)
        raw[rng.random(raw.shape) < 0.3] = np.nan
        labels = (rng.random(offsets[-1]) < rng.uniform(0, 0.6)).astype(float)
        filled = np.where(np.isnan(raw), -np.inf, raw)
        want = np.array([average_precision(filled[:, f], labels, offsets) for f in range(raw.shape[1])])
        got = np.empty_like(want)
        if len(raw):
            kernels.function_ap(np.ascontiguousarray(raw), np.ascontiguousarray(labels > 0), offsets, got)
            assert np.array_equal(got, want)
        assert selection.best_function(raw, labels, offsets) == int(np.argmax(want.mean(axis=1)))
    n = 2 * kernels.COUNT_RELEVANT_MAX + 100
    raw = np.round(rng.normal(size=(n, 3)), 1)
    raw[rng.random(raw.shape) < 0.1] = np.nan
    labels = (rng.random(n) < 0.7).astype(float)        # more relevant candidates than the kernel counts
    offsets = np.array([0, 40, n], dtype=np.int64)
    filled = np.where(np.isnan(raw), -np.inf, raw)
    want = np.array([average_precision(filled[:, f], labels, offsets) for f in range(raw.shape[1])])
    got = np.empty_like(want)
    kernels.function_ap(np.ascontiguousarray(raw), np.ascontiguousarray(labels > 0), offsets, got)
    assert np.array_equal(got, want)
    assert selection.best_function(raw, labels, offsets) == int(np.argmax(want.mean(axis=1)))


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


# -- the PyTerrier layer ------------------------------------------------------------------------


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
    learned = average_precision(model.decision_function(cands.raw, cands.offsets), cands.labels, cands.offsets, cands.n_relevant).mean()
    worst = min(average_precision(np.nan_to_num(cands.raw[:, f], nan=-1e9), cands.labels, cands.offsets,
                                  cands.n_relevant).mean() for f in range(3))
    assert learned > worst
    model.save(tmp_path / "m")
    again = SVMMap.load(tmp_path / "m")
    np.testing.assert_array_equal(again.decision_function(cands.raw, cands.offsets), model.decision_function(cands.raw, cands.offsets))
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
    from pyterrier_svmmap.experiments.reproduce.collection import iter_trec_docs, read_trec_qrels, read_trec_topics
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
    ours = average_precision(model.decision_function(cands.raw, cands.offsets), cands.labels, cands.offsets, cands.n_relevant).mean()
    best = average_precision(np.nan_to_num(cands.raw[:, 1], nan=-1e9), cands.labels, cands.offsets,
                             cands.n_relevant).mean()
    assert ours == pytest.approx(best, abs=0.02)      # up to ties among missing documents and bins


def test_threshold_depth_puts_the_thresholds_among_each_querys_top_candidates():
    from pyterrier_svmmap.features.encoder import FeatureEncoder
    rng = np.random.default_rng(0)
    offsets = np.array([0, 500, 1000])
    raw = rng.exponential(size=(1000, 2))                    # many low scores, a few high ones
    everywhere = FeatureEncoder("bins", n_bins=10).fit(raw, offsets).thresholds_
    top = FeatureEncoder("bins", n_bins=10, threshold_depth=20).fit(raw, offsets).thresholds_
    top20 = np.sort(raw[:500, 0])[-20:].min()
    assert (top[0, 1:] >= min(top20, np.sort(raw[500:, 0])[-20:].min())).all()
    assert np.median(top[0, 1:]) > np.median(everywhere[0, 1:])
    with pytest.raises(ValueError, match="threshold_depth"):
        FeatureEncoder("bins", threshold_depth=0)


def test_top_of_queries_keeps_each_querys_top_scores_per_function():
    from pyterrier_svmmap.features.thresholds import top_of_queries
    rng = np.random.default_rng(0)
    for _ in range(100):
        sizes = rng.integers(1, 30, rng.integers(1, 6))
        offsets = np.r_[0, np.cumsum(sizes)]
        raw = rng.normal(size=(offsets[-1], 3))
        raw[rng.random(raw.shape) < 0.3] = np.nan
        depth = int(rng.integers(1, 10))
        got = top_of_queries(raw, offsets, depth)
        for q in range(len(sizes)):
            for f in range(3):
                col = raw[offsets[q]:offsets[q + 1], f]
                kept = got[offsets[q]:offsets[q + 1], f]
                expected = np.sort(col[~np.isnan(col)])[::-1][:depth]
                np.testing.assert_array_equal(np.sort(kept[~np.isnan(kept)])[::-1], expected)


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


def test_duplicate_qrels_count_once_and_conflicts_warn():
    """Issue: pd.concat([qrels, qrels]) halved validation MAP (the relevant count doubled)."""
    topics, runs, qrels = _synthetic_runs(np.random.default_rng(4))
    res = RunFeatures(runs).transform(topics)
    once = candidates_from_frame(res, qrels)
    twice = candidates_from_frame(res, pd.concat([qrels, qrels]))
    np.testing.assert_array_equal(once.n_relevant, twice.n_relevant)
    np.testing.assert_array_equal(once.labels, twice.labels)
    a = SVMMap(C=[0.1, 10.0], n_bins=5).fit(res.iloc[:200], qrels, res.iloc[200:], qrels)
    b = SVMMap(C=[0.1, 10.0], n_bins=5).fit(res.iloc[:200], qrels, res.iloc[200:], pd.concat([qrels, qrels]))
    assert a.validation_ == b.validation_
    flipped = qrels.iloc[:3].assign(label=0)
    with pytest.warns(UserWarning, match="3 \\(qid, docno\\) pairs have different labels.*last label"):
        c = candidates_from_frame(res, pd.concat([qrels, flipped]))
    assert c.n_relevant.sum() == once.n_relevant.sum() - 3


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


def test_a_two_dimensional_features_cell_is_rejected():
    res = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"],
                        "features": [np.ones((2, 2)), np.ones((2, 2))]})
    with pytest.raises(ValueError, match=r"has shape \(2, 2\); each row needs a flat array"):
        candidates_from_frame(res)


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


@pytest.mark.parametrize("features,block", [("bins+raw", "raw"), ("raw+bins", "raw"), ("bins+minmax", "minmax"),
                                            ("bins", "bins")])
def test_the_prior_ranks_exactly_like_the_function_when_a_dense_block_holds_it(features, block):
    from pyterrier_svmmap.features.layout import FeatureLayout
    from pyterrier_svmmap.selection import base_function_weights
    rng = np.random.default_rng(6)
    raw = rng.normal(size=(60, 3))
    offsets = np.array([0, 20, 40, 60])
    layout = FeatureLayout.fit(raw, offsets, features, 5)
    assert layout.prior_block() == block
    w0 = base_function_weights(layout, raw, offsets, 2)
    assert np.flatnonzero(w0).tolist() == [dict(layout.block_slices())[block].start + (2 * 5 if block == "bins" else 2)
                                           + i for i in range(5 if block == "bins" else 1)]
    scores = layout.transform(raw, offsets).dot(w0)
    for a, b in zip(offsets[:-1], offsets[1:]):
        order = np.argsort(-raw[a:b, 2], kind="stable")
        if block != "bins":                                       # the steps of bins tie within a bin
            assert np.all(np.diff(scores[a:b][order]) < 0)
