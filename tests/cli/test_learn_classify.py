"""svmlight reader, `svmmap learn/classify`, the model format, pt.Artifact and input validation."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pyterrier as pt

from pyterrier_svmmap import SVMMap, StructSVM
from pyterrier_svmmap.cli import main
from pyterrier_svmmap.io.model_files import FORMAT_VERSION, ModelFormatError, load_artifact, load_model
from pyterrier_svmmap.io.svmlight import SvmlightError, read_svmlight

from tests.data_paths import LETOR_TEST as TEST, LETOR_TRAIN as TRAIN


def write(tmp_path, text, name="f.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- reader
def test_reader_matches_line_by_line_parse(tmp_path):
    p = write(tmp_path, "# header\n2 qid:5 1:0.5 3:-1e-3 # docid = A b\n\n0 qid:2 2:7 #docid = B\n"
                        "1\tqid:5 1:1.5 2:2\r\n0 qid:2\n")
    d = read_svmlight(p)
    assert d.features.tolist() == [[0.5, 0, -1e-3], [0, 7, 0], [1.5, 2, 0], [0, 0, 0]]   # absent = 0
    assert d.labels.tolist() == [2, 0, 1, 0] and d.qids.tolist() == [5, 2, 5, 2]
    assert d.docids.tolist() == ["A", "B", "3", "4"]
    assert d.query_ids.tolist() == [5, 2] and d.offsets.tolist() == [0, 2, 4]
    assert d.order.tolist() == [0, 2, 1, 3]
    assert d.ungroup(d.grouped(np.arange(4))).tolist() == [0, 1, 2, 3]


def test_reader_agrees_with_sklearn_on_example():
    sk = pytest.importorskip("sklearn.datasets")
    X, y, q = sk.load_svmlight_file(str(TRAIN), query_id=True, zero_based=False)
    d = read_svmlight(TRAIN)
    assert np.array_equal(X.toarray(), d.features) and np.array_equal(y, d.labels) and np.array_equal(q, d.qids)


def test_index_file(tmp_path):
    shutil.copy(TRAIN, tmp_path / "a.txt")
    shutil.copy(TEST, tmp_path / "b.txt")
    idx = write(tmp_path, "# files\na.txt\nb.txt\n", "index")
    d = read_svmlight(idx)
    assert d.n_lines == read_svmlight(TRAIN).n_lines + read_svmlight(TEST).n_lines


@pytest.mark.parametrize("text,expected", [
    ("1 qid:1 1:0.5\nx qid:1 1:2\n", ":2: expected a numeric label"),
    ("1 qid:1 1:0.5\n1 1:2\n", ":2: expected 'qid:<integer>'"),
    ("1 qid:1 1:0.5\n1 qid:a 1:2\n", ":2: expected an integer query id"),
    ("1 qid:1 2:0.5 1:3\n", ":1: feature index 1 after 2"),
    ("1 qid:1 1:0.5 1:3\n", ":1: feature index 1 after 1"),
    ("1 qid:1 0:0.5\n", ":1: feature index 0: indices start at 1"),
    ("1 qid:1 1:nan\n", ":1: feature 1 is nan"),
    ("1 qid:1 1:inf\n", ":1: feature 1 is inf"),
    ("1 qid:1 1:0.5 2\n", ":1: expected 'index:value'"),
    ("1 qid:1 1:abc\n", ":1: expected 'index:value'"),
    ("1 qid:1 1:0.5\n0 qid:1 1:1_0\n", ":2: expected 'index:value' pairs, found '1:1_0'"),   # Python's float
    ("1 qid:1 1_0:0.5\n", ":1: expected 'index:value' pairs, found '1_0:0.5'"),               # and int take '_'
    ("1_0 qid:1 1:0.5\n", ":1: expected a numeric label first, found '1_0'"),
    ("1 qid:1_0 1:0.5\n", ":1: expected an integer query id, found 'qid:1_0'"),
    ("1 qid:1 1:0x10\n", ":1: expected 'index:value' pairs, found '1:0x10'"),                 # C strtod takes hex
    ("# only a comment\n\n", "no data lines"),
])
def test_reader_errors_name_the_line(tmp_path, text, expected):
    p = write(tmp_path, text)
    with pytest.raises(SvmlightError) as e:
        read_svmlight(p)
    assert expected in str(e.value) and str(p) in str(e.value)


def test_reader_width_check(tmp_path):
    p = write(tmp_path, "1 qid:1 1:0.5 7:1\n")
    with pytest.raises(SvmlightError, match="feature index 7 but the model has 5"):
        read_svmlight(p, n_features=5)
    assert read_svmlight(write(tmp_path, "1 qid:1 1:0.5\n", "g"), n_features=5).features.shape == (1, 5)


# ---------------------------------------------------------------- CLI
def test_learn_classify_roundtrip(tmp_path, capsys):
    model, pred = tmp_path / "model", tmp_path / "pred.txt"
    assert main(["learn", "-c", "10", str(TRAIN), str(model)]) == 0
    assert main(["classify", str(TEST), str(model), str(pred)]) == 0
    scores = np.loadtxt(pred)
    d = read_svmlight(TEST)
    assert len(scores) == d.n_lines
    m = SVMMap.load(model)                          # the same model in Python
    assert np.allclose(scores, d.ungroup(m.decision_function(d.grouped(d.features), d.offsets)))
    meta = json.loads((model / "model.json").read_text())
    assert meta["params"]["C"] == 10 and meta["params"]["features"] == "raw"
    assert meta["state"]["layout"]["n_functions"] == 5 and meta["state"]["layout"]["base_names"][0] == "f1"
    assert meta["state"]["converged"] and 0 <= meta["state"]["history"][-1]["gap"] <= 10 * 1e-3 + 1e-12
    assert meta["estimator"] == "pyterrier_svmmap.estimator:SVMMap" and meta["state"]["params"]["C"] == [10.0]
    # the learned ranking is better than chance on the held-out queries
    rel = d.labels > 0
    assert scores[rel].mean() > scores[~rel].mean()


def test_learn_bins_and_loss(tmp_path):
    assert main(["learn", "--bins", "4", "--loss", "ndcg@5", str(TRAIN), str(tmp_path / "m")]) == 0
    m = load_model(tmp_path / "m")
    assert isinstance(m, StructSVM) and m.encoder_.thresholds_.shape == (5, 4) and m.loss == "ndcg@5"
    assert m.ranker_.slack_groups(1.0)[0].loss.k == 5 and repr(m).startswith("StructSVM(C=1.0, loss='ndcg@5'")


@pytest.mark.parametrize("argv,expected", [
    (["learn", "/nonexistent/file", "M"], "not found"),
    (["learn", "-c", "-1", str(TRAIN), "M"], "C must be a positive"),
    (["learn", "--loss", "nope", str(TRAIN), "M"], "unknown loss"),
    (["classify", str(TEST), "/nonexistent/model", "P"], "not found"),
])
def test_cli_errors_exit_2_one_line(tmp_path, capsys, argv, expected):
    argv = [a if a not in ("M", "P") else str(tmp_path / a) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "Traceback" not in err[0]


def test_cli_bad_line_and_debug(tmp_path, capsys):
    p = write(tmp_path, "1 qid:1 1:0.5\n0 qid:1 1:zz\n")
    assert main(["learn", str(p), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{p}:2: expected 'index:value'" in err and len(err.splitlines()) == 1
    with pytest.raises(ValueError):
        main(["--debug", "learn", str(p), str(tmp_path / "m")])


def test_cli_query_without_relevant_is_skipped(tmp_path, capsys, caplog):
    text = TRAIN.read_text() + "0 qid:99 1:0.5\n0 qid:99 1:0.7\n"
    p = write(tmp_path, text)
    with caplog.at_level("WARNING"):
        assert main(["learn", str(p), str(tmp_path / "m")]) == 0
    assert "skipping 1 of 13 training queries" in caplog.text
    assert json.loads((tmp_path / "m" / "model.json").read_text())["state"]["training"]["skipped_queries"] == 1
    none = write(tmp_path, "0 qid:1 1:0.5\n0 qid:1 1:0.6\n", "none.txt")
    assert main(["learn", str(none), str(tmp_path / "m2")]) == 2
    assert "no training query has both" in capsys.readouterr().err


def test_classify_wider_file_fails(tmp_path, capsys):
    assert main(["learn", str(TRAIN), str(tmp_path / "m")]) == 0
    p = write(tmp_path, "1 qid:1 1:0.5 9:1\n")
    assert main(["classify", str(p), str(tmp_path / "m"), str(tmp_path / "p")]) == 2
    assert "feature index 9 but the model has 5" in capsys.readouterr().err


# ---------------------------------------------------------------- model format
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("m") / "model"
    assert main(["learn", str(TRAIN), str(d)]) == 0
    return d


def _copy(trained, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(trained, d)
    return d


def test_newer_format_version_fails(trained, tmp_path):
    d = _copy(trained, tmp_path)
    meta = json.loads((d / "model.json").read_text())
    meta["format_version"] = FORMAT_VERSION + 1
    (d / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match=f"format version {FORMAT_VERSION + 1}, newer"):
        load_model(d)


def test_truncated_files_fail(trained, tmp_path):
    d = _copy(trained, tmp_path)
    w = (d / "weights.npz").read_bytes()
    (d / "weights.npz").write_bytes(w[: len(w) // 2])
    with pytest.raises(ModelFormatError, match="weights.npz is corrupt or truncated"):
        load_model(d)
    d2 = tmp_path / "c2"
    shutil.copytree(trained, d2)
    j = (d2 / "model.json").read_text()
    (d2 / "model.json").write_text(j[: len(j) // 2])
    with pytest.raises(ModelFormatError, match="model.json is corrupt or truncated"):
        load_model(d2)


def test_npz_without_checksum_still_checked(trained, tmp_path):
    d = _copy(trained, tmp_path)
    meta = json.loads((d / "model.json").read_text())
    del meta["arrays_sha256"]
    (d / "model.json").write_text(json.dumps(meta))
    with np.load(d / "weights.npz") as npz:
        arrays = dict(npz)
    np.savez(d / "weights.npz", **dict(arrays, coef=arrays["coef"][:-1]))
    with pytest.raises(ModelFormatError, match=r"weights.npz: coef: has shape \(9,\) but the feature layout has 10"):
        load_model(d)


def test_not_a_model(tmp_path):
    with pytest.raises(ModelFormatError, match="no model.json"):
        load_model(tmp_path)


def test_width_mismatch_in_python(trained):
    m = load_model(trained)
    frame = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "features": [np.ones(3), np.zeros(3)]})
    with pytest.raises(ValueError, match="trained with 5 features per row but these rows have 3"):
        m.transform(frame)


# ---------------------------------------------------------------- pt.Artifact
def test_artifact_loader_and_package(trained, tmp_path):
    m = load_artifact(trained)                      # the function registered as learned_ranker.svmmap
    assert isinstance(m, pt.Artifact) and isinstance(m, SVMMap) and Path(m.path) == trained
    meta = json.loads((trained / "pt_meta.json").read_text())
    assert (meta["type"], meta["format"]) == ("learned_ranker", "svmmap")
    assert pt.inspect.artifact_type_format(m) == ("learned_ranker", "svmmap")
    pkg = m.build_package(str(tmp_path / "pkg.tar.lz4"), verbose=False)
    assert Path(pkg).exists() and Path(pkg).stat().st_size > 0


def test_artifact_load_through_entry_point(trained):
    """pt.Artifact.load needs the entry point, i.e. the package installed (pip install -e .)."""
    eps = [ep for ep in pt.utils.entry_points("pyterrier.artifact") if ep.name == "learned_ranker.svmmap"]
    if not eps:
        pytest.skip("pyterrier-svmmap is not installed: the pyterrier.artifact entry point is absent")
    m = pt.Artifact.load(str(trained))
    assert isinstance(m, SVMMap)


# ---------------------------------------------------------------- Python-side validation
def _frames(n_q=4, n_d=6, F=2, seed=0):
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_q):
        for d in range(n_d):
            rel = int(d < 2)
            rows.append(dict(qid=f"q{q}", docno=f"d{d}", features=rng.random(F) + rel))
            qrels.append(dict(qid=f"q{q}", docno=f"d{d}", label=rel))
    return pd.DataFrame(rows), pd.DataFrame(qrels)


def test_frame_validation():
    res, qrels = _frames()
    m = SVMMap(C=1.0, n_bins=3)
    with pytest.raises(RuntimeError, match="not fitted"):
        m.transform(res)
    with pytest.raises(Exception, match="features"):
        m.fit(res.drop(columns="features"), qrels)
    with pytest.raises(Exception, match="docno"):
        m.fit(res.drop(columns="docno"), qrels)
    with pytest.raises(ValueError, match="duplicate"):
        m.fit(pd.concat([res, res.iloc[:1]]), qrels)
    bad = res.copy()
    bad["features"] = [np.array([np.inf, 0.0])] + list(bad["features"][1:])
    with pytest.raises(ValueError, match="infinite"):
        m.fit(bad, qrels)
    with pytest.raises(ValueError, match="lack column"):
        m.fit(res, qrels.rename(columns={"label": "relevance"}))
    with pytest.raises(ValueError, match="must be numeric"):
        m.fit(res, qrels.assign(label="yes"))
    nan_score = res.assign(score=1.0)
    nan_score.loc[3, "score"] = np.nan
    with pytest.raises(ValueError, match="column 'score' is nan"):
        m.fit(nan_score, qrels)
    # NaN features are legitimate (a base run missed the document)
    ok = res.copy()
    ok["features"] = [np.array([np.nan, 0.5])] + list(ok["features"][1:])
    m.fit(ok, qrels)
    out = m.transform(res.iloc[:0])
    assert len(out) == 0 and "score" in out.columns
    with pytest.warns(UserWarning, match="have no qrels"):
        m.fit(res, qrels[qrels.qid != "q0"])


# ---------------------------------------------------------------- svm_struct compatibility, grids, help
def test_cli_version_and_no_abbreviations(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and "pyterrier-svmmap" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:                 # --b must not silently mean --bins
        main(["learn", "--b", "3", str(TRAIN), "M"])
    assert e.value.code == 2


def test_cli_svm_struct_options(tmp_path, caplog):
    with caplog.at_level("WARNING"):
        assert main(["learn", "-w", "3", "-m", "100", "-#", "7", "-v", "1", "-y", "0", str(TRAIN), str(tmp_path / "m")]) == 0
    assert "ignored svm_struct options: -w 3" in caplog.text and "-m 100" in caplog.text
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["params"]["max_iter"] == 7 and meta["state"]["n_iter"] <= 7


@pytest.mark.parametrize("argv,message", [
    (["-o", "1"], "slack rescaling) is not implemented"),
    (["-p", "2"], "squared slacks) is not implemented"),
    (["-c", "1,x"], "argument -c: expected a number, comma-separated numbers or auto"),
])
def test_cli_unsupported_svm_struct_options_refused(tmp_path, capsys, argv, message):
    try:
        code = main(["learn", *argv, str(TRAIN), str(tmp_path / "m")])
    except SystemExit as e:                               # argparse's own errors
        code = e.code
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_cli_c_grid_with_validation_file_and_cv(tmp_path):
    assert main(["learn", "-c", "0.01,100", "--valid", str(TEST), str(TRAIN), str(tmp_path / "v")]) == 0
    m = load_model(tmp_path / "v")
    assert m.selection_ == "validation" and set(m.validation_) == {0.01, 100.0}
    assert m.C_ == max(m.validation_, key=m.validation_.get) and m.coefs_.shape[0] == 2
    assert main(["learn", "-c", "0.01,100", "--cv", "3", "--features", "auto", str(TRAIN), str(tmp_path / "c")]) == 0
    m = load_model(tmp_path / "c")
    assert m.selection_ == "cv" and m.features_ in ("bins", "raw", "bins+raw") and len(m.path_) == 6
    assert all(len(p["cv_scores"]) == 3 for p in m.path_)


def test_cli_help_is_plain_text(capsys):
    for command in ("learn", "classify", "reproduce"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert "``" not in out and ":mod:" not in out and ":class:" not in out, command
