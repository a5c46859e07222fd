"""The fast paths of frames → arrays, transform, and the reproduce harness's evaluation pin the old ones.

* ``candidates_from_frame`` (vectorised) equals the former per-row implementation, kept here as
  ``_reference_candidates``, bit for bit, and raises the same errors with the same messages;
* ``RankerEstimator.transform`` equals the former one (``pt.model.add_ranks`` and a reindex);
* ``RankerEstimator.fit_candidates`` / ``score_candidates`` give the model and scores of ``fit`` / ``transform``;
* ``reproduce.evaluation.Evaluator`` (vectorised) equals ``ir_measures`` per query to 1e-12 — with ties in
  score (float32 and exact), graded and negative labels, queries without results or without qrels,
  documents listed twice — on synthetic runs and on real PISA runs over Vaswani;
* the harness's shared-conversion path gives the per-query measures of the frame path.
"""
import logging
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import pyterrier as pt

from pyterrier_svmmap import AdaRank, RunFeatures, SVMMap
from pyterrier_svmmap.frames import Candidates, candidates_from_frame, check_qrels
from pyterrier_svmmap.experiments.reproduce.evaluation import MEASURES, Evaluator, cut_depth
from pyterrier_svmmap.experiments.reproduce.trials import _Trials
from pyterrier_svmmap.experiments.reproduce.experiment import Split
from pyterrier_svmmap.ties import break_ties



