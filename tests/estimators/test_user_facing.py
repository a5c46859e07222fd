"""What a user of the estimators meets at the door: wrong feature order, validation that cannot choose,
names in ``pt.Experiment``, qrels that name nothing, a notebook user's first mistakes, PyTerrier's own
transformer checks. Each case ends in the right answer, a clear error or a documented warning — never a
silently different model."""
import warnings

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import SVMMap, StructSVM


def _frames(seed=0, n_queries=12, n_docs=30, names=("bm25", "dph")):
    """A result frame whose first feature carries the relevance signal, its qrels."""
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_queries):
        for d in range(n_docs):
            rel = rng.random() < 0.2
            rows.append(dict(qid=str(q), docno=f"d{d}", query="x",
                             features=np.array([rel + rng.normal(), rng.normal()])))
            if rel:
                qrels.append(dict(qid=str(q), docno=f"d{d}", label=1))
    res = pd.DataFrame(rows)
    res.attrs["feature_names"] = list(names)
    return res, pd.DataFrame(qrels)


def _swapped(res, names):
    out = res.copy()
    out["features"] = [f[::-1] for f in out["features"]]
    out.attrs["feature_names"] = list(names)
    return out


# ------------------------------------------------------------------------------------------
# feature order at transform
# ------------------------------------------------------------------------------------------
def test_features_in_another_order_are_reordered_by_name():
    res, qrels = _frames()
    model = SVMMap(C=1, features="raw").fit(res, qrels)
    expected = model.transform(res)
    got = model.transform(_swapped(res, ["dph", "bm25"]))
    pd.testing.assert_series_equal(got["score"], expected["score"])
    assert list(got["docno"]) == list(expected["docno"])


def test_renamed_features_are_refused_with_both_lists():
    res, qrels = _frames()
    model = SVMMap(C=1, features="raw").fit(res, qrels)
    renamed = res.copy()
    renamed.attrs["feature_names"] = ["bm25", "pl2"]
    with pytest.raises(ValueError, match=r"\['bm25', 'pl2'\] but the model was trained on \['bm25', 'dph'\]"):
        model.transform(renamed)
    longer = res.assign(features=[np.r_[f, 0.0] for f in res["features"]])
    longer.attrs["feature_names"] = ["bm25", "dph", "pl2"]
    with pytest.raises(ValueError, match="features are matched by name"):
        model.transform(longer)


def test_unnamed_features_only_need_the_width():
    res, qrels = _frames()
    model = SVMMap(C=1, features="raw").fit(res, qrels)
    unnamed = res.copy()
    unnamed.attrs = {}
    pd.testing.assert_series_equal(model.transform(unnamed)["score"], model.transform(res)["score"])
    narrow = unnamed.assign(features=[f[:1] for f in unnamed["features"]])
    with pytest.raises(ValueError, match="trained with 2 features per row but these rows have 1"):
        model.transform(narrow)


def test_a_model_trained_without_names_accepts_named_input():
    res, qrels = _frames()
    unnamed = res.copy()
    unnamed.attrs = {}
    model = SVMMap(C=1, features="raw").fit(unnamed, qrels)
    pd.testing.assert_series_equal(model.transform(res)["score"], model.transform(unnamed)["score"])


def test_validation_features_in_another_order_are_reordered():
    res, qrels = _frames()
    train, valid = res[res.qid.astype(int) < 8], res[res.qid.astype(int) >= 8]
    train.attrs = valid.attrs = {"feature_names": ["bm25", "dph"]}
    a = SVMMap(C=[0.1, 10], features="raw").fit(train, qrels, valid, qrels)
    b = SVMMap(C=[0.1, 10], features="raw").fit(train, qrels, _swapped(valid, ["dph", "bm25"]), qrels)
    assert a.validation_ == b.validation_


# ------------------------------------------------------------------------------------------
# validation that cannot choose
# ------------------------------------------------------------------------------------------
def test_validation_qrels_that_match_no_candidate_warn_and_choose_by_cv():
    res, qrels = _frames()
    valid = res[res.qid.isin(["0", "1"])]
    wrong = pd.DataFrame(dict(qid=["99"], docno=["zz"], label=[1]))
    with pytest.warns(UserWarning, match="no validation candidate is relevant.*cross-validation"):
        model = SVMMap(C=[0.1, 1, 10], features="raw").fit(res, qrels, valid, wrong)
    assert model.selection_ == "cv"
    assert all("cv_scores" in p for p in model.path_)


