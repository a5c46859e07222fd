"""Model directories: written whole with the umask's permissions, refused in a folder of other files without
``overwrite=True``, and checked whole when loaded — each edit of a saved model below fails on loading with
the file and the field named."""
from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap import AdaRank, SVMMap
from pyterrier_svmmap.cli import main
from pyterrier_svmmap.io.model_files import ModelFormatError, load_model, load_ranker



@pytest.fixture(scope="module")
def saved(tmp_path_factory, letor_example_files):
    """A model of 5 base functions with bins (4 per function) and a grid of C, written by svmmap learn."""
    path = tmp_path_factory.mktemp("saved") / "model"
    assert main(["learn", "-c", "1,10", "--cv", "2", "--bins", "4", str(letor_example_files.train), str(path)]) == 0
    return path


def _doc(change):
    def edit(doc, arrays):
        change(doc)
    return edit


def _arrays(change):
    def edit(doc, arrays):
        change(arrays)
        doc.pop("arrays_sha256")                            # else the checksum, not the check, would refuse
    return edit


EDITS = [
    ("params-features", _doc(lambda d: d["params"].update(features="raw")),
     "model.json: params.features is 'raw' but state.params.features is 'bins'"),
    ("params-n-bins", _doc(lambda d: d["params"].update(n_bins=9)),
     "model.json: params.n_bins is 9 but state.params.n_bins is 4"),
    ("params-C", _doc(lambda d: d["params"].update(C=[1.0, 100.0])),
     "model.json: params.C is [1.0, 100.0] but state.params.C is [1.0, 10.0]"),
    ("params-selection", _doc(lambda d: d["params"].update(selection="auto")),
     "model.json: params.selection is 'auto' but state.params.selection is 'validation'"),
    ("state-params-n-bins", _doc(lambda d: (d["params"].update(n_bins=9), d["state"]["params"].update(n_bins=9))),
     "model.json: state.layout.n_bins: is 4 but params.n_bins is 9"),
    ("state-params-features", _doc(lambda d: (d["params"].update(features="raw"),
                                              d["state"]["params"].update(features="raw"))),
     "model.json: state.layout.features: is 'bins' but params.features is 'raw'"),
    ("state-params-loss", _doc(lambda d: (d["params"].update(loss="acc"), d["state"]["params"].update(loss="acc"))),
     # the estimator refuses the parameter SVMMap fixes; the array-level ranker (svmmap classify) the layout
     dict(estimator="model.json: params: SVMMap takes no parameter 'loss' (= 'acc')",
          ranker="model.json: state.layout.bias: is False: the layout lacks a bias, which params.loss='acc' needs")),
    ("state-params-bad", _doc(lambda d: (d["params"].update(epsilon=-1), d["state"]["params"].update(epsilon=-1))),
     "model.json: *params: *epsilon must be a finite positive number, got -1"),
    ("tie-function-99", _doc(lambda d: d["state"].update(tie_function=99)),
     "model.json: state.tie_function: is 99, not the index of one of the 5 base functions (0 to 4)"),
    ("tie-function-negative", _doc(lambda d: d["state"].update(tie_function=-1)),
     "model.json: state.tie_function: is -1"),
    ("tie-function-text", _doc(lambda d: d["state"].update(tie_function="0")),
     "model.json: state.tie_function: is '0'"),
    ("n-functions", _doc(lambda d: d["state"]["layout"].update(n_functions=6)),
     "model.json: state.layout.base_names: must list a name for each of the layout.n_functions = 6 base functions"),
    ("base-names", _doc(lambda d: d["state"]["layout"]["base_names"].pop()),
     "model.json: state.layout.base_names: must list a name for each of the layout.n_functions = 5"),
    ("features", _doc(lambda d: d["state"].update(features="raw")),
     "model.json: state.features: is 'raw' but the layout's blocks are 'bins'"),
    ("C-not-in-grid", _doc(lambda d: d["state"].update(C_=3.0)),
     "model.json: state.C_: is 3.0, not a C of params.C = [1.0, 10.0]"),
    ("prior-function", _doc(lambda d: d["state"].update(prior_function="f9")),
     "model.json: state.prior_function: is 'f9', not one of the base functions"),
    ("selection", _doc(lambda d: d["state"].update(selection="best")),
     "model.json: state.selection: is 'best', not one of"),
    ("n-iter", _doc(lambda d: d["state"].update(n_iter=-2)),
     "model.json: state.n_iter: must be a non-negative integer"),
    ("missing-C", _doc(lambda d: d["state"].pop("C_")), "model.json: state.C_: is missing"),
    ("thresholds-shape", _arrays(lambda a: a.update(thresholds=a["thresholds"][:, :3])),
     "weights.npz: thresholds: has shape (5, 3), but layout.n_functions = 5 and params.n_bins = 4 make it (5, 4)"),
    ("thresholds-order", _arrays(lambda a: a.update(thresholds=a["thresholds"][:, ::-1])),
     "weights.npz: thresholds: must ascend per base function"),
    ("coef-text", _arrays(lambda a: a.update(coef=a["coef"].astype(str))),
     "weights.npz: coef: holds <U"),
    ("coef-shape", _arrays(lambda a: a.update(coef=a["coef"][:-1])),
     "weights.npz: coef: has shape (19,) but the feature layout has 20 dimensions"),
    ("coef-nan", _arrays(lambda a: a.update(coef=np.full_like(a["coef"], np.nan))),
     "weights.npz: coef: holds NaN or infinite weights"),
    ("coefs-shape", _arrays(lambda a: a.update(coefs=a["coefs"][:, :-1])),
     "weights.npz: coefs: has shape (2, 19) but the feature layout has 20 dimensions"),
]


