"""The first stage: the reference function the default starts from and falls back to.

``RunFeatures(base, first=name)`` (or re-ranking a result frame: ``"input"``) declares it in the frame's
``attrs["first_stage"]``; ``SVMMap(first_stage="auto")`` takes it as the prior's centre, the fallback and the
tie-break function in place of the best base function on the training queries; ``first_stage=None`` keeps the
best on the training queries; a name or column names it directly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import RunFeatures, StructSVMRanker, SVMMap
from pyterrier_svmmap.frames import candidates_from_frame, first_stage_column
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.selection import queries_best_function


def _noise_runs(seed: int = 0, n_q: int = 20, n_docs: int = 50):
    """Three base runs of pure noise, except that ``good`` (column 1) is a little better on the training
    queries by chance of construction: nothing generalises, so the default falls back. ``first`` (column 0)
    is the declared first stage, never the best on the training queries."""
    rng = np.random.default_rng(seed)
    runs = {"first": [], "good": [], "other": []}
    qrels = []
    for q in range(n_q):
        rel = rng.random(n_docs) < 0.2
        rel[0] = True
        for name, signal in (("first", 0.3), ("good", 1.0), ("other", 0.1)):
            s = signal * rel + rng.normal(size=n_docs)
            runs[name] += [(str(q), f"d{d}", float(s[d])) for d in range(n_docs)]
        qrels += [(str(q), f"d{d}", 1) for d in np.flatnonzero(rel)]
    runs = {k: pd.DataFrame(v, columns=["qid", "docno", "score"]) for k, v in runs.items()}
    topics = pd.DataFrame({"qid": [str(q) for q in range(n_q)], "query": "x"})
    return topics, runs, pd.DataFrame(qrels, columns=["qid", "docno", "label"])


def test_run_features_declares_the_named_first_stage():
    topics, runs, _ = _noise_runs()
    res = RunFeatures(runs, first="good").transform(topics)
    assert res.attrs["first_stage"] == "good"
    assert first_stage_column(res.attrs) == 1
    assert candidates_from_frame(res).reference == 1
    assert candidates_from_frame(res).subset(np.arange(20) % 2 == 0).reference == 1     # subsets keep it
    assert "first_stage" not in RunFeatures(runs).transform(topics).attrs
    assert candidates_from_frame(RunFeatures(runs).transform(topics)).reference is None


def test_run_features_reranking_declares_the_input_score():
    topics, runs, _ = _noise_runs()
    first = runs["other"].copy()
    res = RunFeatures({"first": runs["first"], "good": runs["good"]}).transform(first)
    assert res.attrs["feature_names"][0] == "input" and res.attrs["first_stage"] == "input"
    assert candidates_from_frame(res).reference == 0
    named = RunFeatures({"first": runs["first"], "good": runs["good"]}, first="good").transform(first)
    assert named.attrs["first_stage"] == "good" and candidates_from_frame(named).reference == 2


def test_run_features_refuses_an_unknown_first_stage():
    _, runs, _ = _noise_runs()
    with pytest.raises(ValueError, match="first='bm25' is not the name of a base function"):
        RunFeatures(runs, first="bm25")
    assert "first='good'" in repr(RunFeatures(runs, first="good"))


def test_a_frame_declaring_a_first_stage_that_is_not_a_feature_is_refused():
    with pytest.raises(ValueError, match="declares the first stage 'bm25'"):
        first_stage_column({"first_stage": "bm25", "feature_names": ["a", "b"]})


def test_queries_keep_their_reference_in_subsets_and_concatenations():
    q = Queries(np.arange(12.0).reshape(6, 2), np.array([1, 0, 0, 1, 0, 1.0]), np.array([0, 3, 6]), reference=1)
    assert q.subset(np.array([True, False])).reference == 1
    assert Queries.concatenate([q, q]).reference == 1
    other = Queries(q.raw, q.labels, q.offsets, reference=0)
    assert Queries.concatenate([q, other]).reference is None
    assert queries_best_function(q) == 1 and queries_best_function(other) == 0


def test_the_default_falls_back_to_the_declared_first_stage_not_the_best_training_function():
    topics, runs, qrels = _noise_runs()
    res = RunFeatures(runs, first="first").transform(topics)
    declared = SVMMap(fallback_alpha=1e-9).fit(res, qrels)        # never passes the test: the fallback
    assert declared.C_ == 0 and declared.choice_["fallback"]
    assert declared.first_stage_ == "first" and declared.prior_function_ == "first"
    assert declared.tie_function_ == 0
    scored = declared.transform(res)
    for _, group in scored.groupby("qid"):                      # ranks exactly as the first stage
        order = group.sort_values("rank")["features"].map(lambda f: f[0]).to_numpy()
        assert np.all(np.diff(order) <= 0)
    best = SVMMap(fallback_alpha=1e-9, first_stage=None).fit(res, qrels)
    assert best.first_stage_ is None and best.prior_function_ == "good" and best.tie_function_ == 1


def test_the_fallback_is_the_prior_at_its_scale():
    """The fallback's weights are the prior's w₀ at ``prior_scale``, in cross-validation as in the final model."""
    topics, runs, qrels = _noise_runs()
    res = RunFeatures(runs, first="first").transform(topics)
    models = [SVMMap(fallback_alpha=1e-9, prior_scale=scale).fit(res, qrels) for scale in (1.0, 3.0)]
    assert all(m.choice_["fallback"] for m in models)
    np.testing.assert_allclose(models[1].coef_, 3.0 * models[0].coef_, rtol=1e-12)
    assert np.abs(models[0].coef_).max() > 0


def test_the_prior_is_centred_on_the_first_stage():
    topics, runs, qrels = _noise_runs()
    res = RunFeatures(runs).transform(topics)
    for first, column in (("other", 2), (2, 2), ("first", 0)):
        m = SVMMap(C=1e-6, features="raw", first_stage=first).fit(res, qrels)
        assert m.prior_function_ == ["first", "good", "other"][column] and m.tie_function_ == column
        assert m.first_stage_ == ["first", "good", "other"][column]
        # at a tiny C the model is its prior: the first stage's ranking
        s = m.ranker_.decision_function(candidates_from_frame(res).raw, candidates_from_frame(res).offsets)
        cands = candidates_from_frame(res)
        for q in range(cands.n_queries):
            lo, hi = cands.offsets[q], cands.offsets[q + 1]
            assert np.array_equal(np.argsort(-s[lo:hi], kind="stable"),
                                  np.argsort(-cands.raw[lo:hi, column], kind="stable"))


def test_first_stage_errors_name_the_problem():
    topics, runs, qrels = _noise_runs()
    res = RunFeatures(runs).transform(topics)
    with pytest.raises(ValueError, match="first_stage='bm25' is not one of the base functions"):
        SVMMap(first_stage="bm25").fit(res, qrels)
    with pytest.raises(ValueError, match="first_stage=7 is not a column"):
        SVMMap(first_stage=7).fit(res, qrels)
    with pytest.raises(ValueError, match="first_stage"):
        SVMMap(first_stage=-1).fit(res, qrels)
    with pytest.raises(ValueError, match="first_stage"):
        SVMMap(first_stage=1.5).fit(res, qrels)


def test_the_ranker_takes_a_column_and_the_paper_keeps_the_best_training_function():
    topics, runs, qrels = _noise_runs()
    cands = candidates_from_frame(RunFeatures(runs).transform(topics), qrels)
    r = StructSVMRanker(C=1e-6, features="raw", prior="best", first_stage=2).fit(cands.raw, cands.labels,
                                                                                cands.offsets)
    assert r.tie_function_ == 2 and r.prior_function_ == "f2" and r.first_stage_ == "f2"
    paper = StructSVMRanker(C=[0.1, 1.0]).fit(cands.raw, cands.labels, cands.offsets)
    assert paper.first_stage_ is None and paper.tie_function_ == 1


def test_the_first_stage_is_saved_with_the_model(tmp_path):
    topics, runs, qrels = _noise_runs()
    res = RunFeatures(runs, first="other").transform(topics)
    m = SVMMap(C=1e-3, features="raw").fit(res, qrels)
    m.save(tmp_path / "model")
    back = SVMMap.load(tmp_path / "model")
    assert back.first_stage_ == "other" and back.tie_function_ == 2
    assert np.array_equal(back.transform(res)["score"].to_numpy(), m.transform(res)["score"].to_numpy())


def test_a_feature_equal_to_the_frames_score_is_the_first_stage():
    """PyTerrier's feature unions keep the first stage's score beside the features: ``bm25 >> (bm25 ** pl2)``
    gives a frame whose ``score`` is BM25's and whose features include it."""
    topics, runs, qrels = _noise_runs()
    res = RunFeatures(runs).transform(topics)
    union = res.assign(score=[f[2] for f in res["features"]])          # the first stage is "other"
    assert candidates_from_frame(union).reference == 2
    m = SVMMap(fallback_alpha=1e-9).fit(union, qrels)
    assert m.first_stage_ == "other" and m.prior_function_ == "other"
    twice = union.assign(features=[np.r_[f[:2], f[2], f[2]] for f in union["features"]])
    assert candidates_from_frame(twice).reference == 2                 # two equal columns: the first
    shifted = res.assign(score=[f[2] + 1.0 for f in res["features"]])  # equal to no feature: none known
    assert candidates_from_frame(shifted).reference is None
    declared = union.copy()
    declared.attrs["first_stage"] = "good"                             # a declaration wins
    assert candidates_from_frame(declared).reference == 1