# ------------------------------------------------------------------------------------------
# the former implementations (references)
# ------------------------------------------------------------------------------------------
def _reference_candidates(res, qrels=None, n_functions=None, context=None, rel=1.0):
    """candidates_from_frame as it was before vectorisation (per-row maps, MultiIndex reindex)."""
    pt.validate.result_frame(res, extra_columns=["features"], context=context)
    res = res.reset_index(drop=True)
    if "score" in res.columns and len(res):
        score = pd.to_numeric(res["score"], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(score).all():
            r = int(np.flatnonzero(~np.isfinite(score))[0])
            raise ValueError(f"column 'score' is {res['score'].iloc[r]} for qid={res['qid'].iloc[r]!r} "
                             f"docno={res['docno'].iloc[r]!r}: a retriever's score must be a finite number "
                             "(only features may be NaN, for a base function that missed the document)")
    if len(res):
        dup = res.duplicated(["qid", "docno"])
        if dup.any():
            row = res.loc[dup.idxmax(), ["qid", "docno"]]
            raise ValueError(f"{int(dup.sum())} duplicate (qid, docno) rows, e.g. qid={row.qid!r} "
                             f"docno={row.docno!r}; each candidate must appear once per query "
                             "(deduplicate, e.g. res.drop_duplicates(['qid', 'docno']))")
    qid_str = res["qid"].astype(str).to_numpy()
    order = np.lexsort((res["docno"].astype(str).to_numpy(), qid_str))
    res = res.iloc[order].reset_index(drop=True)
    qid_str = qid_str[order]
    if len(res):
        ndims = res["features"].map(np.ndim).to_numpy()
        if (ndims > 1).any():
            r = int(np.argmax(ndims > 1))
            raise ValueError(f"features of qid={qid_str[r]!r} docno={res['docno'].iloc[r]!r} has shape "
                             f"{np.shape(res['features'].iloc[r])}; each row needs a flat array with one value per "
                             "base function")
        lengths = res["features"].map(np.size).to_numpy()
        if (lengths != lengths[0]).any():
            raise ValueError(f"rows have features of different lengths ({sorted(set(lengths.tolist()))}); "
                             "every row needs one value per base function")
        raw = np.stack(res["features"].to_numpy()).astype(float).reshape(len(res), -1)
    else:
        raw = np.zeros((0, n_functions or 0))
    if np.isinf(raw).any():
        r, c = np.argwhere(np.isinf(raw))[0]
        raise ValueError(f"feature {c} is infinite for qid={qid_str[r]!r} docno={res['docno'].iloc[r]!r}; "
                         "features must be finite (NaN marks a document a base function did not retrieve)")
    if n_functions is not None and len(res) and raw.shape[1] != n_functions:
        raise ValueError(f"the model was trained with {n_functions} features per row but these rows have "
                         f"{raw.shape[1]}; use the same RunFeatures (same base functions) as in training")
    qids, starts = np.unique(qid_str, return_index=True)
    offsets = np.append(starts, len(res)).astype(np.int64)
    cands = Candidates(raw=raw, labels=None, offsets=offsets, qids=qids, frame=res)
    if qrels is not None:
        qrels = check_qrels(qrels)
        key = pd.MultiIndex.from_arrays([qid_str, res["docno"].astype(str).to_numpy()])
        judged = pd.Series(qrels["label"].to_numpy(), index=pd.MultiIndex.from_frame(qrels[["qid", "docno"]]))
        judged = judged[~judged.index.duplicated(keep="last")]
        cands.labels = judged.reindex(key).fillna(0.0).to_numpy()
        rel_counts = qrels[qrels["label"] >= rel].groupby("qid").size()
        cands.n_relevant = rel_counts.reindex(qids).fillna(0).to_numpy(dtype=float)
        absent = np.setdiff1d(qids, qrels["qid"].unique())
        if len(absent):
            warnings.warn(f"{len(absent)} of {len(qids)} queries have no qrels at all (e.g. qid "
                          f"{absent[0]!r}); all their candidates count as non-relevant", stacklevel=3)
    return cands


def _reference_transform(est, res):
    """RankerEstimator.transform as it was (frame copy, pt.model.add_ranks, reindex on qid strings)."""
    cands = _reference_candidates(res, n_functions=est.n_functions_, context=est)
    out = cands.frame.copy()
    scores, _ = break_ties(est._score(cands.raw, cands.offsets), cands.offsets, cands.raw[:, est.tie_function_],
                           cands.frame["docno"].to_numpy())
    out["score"] = scores
    out = pt.model.add_ranks(out)
    position = pd.Series(np.arange(len(cands.qids)), index=pd.unique(res["qid"].astype(str)))
    key = position.reindex(out["qid"].astype(str)).to_numpy()
    return out.iloc[np.lexsort((out["rank"].to_numpy(), key))].reset_index(drop=True)


def _ir_measures_per_query(run: pd.DataFrame, qrels: pd.DataFrame, qids) -> pd.DataFrame:
    """The per-query measures as the harness computed them before: one ir_measures call."""
    import ir_measures
    names = {ir_measures.parse_measure(v): k for k, v in MEASURES.items()}
    q = pd.DataFrame({"query_id": qrels["qid"].astype(str), "doc_id": qrels["docno"].astype(str),
                      "relevance": qrels["label"].astype(int)})
    evaluator = ir_measures.evaluator(list(names), q)
    r = {}
    for qid, d, s in zip(run["qid"].astype(str), run["docno"].astype(str), run["score"].astype(float)):
        r.setdefault(qid, {})[d] = s                     # a document listed twice keeps its last score
    out = pd.DataFrame(0.0, index=pd.Index([str(q) for q in qids], name="qid"), columns=list(MEASURES))
    for m in evaluator.iter_calc(r):
        if m.query_id in out.index:
            out.loc[m.query_id, names[m.measure]] = float(m.value)
    return out


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------
def _frame(rng, n_q=7, n_docs=50, n_f=4, shuffle=True, int_qids=False):
    rows = []
    for q in range(n_q):
        docs = rng.choice(200, size=rng.integers(1, n_docs), replace=False)
        for d in docs:
            f = rng.normal(size=n_f)
            f[rng.random(n_f) < 0.3] = np.nan
            rows.append((q if int_qids else str(q + 10 * (q % 3)), f"d{d}", f))
    res = pd.DataFrame(rows, columns=["qid", "docno", "features"])
    res["query"] = "x"
    if shuffle:
        res = res.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)
    res.attrs["feature_names"] = [f"g{i}" for i in range(n_f)]
    return res


def _qrels_for(res, rng, graded=False):
    pairs = res[["qid", "docno"]].astype(str)
    pick = pairs[rng.random(len(pairs)) < 0.3]
    labels = rng.integers(0, 3, len(pick)) if graded else np.ones(len(pick), int)
    extra = pd.DataFrame({"qid": pairs["qid"].iloc[:3].to_numpy(), "docno": ["unretrieved1", "unretrieved2", "u3"],
                          "label": [1, 2, 0]})
    # judged documents that were retrieved, but for another query only
    first = pairs["qid"].iloc[0]
    elsewhere = sorted(set(pairs["docno"]) - set(pairs["docno"][pairs["qid"] == first]))[:3]
    crossed = pd.DataFrame({"qid": first, "docno": elsewhere, "label": 1})
    qrels = pd.concat([pick.assign(label=labels), extra, crossed], ignore_index=True)
    return qrels[qrels["qid"] != sorted(set(qrels["qid"]))[-1]]      # one query without any qrels