@pytest.mark.parametrize("edit,message", [e[1:] for e in EDITS], ids=[e[0] for e in EDITS])
def test_an_edited_model_is_refused_naming_the_file_and_the_field(saved, tmp_path, edit, message):
    path = tmp_path / "model"
    shutil.copytree(saved, path)
    doc = json.loads((path / "model.json").read_text())
    with np.load(path / "weights.npz") as npz:
        arrays = dict(npz)
    edit(doc, arrays)
    (path / "model.json").write_text(json.dumps(doc))
    np.savez(path / "weights.npz", **arrays)
    for load in (load_model, load_ranker, SVMMap.load):
        with pytest.raises(ModelFormatError) as e:
            load(path)
        expected = message if isinstance(message, str) else message["ranker" if load is load_ranker else "estimator"]
        pattern = re.escape(f"{path}/") + ".*".join(map(re.escape, expected.split("*")))
        assert re.search(pattern, str(e.value)), (load, str(e.value))


def test_the_unedited_model_loads(saved):
    assert load_ranker(saved).tie_function_ in range(5) and repr(load_model(saved)).startswith("SVMMap(C=[1.0, 10.0]")


def _frames(n_q=6, n_d=8):
    rng = np.random.default_rng(0)
    rows, qrels = [], []
    for q in range(n_q):
        for d in range(n_d):
            rows.append(dict(qid=f"q{q}", docno=f"d{d}", features=rng.random(2) + (d < 2)))
            qrels.append(dict(qid=f"q{q}", docno=f"d{d}", label=int(d < 2)))
    return pd.DataFrame(rows), pd.DataFrame(qrels)


@pytest.fixture(scope="module")
def fitted():
    res, qrels = _frames()
    return SVMMap(C=1.0, features="raw").fit(res, qrels), AdaRank(n_rounds=2).fit(res, qrels)


def test_an_edited_tie_function_is_refused_for_every_learner(fitted, tmp_path):
    for model in fitted:
        path = tmp_path / type(model).__name__
        model.save(path)
        doc = json.loads((path / "model.json").read_text())
        doc["state"]["tie_function"] = 7
        (path / "model.json").write_text(json.dumps(doc))
        with pytest.raises(ModelFormatError, match=r"model.json: state.tie_function: is 7, not the index of one of "
                                                   r"the 2 base functions"):
            load_model(path)


@pytest.mark.parametrize("umask,files,folder", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700), (0o002, 0o664, 0o775)])
def test_model_files_honour_the_umask(fitted, tmp_path, umask, files, folder, letor_example_files):
    old = os.umask(umask)
    try:
        fitted[0].save(tmp_path / "new" / "m")                 # a new folder
        (tmp_path / "empty").mkdir(mode=0o777)
        fitted[0].save(tmp_path / "empty")                     # an existing one
        assert main(["learn", str(letor_example_files.train), str(tmp_path / "cli")]) == 0
    finally:
        os.umask(old)
    for d in (tmp_path / "new" / "m", tmp_path / "empty", tmp_path / "cli"):
        assert {p.name: p.stat().st_mode & 0o777 for p in d.iterdir()} == dict.fromkeys(
            ["model.json", "weights.npz", "pt_meta.json"], files), d
    assert (tmp_path / "new" / "m").stat().st_mode & 0o777 == folder
    assert (tmp_path / "new").stat().st_mode & 0o777 == folder


def test_save_refuses_a_folder_of_other_files_unless_overwrite(fitted, tmp_path):
    model = fitted[0]
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="holds other files but no model; give a new directory, an existing "
                                              "model directory to replace, or overwrite=True to write into it"):
        model.save(other)
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]
    model.save(other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine" and load_model(other).C_ == model.C_
    model.save(other)                                        # now a model directory: replaced without overwrite
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="is an existing file"):
        model.save(tmp_path / "file", overwrite=True)


def test_an_interrupted_save_leaves_no_folder_and_an_interrupted_replace_the_old_model(fitted, tmp_path, monkeypatch):
    import pyterrier_svmmap.io.atomic as atomic
    model = fitted[0]
    real = atomic._write_new
    calls = []

    def interrupted_on_second(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(path, data)
    monkeypatch.setattr(atomic, "_write_new", interrupted_on_second)
    with pytest.raises(KeyboardInterrupt):
        model.save(tmp_path / "a" / "b" / "m")
    assert list(tmp_path.iterdir()) == []                        # nor the parents it made
    monkeypatch.setattr(atomic, "_write_new", real)
    model.save(tmp_path / "m")
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    calls.clear()
    monkeypatch.setattr(atomic, "_write_new", interrupted_on_second)
    with pytest.raises(KeyboardInterrupt):
        fitted[1].save(tmp_path / "m")
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before


def test_ctrl_c_during_the_renames_takes_effect_after_them(tmp_path):
    import signal
    from pyterrier_svmmap.io.atomic import interrupts_deferred
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("after the signal")
    assert done == ["after the signal"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