def test_validation_that_can_choose_is_used_without_a_warning():
    res, qrels = _frames()
    valid = res[res.qid.isin(["0", "1", "2"])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SVMMap(C=[0.1, 1, 10], features="raw", prior=None, selection="validation").fit(res, qrels, valid, qrels)
    assert model.selection_ == "validation"


def test_an_empty_validation_frame_is_an_error():
    res, qrels = _frames()
    with pytest.raises(ValueError, match="valid_res has no rows.*valid_res=None"):
        SVMMap(C=[0.1, 1], features="raw").fit(res, qrels, res.iloc[:0], qrels)


# ------------------------------------------------------------------------------------------
# names in pt.Experiment
# ------------------------------------------------------------------------------------------
def test_str_shows_what_differs_from_the_defaults_and_repr_everything():
    assert str(SVMMap()) == "SVMMap()"
    assert str(SVMMap(features="bins", prior=None)) == "SVMMap(features='bins', prior=None)"
    assert str(SVMMap(C="auto", features="auto")) == "SVMMap()"                 # the defaults, given
    assert (str(SVMMap(C=[1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0]))
            == "SVMMap(C=[0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0])")
    assert str(SVMMap(normalise=None)) == "SVMMap(normalise=None)"
    assert str(SVMMap(selection="validation")) == "SVMMap(selection='validation')"
    assert str(SVMMap(C=[1, 10])) == "SVMMap(C=[1, 10])"
    assert str(StructSVM(loss="roc")) == "StructSVM(loss='roc')"
    assert "n_bins=50" in repr(SVMMap()) and "epsilon=0.001" in repr(SVMMap())


def test_experiment_names_differ_for_different_configurations():
    import pyterrier as pt
    res, qrels = _frames()
    a = SVMMap(C=1, prior=None).fit(res, qrels)
    b = SVMMap(C=1).fit(res, qrels)
    table = pt.Experiment([a, b], res, qrels, eval_metrics=["map"])
    assert list(table["name"]) == ["SVMMap(C=1, prior=None)", "SVMMap(C=1)"]


# ------------------------------------------------------------------------------------------
# verbose
# ------------------------------------------------------------------------------------------
def test_verbose_reports_progress_on_stderr_and_is_quiet_by_default(capfd):
    res, qrels = _frames()
    SVMMap(C=[0.1, 1], features="raw").fit(res, qrels)
    quiet = capfd.readouterr()
    assert quiet.err == "" and quiet.out == ""
    SVMMap(C=[0.1, 1], features="raw", verbose=True).fit(res, qrels)
    loud = capfd.readouterr()
    assert loud.out == ""
    assert "C=0.1" in loud.err and "C=1" in loud.err


# ------------------------------------------------------------------------------------------
# qrels: unknown qids, negative labels
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: SVMMap(C=1, features="raw"), lambda: __import__("pyterrier_svmmap").ApproxAP(
    alphas=[10.0], betas=[10.0], n_iter=3), lambda: __import__("pyterrier_svmmap").AdaRank(n_rounds=3)],
    ids=["svm-map", "approx-ap", "adarank"])