def _assert_same_candidates(a: Candidates, b: Candidates):
    pd.testing.assert_frame_equal(a.frame, b.frame)
    for f in ("raw", "offsets", "qids", "labels", "n_relevant"):
        x, y = getattr(a, f), getattr(b, f)
        if x is None:
            assert y is None, f
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, f
        if x.dtype == object:
            assert list(x) == list(y), f
        else:
            assert x.tobytes() == y.tobytes(), f


# ------------------------------------------------------------------------------------------
# candidates_from_frame
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("with_qrels", [False, True])
def test_candidates_equal_the_former_implementation_bit_for_bit(seed, with_qrels):
    rng = np.random.default_rng(seed)
    res = _frame(rng, int_qids=seed == 3)
    qrels = _qrels_for(res, rng, graded=seed % 2 == 1) if with_qrels else None
    with warnings.catch_warnings(record=True) as w_new:
        warnings.simplefilter("always")
        new = candidates_from_frame(res, qrels, rel=1.0 if seed < 2 else 2.0)
    with warnings.catch_warnings(record=True) as w_old:
        warnings.simplefilter("always")
        old = _reference_candidates(res, qrels, rel=1.0 if seed < 2 else 2.0)
    _assert_same_candidates(new, old)
    assert [str(x.message) for x in w_new] == [str(x.message) for x in w_old]
    assert not with_qrels or any("have no qrels at all" in str(x.message) for x in w_new)


def test_candidates_with_duplicate_qrels_lists_and_numbers_as_features():
    rng = np.random.default_rng(7)
    res = _frame(rng)
    qrels = _qrels_for(res, rng, graded=True)
    flipped = qrels.assign(label=2 - qrels["label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_same_candidates(candidates_from_frame(res, pd.concat([qrels, flipped])),
                                _reference_candidates(res, pd.concat([qrels, flipped])))
    lists = res.assign(features=[list(f) for f in res["features"]])          # lists, not arrays
    _assert_same_candidates(candidates_from_frame(lists), _reference_candidates(lists))
    numbers = res.assign(features=[float(f[0]) for f in res["features"]])     # one number per row
    _assert_same_candidates(candidates_from_frame(numbers), _reference_candidates(numbers))
    as_float32 = res.assign(features=[f.astype(np.float32) for f in res["features"]])
    _assert_same_candidates(candidates_from_frame(as_float32), _reference_candidates(as_float32))
    numeric_docnos = res.assign(docno=[int(d[1:]) for d in res["docno"]])     # docnos sorted as strings
    _assert_same_candidates(candidates_from_frame(numeric_docnos), _reference_candidates(numeric_docnos))
    empty = res.iloc[:0]
    _assert_same_candidates(candidates_from_frame(empty, n_functions=4), _reference_candidates(empty, n_functions=4))


def _bad_frames():
    rng = np.random.default_rng(11)
    res = _frame(rng, shuffle=False)
    feats = list(res["features"])
    nested = res.assign(features=[f.reshape(2, 2) if i == 5 else f for i, f in enumerate(feats)])
    all_nested = res.assign(features=[f.reshape(2, 2) for f in feats])
    ragged = res.assign(features=[f[:3] if i == 9 else f for i, f in enumerate(feats)])
    scalar_and_array = res.assign(features=[np.float64(f[0]) if i == 2 else f for i, f in enumerate(feats)])
    infinite = res.assign(features=[np.where(np.arange(4) == 2, np.inf, f) if i == 4 else f
                                    for i, f in enumerate(feats)])
    dup = pd.concat([res, res.iloc[[3, 8]]], ignore_index=True)
    bad_score = res.assign(score=[np.nan if i == 6 else 1.0 for i in range(len(res))])
    return [
        (nested, {}, r"has shape \(2, 2\); each row needs a flat array"),
        (all_nested, {}, r"has shape \(2, 2\); each row needs a flat array"),
        (ragged, {}, r"rows have features of different lengths \(\[3, 4\]\)"),
        (scalar_and_array, {}, r"rows have features of different lengths \(\[1, 4\]\)"),
        (infinite, {}, r"feature 2 is infinite for qid="),
        (dup, {}, r"2 duplicate \(qid, docno\) rows, e.g. qid="),
        (bad_score, {}, r"column 'score' is nan for qid="),
        (res, {"n_functions": 5}, r"the model was trained with 5 features per row but these rows have 4"),
    ]   # a frame without features is refused with a hint now (tests/estimators/test_user_facing.py)


@pytest.mark.parametrize("case", range(len(_bad_frames())))
def test_every_validation_error_is_raised_as_before(case):
    res, kw, pattern = _bad_frames()[case]
    errors = []
    for convert in (candidates_from_frame, _reference_candidates):
        with pytest.raises(Exception, match=pattern) as e:
            convert(res.sample(frac=1.0, random_state=case), **kw)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]                     # the same row named, the same message


