"""What a user meets at the door: wrong feature order, validation that cannot choose, malformed files,
command-line edges, names in ``pt.Experiment``, two runs into one folder. Each case ends in the right
answer, a clear error or a documented warning — never a silently different model."""
import multiprocessing
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import SVMMap, StructSVM
from pyterrier_svmmap.cli import main

from tests.data_paths import EXAMPLES


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
    assert str(SVMMap(C=[1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0])) == "SVMMap(C=[0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0])"
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
# command line: malformed first lines, group files, output folders, model directories
# ------------------------------------------------------------------------------------------
def _letor_lines():
    return [ln for ln in (EXAMPLES / "letor_train.txt").read_text().splitlines() if ln and not ln.startswith("#")]


def test_a_malformed_first_label_is_reported_as_file_line(tmp_path, capsys):
    lines = _letor_lines()
    bad = tmp_path / "train.txt"
    bad.write_text("\n".join(["O" + lines[0][1:]] + lines[1:]) + "\n")
    assert main(["learn", str(bad), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{bad}:1: expected a numeric label first, found 'O'")
    assert len(err.splitlines()) == 1


def test_a_byte_order_mark_is_read_as_if_absent(tmp_path):
    lines = _letor_lines()
    plain, bom = tmp_path / "plain.txt", tmp_path / "bom.txt"
    plain.write_text("\n".join(lines) + "\n")
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    for f in (plain, bom):
        assert main(["learn", str(f), str(tmp_path / f"m_{f.stem}"), "-c", "1"]) == 0
        assert main(["classify", str(f), str(tmp_path / f"m_{f.stem}"), str(tmp_path / f"{f.stem}.pred")]) == 0
    assert (tmp_path / "plain.pred").read_text() == (tmp_path / "bom.pred").read_text()


def test_an_index_file_with_a_byte_order_mark_lists_its_files(tmp_path):
    lines = _letor_lines()
    (tmp_path / "a.txt").write_text("\n".join(lines[:48]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[48:]) + "\n")
    (tmp_path / "index.txt").write_bytes(b"\xef\xbb\xbfa.txt\nb.txt\n")
    assert main(["learn", str(tmp_path / "index.txt"), str(tmp_path / "m_index"), "-c", "1"]) == 0
    assert main(["learn", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), str(tmp_path / "m_files"), "-c", "1"]) == 0
    weights = [np.load(tmp_path / m / "weights.npz")["coef"] for m in ("m_index", "m_files")]
    np.testing.assert_array_equal(*weights)              # the same two shards, in the same order


def test_lightgbm_group_files_get_a_hint(tmp_path, capsys):
    lines = [" ".join(t for t in ln.split() if not t.startswith("qid:")) for ln in _letor_lines()]
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    (tmp_path / "train.txt.query").write_text("48\n48\n")
    assert main(["learn", str(data), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"{data}:1: expected 'qid:<integer>'" in err and "train.txt.query looks like a LightGBM-style group file" in err


def test_learn_refuses_a_directory_that_holds_no_model_unless_forced(tmp_path, capsys):
    train = str(EXAMPLES / "letor_train.txt")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["learn", train, str(other)]) == 2
    assert "holds other files but no model" in capsys.readouterr().err
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]
    assert main(["learn", train, str(other), "--force"]) == 0
    assert (other / "model.json").is_file() and (other / "keep.txt").read_text() == "mine"
    assert main(["learn", train, str(other), "-c", "10"]) == 0          # a model directory is replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["learn", train, str(empty)]) == 0


def test_classify_creates_the_output_folder(tmp_path):
    train, test = str(EXAMPLES / "letor_train.txt"), str(EXAMPLES / "letor_test.txt")
    assert main(["learn", train, str(tmp_path / "m")]) == 0
    out = tmp_path / "new" / "deeper" / "pred.txt"
    assert main(["classify", test, str(tmp_path / "m"), str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(_letor_lines_of(test))


def _letor_lines_of(path):
    return [ln for ln in Path(path).read_text().splitlines() if ln.split("#")[0].strip()]


def test_learn_says_how_c_was_chosen_and_not_when_nothing_was_compared(tmp_path, caplog):
    train, test = str(EXAMPLES / "letor_train.txt"), str(EXAMPLES / "letor_test.txt")
    with caplog.at_level("INFO", logger="pyterrier_svmmap"):
        assert main(["learn", train, str(tmp_path / "one"), "-c", "10"]) == 0
    single = [r.message for r in caplog.records if "model written" in r.message][-1]
    assert single.startswith("C=10;") and "chosen" not in single and "none" not in single
    caplog.clear()
    with caplog.at_level("INFO", logger="pyterrier_svmmap"):
        assert main(["learn", train, str(tmp_path / "grid"), "-c", "0.1,10", "--valid", test]) == 0
    assert "chosen on --valid" in [r.message for r in caplog.records if "model written" in r.message][-1]


# ------------------------------------------------------------------------------------------
# two runs into one folder
# ------------------------------------------------------------------------------------------
def _hold_lock(folder, ready, release):
    from pyterrier_svmmap.experiments.reproduce.base_runs import folder_lock
    with folder_lock(Path(folder)):
        ready.set()
        release.wait(30)


def test_a_folder_in_use_is_refused_with_the_holders_pid_and_freed_after(tmp_path):
    from pyterrier_svmmap.experiments.reproduce.base_runs import FolderInUse, folder_lock
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(FolderInUse, match=rf"in use by another svmmap reproduce \(pid {holder.pid}\)"):
            with folder_lock(tmp_path):
                pass
    finally:
        release.set()
        holder.join(30)
    with folder_lock(tmp_path):                     # released when the holder ends
        pass


def test_reproduce_into_a_folder_in_use_exits_2_with_one_line(tmp_path):
    from pyterrier_svmmap.experiments.reproduce.base_runs import folder_lock
    from tests.helpers import _write_collection
    out = tmp_path / "out"
    collection = _write_collection(tmp_path / "collection", n_docs=60, n_topics=8)
    with folder_lock(out):
        proc = subprocess.run([sys.executable, "-c", "import sys; from pyterrier_svmmap.cli import main; "
                               "sys.exit(main(sys.argv[1:]))", "reproduce", "--collection", str(collection), "--train", "3", "--valid", "2",
                               "--out", str(out), "--trials", "1", "--systems", "svm-map"],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (f"svmmap reproduce: error: {out} is in use by another svmmap "
                                                    f"reproduce (pid {__import__('os').getpid()}); wait for it "
                                                    "to finish, or give another --out")


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


def test_python_dash_m_runs_the_command_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pyterrier_svmmap.cli", "learn", str(tmp_path / "missing.txt"),
                           str(tmp_path / "m")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"svmmap learn: error: {tmp_path / 'missing.txt'} not found"]


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


def test_a_reproduce_that_fails_before_writing_creates_no_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "--collection", str(tmp_path / "no-such-collection"), "--out", str(out)]) == 2
    assert "no-such-collection" in capsys.readouterr().err and not out.exists()


def test_get_params_has_every_constructor_parameter_and_rebuilds_the_estimator():
    import inspect
    for cls in (SVMMap, StructSVM):
        model = cls(features="raw", queries_per_shard=7, n_jobs=1, verbose=True)
        params = model.get_params()
        assert set(params) == set(inspect.signature(cls.__init__).parameters) - {"self"}
        assert repr(cls(**params)) == repr(model) and cls(**params).get_params() == params