def test_qrels_that_name_no_candidate_are_an_error_for_every_learner(make):
    res, qrels = _frames()
    with pytest.raises(ValueError, match="none of the 360 training candidates is relevant"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                     # the 'no qrels at all' warning comes first
            make().fit(res, qrels.assign(qid="other-" + qrels["qid"]))


def test_negative_labels_count_as_zero_with_a_warning():
    res, qrels = _frames()
    judged_0 = pd.DataFrame(dict(qid=["0", "1"], docno=["d2", "d3"], label=[0, 0]))
    negative = judged_0.assign(label=[-2, -1])
    zero = StructSVM(C=1, loss="ndcg", features="raw").fit(res, pd.concat([qrels, judged_0]))
    with pytest.warns(UserWarning, match="2 qrels have negative labels \\(e.g. -2\\); they count as 0"):
        neg = StructSVM(C=1, loss="ndcg", features="raw").fit(res, pd.concat([qrels, negative]))
    np.testing.assert_array_equal(neg.coef_, zero.coef_)
    from pyterrier_svmmap.frames import candidates_from_frame
    with pytest.warns(UserWarning, match="negative labels"):
        graded = candidates_from_frame(res, pd.concat([qrels, negative]))
    assert graded.labels.min() == 0 and graded.labels.max() == 1     # the grades the graded learners see


# ------------------------------------------------------------------------------------------
# a notebook user's first mistakes
# ------------------------------------------------------------------------------------------
def test_fitting_on_topics_says_to_put_run_features_first():
    res, qrels = _frames()
    topics = res[["qid", "query"]].drop_duplicates()
    with pytest.raises(ValueError, match=r"lacks \['docno', 'features'\].*put RunFeatures\(\.\.\.\) before it"):
        SVMMap().fit(topics, qrels)
    run = res.drop(columns=["features"]).assign(score=1.0)
    with pytest.raises(ValueError, match=r"lacks \['features'\].*>> SVMMap\(\)"):
        SVMMap().fit(run, qrels)


def test_plot_before_fit_is_a_clear_error():
    pytest.importorskip("matplotlib")
    with pytest.raises(RuntimeError, match=r"SVMMap is not fitted: call fit\(\) or load\(\) before plotting it"):
        SVMMap().plot()


def test_pipeline_names_are_short_and_tell_configurations_apart():
    from pyterrier_svmmap import RunFeatures
    res, _ = _frames()
    run = res.drop(columns=["features"]).assign(score=1.0)
    features = RunFeatures({"bm25": run, "dph": run})
    assert str(features) == "RunFeatures('bm25', 'dph')" and "<run of 360 rows>" in repr(features)
    assert str(features >> SVMMap(features="bins")) == "(RunFeatures('bm25', 'dph') >> SVMMap(features='bins'))"


# ------------------------------------------------------------------------------------------
# PyTerrier's own transformer checks
# ------------------------------------------------------------------------------------------
def _fitted_svmmap():
    res, qrels = _frames()
    return SVMMap(C=1, features="raw").fit(res, qrels)


def _run_features():
    from pyterrier_svmmap import RunFeatures
    res, _ = _frames()
    run = res.drop(columns=["features"]).assign(score=1.0)
    return RunFeatures({"bm25": run, "dph": run})


def _offline(case):
    """PyTerrier's checks, with the documentation index (fetched from the web by ``pt.schematic``) taken as
    empty: this machine and CI have no internet."""
    class Offline(case):
        def setUp(self):
            import pyterrier as pt
            patch = __import__("unittest.mock").mock.patch.object(pt.documentation, "url_for_class",
                                                                 lambda cls: None)
            patch.start()
            self.addCleanup(patch.stop)
    return Offline


TestSVMMapPassesPyTerriersChecks = _offline(__import__("pyterrier").testing.transformer_test_class(_fitted_svmmap))
TestRunFeaturesPassesPyTerriersChecks = _offline(__import__("pyterrier").testing.transformer_test_class(_run_features))


def test_inspect_reads_the_columns_of_a_pipeline():
    import pyterrier as pt
    pipeline = _run_features() >> _fitted_svmmap()
    assert pt.inspect.transformer_inputs(_fitted_svmmap()) == [["qid", "docno", "features"]]
    assert pt.inspect.transformer_outputs(pipeline, ["qid", "query"]) == ["qid", "query", "docno", "features",
                                                                          "score", "rank"]
    res, _ = _frames()
    topics = res[["qid", "query"]].drop_duplicates()
    out = pipeline.transform(topics)
    assert list(out.columns) == ["qid", "query", "docno", "features", "score", "rank"]


def test_get_params_has_every_constructor_parameter_and_rebuilds_the_estimator():
    import inspect
    for cls in (SVMMap, StructSVM):
        model = cls(features="raw", queries_per_shard=7, n_jobs=1, verbose=True)
        params = model.get_params()
        assert set(params) == set(inspect.signature(cls.__init__).parameters) - {"self"}
        assert repr(cls(**params)) == repr(model) and cls(**params).get_params() == params