# ------------------------------------------------------------------------------------------
# estimators: transform, fit_candidates, score_candidates
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    res = _frame(rng, n_q=10, n_docs=60, n_f=3)
    qrels = _qrels_for(res, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [SVMMap(C=[0.1, 1.0], n_bins=5).fit(res, qrels), AdaRank().fit(res, qrels)]
    return res, qrels, models


@pytest.mark.parametrize("which", [0, 1])
def test_transform_equals_the_former_transform(fitted, which):
    res, _, models = fitted
    est = models[which]
    test = _frame(np.random.default_rng(9), n_q=6, n_f=3)
    pd.testing.assert_frame_equal(est.transform(test), _reference_transform(est, test), check_exact=True)
    # a retriever's frame: score and rank columns are replaced (rank moves last), query order kept
    scored = test.assign(score=np.arange(len(test), dtype=float), rank=0)[
        ["qid", "rank", "docno", "score", "features", "query"]]
    out = est.transform(scored)
    pd.testing.assert_frame_equal(out, _reference_transform(est, scored), check_exact=True)
    assert list(out.columns) == ["qid", "docno", "score", "features", "query", "rank"]
    assert list(pd.unique(out["qid"])) == list(pd.unique(scored["qid"]))


def test_fit_candidates_and_score_candidates_equal_fit_and_transform(fitted):
    res, qrels, models = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train = candidates_from_frame(res, qrels)
        again = SVMMap(C=[0.1, 1.0], n_bins=5).fit_candidates(train, feature_names=res.attrs["feature_names"])
    assert np.array_equal(again.coef_, models[0].coef_) and again.base_names_ == models[0].base_names_
    assert again.tie_function_ == models[0].tie_function_
    test = _frame(np.random.default_rng(9), n_q=6, n_f=3)
    cands = candidates_from_frame(test)
    by_frame = models[0].transform(test).set_index(["qid", "docno"])["score"]
    key = pd.MultiIndex.from_arrays([cands.frame["qid"], cands.frame["docno"]])
    assert np.array_equal(again.score_candidates(cands), by_frame.reindex(key).to_numpy())
    with pytest.raises(ValueError, match="needs candidates converted with their qrels"):
        SVMMap().fit_candidates(cands)
    with pytest.raises(ValueError, match="trained with 3 features per row but these rows have 2"):
        again.score_candidates(Candidates(raw=cands.raw[:, :2], labels=None, offsets=cands.offsets, qids=cands.qids,
                                                     frame=cands.frame))
    with pytest.raises(RuntimeError, match="not fitted"):
        SVMMap().score_candidates(cands)


# ------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------
def _tied_run(rng, qrels, n_q=8):
    rows = []
    for q in range(n_q):
        docs = rng.choice(80, size=rng.integers(1, 60), replace=False)
        base = np.round(rng.normal(size=len(docs)), 1)                   # exact ties
        near = base + rng.choice([0.0, 1e-12, 3e-9], size=len(docs))     # float32 ties, distinct doubles
        rows += [(str(q), f"d{d}", s) for d, s in zip(docs, near)]
    run = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    return pd.concat([run, run.iloc[[0, 5]].assign(score=[9.0, -9.0])], ignore_index=True)   # listed twice


@pytest.mark.parametrize("seed", range(6))
def test_evaluator_equals_ir_measures_with_ties_grades_and_missing_queries(seed):
    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame([(str(q), f"d{d}", int(rng.choice([-1, 0, 1, 1, 2, 3])))
                          for q in range(7) for d in rng.choice(100, size=rng.integers(1, 25), replace=False)],
                         columns=["qid", "docno", "label"])
    qrels = pd.concat([qrels, qrels.iloc[:2].assign(label=0)], ignore_index=True)   # last label wins
    run = _tied_run(rng, qrels)
    qids = [str(q) for q in range(10)] + ["not-in-run"]            # 7: run, no qrels; 8, 9: neither
    got = Evaluator(qrels).per_query(run, qids)
    want = _ir_measures_per_query(run, qrels.drop_duplicates(["qid", "docno"], keep="last"), qids)
    assert list(got.index) == qids and list(got.columns) == list(MEASURES) and got.index.name == "qid"
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=0, atol=1e-12)
    assert (got.loc[["8", "9", "not-in-run"]] == 0).all().all()
    arrays = Evaluator(qrels).per_query_arrays(run["qid"].to_numpy(), run["docno"].to_numpy(),
                                               run["score"].to_numpy(), qids)
    pd.testing.assert_frame_equal(arrays, got)
    assert (Evaluator(qrels).per_query(run.iloc[:0], qids) == 0).all().all()
    assert (Evaluator(qrels.iloc[:0]).per_query(run, qids) == 0).all().all()


