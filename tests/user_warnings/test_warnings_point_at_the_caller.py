"""The package's warnings (pyterrier_svmmap.user_warnings) are attributed to the user's line — the call of
fit(), of a pipeline's fit, of the array-level ranker — not to the library line that raises them; save and
load raise none."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from pyterrier_svmmap import RunFeatures, StructSVM, SVMMap
from pyterrier_svmmap.svm.ranker import StructSVMRanker

from tests.frames.small_frames import small_frames


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def _only(caught, text):
    found = [w for w in caught if text in str(w.message)]
    assert found, [str(w.message) for w in caught]
    return found


def test_estimator_fit_warnings_point_at_the_fit_call():
    res, qrels = small_frames()
    cases = {
        "have no qrels at all": qrels[qrels.qid != "0"],
        "skipping 1 of 6 training queries": qrels[qrels.qid != "0"],
        "qrels have negative labels": pd.concat([qrels, pd.DataFrame(dict(qid=["1"], docno=["d5"], label=[-1]))]),
        "qrels have fractional labels": pd.concat([qrels, pd.DataFrame(dict(qid=["1"], docno=["d5"], label=[0.5]))]),
        "pairs have different labels": pd.concat([qrels, qrels.iloc[:1].assign(label=0)]),
    }
    for text, judged in cases.items():
        for make in (lambda: SVMMap(C=1.0, features="raw"), lambda: StructSVM(C=1.0, loss="ndcg", features="raw")):
            model = make()
            line = _line_after_this() + 1
            caught = _caught(lambda: model.fit(res, judged))
            for w in _only(caught, text):
                assert (w.filename, w.lineno) == (__file__, line), (text, w.filename, w.lineno)


def _line_after_this():
    import inspect
    return inspect.currentframe().f_back.f_lineno


def test_validation_that_cannot_choose_points_at_the_fit_call():
    res, qrels = small_frames()
    valid, _ = small_frames(seed=1)
    model = SVMMap(C=[0.1, 1.0], features="raw", prior=None, selection="validation")
    caught = _caught(lambda: model.fit(res, qrels, valid, qrels.iloc[:0]))
    for w in _only(caught, "no validation candidate is relevant"):
        assert w.filename == __file__


def test_ranker_fit_warning_points_at_the_fit_call():
    raw = np.random.default_rng(0).random((20, 2))
    labels = np.tile([1.0, 0, 0, 0, 0], 4)
    labels[15] = 0                                     # the last query has no relevant candidate
    caught = _caught(lambda: StructSVMRanker(C=1.0, features="raw").fit(raw, labels, np.arange(0, 21, 5)))
    for w in _only(caught, "skipping 1 of 4 training queries"):
        assert w.filename == __file__


def test_a_pipelines_fit_warning_points_at_the_pipeline_call():
    res, qrels = small_frames()
    run = res.drop(columns=["features"]).assign(score=[f[0] for f in res["features"]])
    pipeline = RunFeatures({"a": run, "b": run.assign(score=-run["score"])}) >> SVMMap(C=1.0, features="raw")
    topics = res[["qid", "query"]].drop_duplicates()
    caught = _caught(lambda: pipeline.fit(topics, qrels[qrels.qid != "0"]))
    for w in _only(caught, "have no qrels at all") + _only(caught, "skipping 1 of 6"):
        assert w.filename == __file__, w.filename


def test_save_and_load_raise_no_warning(tmp_path):
    res, qrels = small_frames()
    model = SVMMap(C=1.0, features="raw").fit(res, qrels)
    assert _caught(lambda: model.save(tmp_path / "m")) == []
    assert _caught(lambda: SVMMap.load(tmp_path / "m")) == []