def test_evaluator_equals_ir_measures_on_vaswani_pisa_runs(tmp_path, vaswani_dir):
    pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is needed for the base runs")
    from pyterrier_pisa import PisaIndex
    from pyterrier_svmmap.experiments.reproduce.base_runs import iter_trec_docs, read_trec_qrels, read_trec_topics
    docs = [d for _, d in zip(range(4000), iter_trec_docs(vaswani_dir / "docs.trec"))]
    qrels = read_trec_qrels(vaswani_dir / "qrels")
    topics = read_trec_topics(vaswani_dir / "topics.trec")
    PisaIndex(str(tmp_path / "idx"), stemmer="porter2").index(iter(docs))
    index = PisaIndex(str(tmp_path / "idx"))
    runs = {"bm25": index.bm25(num_results=1000)(topics), "dph": index.dph(num_results=1000)(topics),
            "qld": index.qld(num_results=1000)(topics)}
    # a learned ranking as the harness evaluates it: tie policy, then the depth cut
    res = RunFeatures(runs).transform(topics[["qid", "query"]])
    tr = res[res["qid"].isin(topics["qid"].iloc[:20])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SVMMap(C=[1.0], n_bins=10).fit(tr, qrels)
    runs["svm-map@100"] = cut_depth(model.transform(res), 100)
    qids = list(topics["qid"])
    evaluator = Evaluator(qrels)
    for name, run in runs.items():
        got, want = evaluator.per_query(run, qids), _ir_measures_per_query(run, qrels, qids)
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=0, atol=1e-12, err_msg=name)
        assert (want["map"] > 0).sum() > 10, name


# ------------------------------------------------------------------------------------------
# the harness
# ------------------------------------------------------------------------------------------
def test_harness_candidates_path_equals_the_frame_path():
    rng = np.random.default_rng(3)
    res = _frame(rng, n_q=12, n_docs=60, n_f=3)
    qrels = _qrels_for(res, rng)
    qrels = qrels[qrels["label"] > 0]
    qids = sorted(set(res["qid"]))
    split = Split(trial=0, train=tuple(qids[:6]), valid=tuple(qids[6:8]), test=tuple(qids[8:]))
    systems = {"svm-map": lambda: SVMMap(C=[0.1, 1.0], n_bins=5), "adarank": AdaRank}
    trials = _Trials(res, qrels, systems, depth=7)
    shared, calls = {}, []
    fit_candidates = SVMMap.fit_candidates

    def spy(self, train, valid=None, feature_names=None):
        calls.append((id(train), id(valid)))
        assert feature_names == res.attrs["feature_names"]
        return fit_candidates(self, train, valid, feature_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr, va, te = (trials.candidates.iloc[np.concatenate([trials.cand_groups[q] for q in qs if q in trials.cand_groups])]
                      for qs in (split.train, split.valid, split.test))
        qtr, qva = (trials.qrels.iloc[np.concatenate([trials.qrel_groups[q] for q in qs if q in trials.qrel_groups])]
                    for qs in (split.train, split.valid))
        for name, make in systems.items():
            frame_pq, _ = trials._fit_and_test(make(), split, tr, qtr, va, qva, te, list(split.test))
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(type(make()), "fit_candidates", spy)
                array_pq, _ = trials._fit_and_test(make(), split, tr, qtr, va, qva, te, list(split.test), shared)
            pd.testing.assert_frame_equal(array_pq, frame_pq, check_exact=True)
            assert (frame_pq["map"] > 0).any()
    assert len(calls) == 2 and calls[0] == calls[1]          # both estimators got the same conversion
    assert {"test", ("train", 1.0)} <= set(shared)
    out = trials.compute(split, list(systems), keep_models=False)
    assert set(out) == set(systems)


def test_kernel_warm_up_fits_every_system_on_a_tiny_split_and_leaves_no_trace(monkeypatch, tmp_path):
    """reproduce's warm-up (part 1): every system fitted on a few of the split's queries, with the two
    smallest C of its grid, nothing checkpointed, the package's log level as it was; part 0 only
    runs the QP; a failing system is skipped (its trials report it)."""
    import pyterrier_svmmap.svm.qp as qp
    import pyterrier_svmmap.svm.cutting_plane as solver
    from pyterrier_svmmap.experiments.reproduce.trials import TrialStore
    import pyterrier_svmmap.experiments.reproduce.trials as trials_module
    from pyterrier_svmmap.experiments.reproduce.trials import _warm_up
    rng = np.random.default_rng(5)
    res = _frame(rng, n_q=12, n_docs=40, n_f=3)
    qrels = _qrels_for(res, rng)
    qids = sorted(set(res["qid"]))
    split = Split(trial=0, train=tuple(qids[:6]), valid=tuple(qids[6:8]), test=tuple(qids[8:]))
    fitted, qp_calls = [], []

    def broken():
        raise RuntimeError("no such learner")
    made = []

    def svm_map():
        made.append(SVMMap(C=[10.0, 0.1, 1.0], n_bins=5))
        return made[-1]
    systems = {"svm-map": svm_map, "broken": broken, "adarank": AdaRank}
    store = TrialStore(tmp_path, "ctx")
    trials = _Trials(res, qrels, systems, depth=7, store=store)
    real_compute, real_solve = _Trials.compute, qp.solve_dual
    compute_seconds = []

    def timed_compute(self, s, names, **k):
        fitted.append((s, names))
        start = time.perf_counter()
        try:
            return real_compute(self, s, names, **k)
        finally:
            compute_seconds.append(time.perf_counter() - start)
    monkeypatch.setattr(_Trials, "compute", timed_compute)

    def spy(*a, **k):                                       # records each solve's seconds
        start = time.perf_counter()
        try:
            return real_solve(*a, **k)
        finally:
            qp_calls.append(time.perf_counter() - start)
    monkeypatch.setattr(qp, "solve_dual", spy)
    monkeypatch.setattr(solver, "solve_dual", spy)
    monkeypatch.setattr(trials_module, "_WORKER_TRIALS", trials)
    level = logging.getLogger("pyterrier_svmmap").level
    start = time.perf_counter()
    seconds = _warm_up(1, split)
    outside = time.perf_counter() - start
    # the seconds returned are measured around the part's work: at least its fits' time, at most the call's
    assert len(compute_seconds) == 3 and 0 < sum(compute_seconds) <= seconds <= outside
    assert [names for _, names in fitted] == [["svm-map"], ["broken"], ["adarank"]]
    tiny = fitted[0][0]
    assert (tiny.train, tiny.valid, tiny.test) == (split.train[:3], split.valid[:2], split.test[:2])
    assert [est.C for est in made] == [[0.1, 1.0]]           # the two smallest C of the grid
    assert trials.systems == systems                        # the trials' own systems untouched
    assert svm_map().C == [10.0, 0.1, 1.0]
    assert qp_calls                                         # the tiny fits solve QPs
    assert logging.getLogger("pyterrier_svmmap").level == level
    assert not list(tmp_path.iterdir())                     # nothing checkpointed
    fitted.clear(), qp_calls.clear()
    start = time.perf_counter()
    seconds = _warm_up(0, split)
    outside = time.perf_counter() - start
    assert not fitted and len(qp_calls) == 1
    assert 0 < qp_calls[0] <= seconds <= outside            # part 0's seconds include its QP's
    _warm_up(2, split)
    assert not fitted and len(qp_calls) == 1
