"""Every learner saves and loads losslessly (Python, pt.Artifact.load, the CLI), the array-level ranker's
contract (constructor validation, fit returns self, repr, state), and the previous model formats."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pt = pytest.importorskip("pyterrier")
from pyterrier_svmmap import (AdaRank, ApproxAP, ApproxNDCG, LambdaMART, McRank, SVMMap,  # noqa: E402
                              StructSVM, StructSVMRanker)
from pyterrier_svmmap.cli import main  # noqa: E402
from pyterrier_svmmap.io.model_files import ModelFormatError, load_model, load_ranker  # noqa: E402

from tests.helpers import run  # noqa: E402

from tests.data_paths import LETOR_TEST as TEST, LETOR_TRAIN as TRAIN

#: one small configuration of every learner; the structural SVMs cover every loss and its parameters
LEARNERS = {
    "svm-map": lambda: SVMMap(C=[0.1, 10.0], n_bins=5),
    "svm-map-auto": lambda: SVMMap(C=[0.1, 10.0], features="auto", n_bins=4),
    "svm-map-raw-prior": lambda: SVMMap(C=[0.1, 10.0], features="raw", prior="best"),
    "svm-roc": lambda: StructSVM(C=[1.0], loss="roc", features="bins+minmax", n_bins=4),
    "svm-ndcg@5": lambda: StructSVM(C=1.0, loss="ndcg@5", n_bins=4),
    "svm-ndcg-k": lambda: StructSVM(C=1.0, loss="ndcg", loss_params={"k": 3}, features="minmax"),
    "svm-mrr@5": lambda: StructSVM(C=1e-3, loss="mrr@5", features="raw"),
    "svm-dorm": lambda: StructSVM(C=0.1, loss="dorm", loss_params={"k": 3, "window": 6}, features="raw"),
    "svm-combo-separate": lambda: StructSVM(C=1.0, loss="combo", features="raw", loss_params=dict(
        losses=["map", "ndcg@5"], slack="separate", C_weights=[1.0, 0.5])),
    "svm-combo-shared": lambda: StructSVM(C=1.0, loss="combo", features="raw", loss_params=dict(
        losses=["map", "mrr@3"], slack="shared")),
    "svm-acc": lambda: StructSVM(C=[1.0, 10.0], loss="acc", n_bins=4, binning="minmax"),
    "svm-acc2": lambda: StructSVM(C=1.0, loss="acc2", features="raw"),
    "approx-ap": lambda: ApproxAP(alphas=[10.0], betas=[10.0], n_iter=5, learning_rate=0.05),
    "approx-ndcg": lambda: ApproxNDCG(alphas=[10.0, 20.0], n_iter=5, learning_rate=0.05, features="bins", n_bins=4),
    "adarank": lambda: AdaRank(n_rounds=5),
    "lambdamart": lambda: LambdaMART(n_estimators=20),
    "mcrank": lambda: McRank(n_estimators=5),
}


@pytest.fixture(scope="module")
def data():
    train, train_qrels = run(0, n_queries=6, n_cand=25)
    valid, valid_qrels = run(1, n_queries=4, n_cand=25)
    test, _ = run(2, n_queries=4, n_cand=25)
    return train, train_qrels, valid, valid_qrels, test


def _fit(name, data):
    if name in ("lambdamart", "mcrank"):
        pytest.importorskip("lightgbm")
    train, train_qrels, valid, valid_qrels, _ = data
    model = LEARNERS[name]()
    assert model.fit(train, train_qrels, valid, valid_qrels) is model
    return model


def _learned(model) -> dict:
    """Every learned attribute (ending in ``_``) that is plain data, for comparison after a round trip."""
    out = {}
    for k, v in vars(model).items():
        if k.endswith("_") and not k.startswith("_") and isinstance(v, (int, float, str, list, dict, tuple, np.ndarray)):
            out[k] = v
    return out


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return a == b


@pytest.mark.parametrize("name", list(LEARNERS))
def test_save_load_is_lossless(name, data, tmp_path):
    model = _fit(name, data)
    test = data[-1]
    before = model.transform(test)
    model.save(tmp_path / "m")
    assert model.path == tmp_path / "m"
    for again in (type(model).load(tmp_path / "m"), load_model(tmp_path / "m"), pt.Artifact.load(str(tmp_path / "m"))):
        assert type(again) is type(model) and repr(again) == repr(model)
        after = again.transform(test)
        np.testing.assert_array_equal(after["score"].to_numpy(), before["score"].to_numpy())   # bit for bit
        a, b = _learned(model), _learned(again)
        assert a.keys() <= b.keys() | {"ranker_"}, sorted(a.keys() - b.keys())
        differ = [k for k in a if k in b and not _equal(a[k], b[k])]
        assert not differ, differ


@pytest.mark.parametrize("name", ["svm-map", "svm-acc", "svm-combo-separate", "adarank"])
def test_pickle_and_repr_round_trip(name, data):
    model = _fit(name, data)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.transform(data[-1])["score"], model.transform(data[-1])["score"])
    import pyterrier_svmmap
    rebuilt = eval(repr(model), vars(pyterrier_svmmap) | {k: getattr(pyterrier_svmmap, k) for k in dir(pyterrier_svmmap)})
    assert repr(rebuilt) == repr(model) and type(rebuilt) is type(model)


def test_repr_shows_every_parameter_that_changes_the_model():
    base = repr(StructSVM())
    changed = dict(C=[1.0], loss="roc", loss_params=None, features="bins", n_bins=7, binning="minmax",
                   threshold_depth=None, epsilon=1e-2, max_iter=5, prior=None, prior_scale=2.0, cv=3,
                   random_state=1, selection="validation", fallback_alpha=0.1, min_valid_queries=10,
                   average_folds=False)
    for k, v in changed.items():
        if k == "loss_params":
            r = repr(StructSVM(loss="ndcg", loss_params={"k": 3}))
        else:
            r = repr(StructSVM(**{k: v}))
        assert r != base, k
    assert repr(StructSVM(verbose=True)) == base                  # verbosity does not change the model
    assert repr(LambdaMART(n_estimators=3)) != repr(LambdaMART(n_estimators=4))
    assert "learning_rate" in repr(LambdaMART())                  # defaults shown too: hashes stay stable


@pytest.mark.parametrize("kwargs,message", [
    (dict(loss="nope"), "unknown loss"),
    (dict(loss="map@5"), "loss='map@5'"),
    (dict(loss="ndcg", loss_params={"k": 0}), "k must be a positive"),
    (dict(loss="combo"), "needs losses"),
    (dict(loss="combo", loss_params=dict(losses=["map"], slack="nope")), "slack must be"),
    (dict(C=[]), "C must be a positive"),
    (dict(C=[1.0, 1.0]), "duplicate"),
    (dict(C=float("nan")), "C must be a positive"),
    (dict(C="x"), "C must be a positive"),
    (dict(epsilon=0), "epsilon must be"),
    (dict(epsilon=float("nan")), "epsilon must be"),
    (dict(max_iter=0), "max_iter must be"),
    (dict(n_bins=0), "n_bins must be"),
    (dict(n_bins=2.5), "n_bins must be"),
    (dict(features="bins+bins"), r"features must be .* each at most once, got 'bins\+bins'"),
    (dict(binning="nope"), "binning must be one of .*got 'nope'"),
    (dict(prior="worst"), "prior must be"),
    (dict(prior_scale=-1), "prior_scale must be"),
    (dict(cv=1), "cv must be"),
    (dict(random_state="a"), "random_state must be"),
])
def test_fit_validates_what_the_constructor_stored(kwargs, message):
    """scikit-learn's contract: ``__init__`` stores every argument unchanged, ``fit`` (and ``check_params``)
    refuses the one that cannot work, before touching the data."""
    match = message.replace("(", r"\(").replace("[", r"\[")
    for cls, fit_args in ((StructSVM, (None, None)),
                          (StructSVMRanker, (np.zeros((2, 1)), np.array([1.0, 0.0]), np.array([0, 2])))):
        model = cls(**kwargs)
        for k, v in kwargs.items():
            assert getattr(model, k) is v and model.get_params()[k] is v
        with pytest.raises(ValueError, match=match):
            model.check_params()
        with pytest.raises(ValueError, match=match):
            model.fit(*fit_args)


def test_ranker_on_arrays_and_path(data):
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(200, 3))
    labels = (raw[:, 0] + 0.3 * rng.normal(size=200) > 1).astype(float)
    offsets = np.arange(0, 201, 20)
    r = StructSVMRanker(C=[10.0, 0.1, 1.0], features="raw")
    assert r.fit(raw, labels, offsets, valid=(raw, labels, offsets)) is r
    assert [p["C"] for p in r.path_] == [10.0, 0.1, 1.0] and r.coefs_.shape == (3, r.layout_.dim)
    best = int(np.argmax([p["validation"] for p in r.path_]))
    assert r.C_ == r.path_[best]["C"] and np.array_equal(r.coef_, r.coefs_[best])
    for p in r.path_:
        assert p["converged"] and 0 <= p["gap"] <= p["C"] * r.epsilon + 1e-12
    with pytest.raises(ValueError, match="needs at least 11 usable training queries"):
        StructSVMRanker(C=[0.1, 1.0], cv=11).fit(raw, labels, offsets)
    with pytest.raises(ValueError, match="offsets"):
        StructSVMRanker(C=1.0).fit(raw, labels, offsets[:-1])
    with pytest.raises(ValueError, match="infinite"):
        StructSVMRanker(C=1.0).fit(np.where(raw > 2, np.inf, raw), labels, offsets)
    with pytest.raises(ValueError, match="trained on 3 base functions"):
        r.decision_function(raw[:, :2], offsets)


def test_cross_validation_is_k_fold_by_query_with_one_layout_for_all_folds():
    """The documented protocol, rebuilt by hand: folds by query (permutation of the seed, position mod cv),
    the thresholds and scales learned once on all training queries (no labels involved), each fold's path
    trained on its training part's φ, held-out MAP per C (ties broken by the fold's best training function)."""
    from pyterrier_svmmap.features.layout import FeatureLayout
    from pyterrier_svmmap.measures import average_precision
    from pyterrier_svmmap.selection import best_function
    from pyterrier_svmmap.svm.cutting_plane import train_path
    from pyterrier_svmmap.svm.slack import make_slack_groups
    from pyterrier_svmmap.ties import break_ties
    rng = np.random.default_rng(4)
    n_q, n = 9, 30
    raw = rng.normal(size=(n_q * n, 3))
    labels = (raw[:, 0] - raw[:, 2] + rng.normal(size=n_q * n) > 1.5).astype(float)
    offsets = np.arange(0, n_q * n + 1, n)
    grid = [0.1, 10.0]
    r = StructSVMRanker(C=grid, cv=3, random_state=7, n_bins=4).fit(raw, labels, offsets)
    fold = np.empty(n_q, dtype=int)
    fold[np.random.default_rng(7).permutation(n_q)] = np.arange(n_q) % 3
    layout = FeatureLayout.fit(raw, offsets, "bins", 4, threshold_depth=200)       # once, on every training query
    assert np.array_equal(layout.encoder.thresholds_, r.layout_.encoder.thresholds_)
    for k in range(3):
        tr, te = np.repeat(fold != k, n), np.repeat(fold == k, n)
        off_tr = np.arange(0, tr.sum() + 1, n)
        off_te = np.arange(0, te.sum() + 1, n)
        path = train_path(layout.transform(raw[tr], off_tr), labels[tr], off_tr, make_slack_groups("map", 1.0), grid)
        X = layout.transform(raw[te], off_te)
        tie = best_function(raw[tr], labels[tr], off_tr)
        for i, C in enumerate(grid):
            ranked = break_ties(X.dot(path[i].w), off_te, raw[te][:, tie])[0]   # the tie policy
            held_out = average_precision(ranked, labels[te], off_te).mean()
            assert r.path_[i]["cv_scores"][k] == pytest.approx(held_out, abs=1e-12), (k, C)
    # then the whole path on all training queries
    full = StructSVMRanker(C=grid, n_bins=4).fit(raw, labels, offsets, valid=(raw, labels, offsets))
    np.testing.assert_array_equal(r.coefs_, full.coefs_)
    assert np.array_equal(r.coef_, r.coefs_[grid.index(r.C_)])


def test_features_auto_selects_blocks_jointly_with_c():
    """features="auto" = every option of AUTO_FEATURES trained as its own ranker, the best (features, C)
    on the validation queries kept (the first of equals, options in AUTO_FEATURES order)."""
    from pyterrier_svmmap.selection import AUTO_FEATURES
    rng = np.random.default_rng(5)
    raw = rng.normal(size=(400, 3))
    raw[rng.random(raw.shape) < 0.1] = np.nan
    labels = (np.nan_to_num(raw[:, 0]) ** 2 + 0.3 * rng.normal(size=400) > 1.2).astype(float)   # non-linear in f0
    offsets = np.arange(0, 401, 40)
    tr, va = slice(0, 240), slice(240, 400)
    off_tr, off_va = np.arange(0, 241, 40), np.arange(0, 161, 40)
    grid = [0.1, 10.0]
    auto = StructSVMRanker(C=grid, features="auto", n_bins=5).fit(raw[tr], labels[tr], off_tr,
                                                                  valid=(raw[va], labels[va], off_va))
    assert [p["features"] for p in auto.path_] == [f for f in AUTO_FEATURES for _ in grid]
    each = {f: StructSVMRanker(C=grid, features=f, n_bins=5).fit(raw[tr], labels[tr], off_tr,
                                                                 valid=(raw[va], labels[va], off_va))
            for f in AUTO_FEATURES}
    assert [p["validation"] for p in auto.path_] == [p["validation"] for f in AUTO_FEATURES for p in each[f].path_]
    best = max(auto.path_, key=lambda p: p["validation"])
    assert (auto.features_, auto.C_) == (best["features"], best["C"])
    np.testing.assert_array_equal(auto.coef_, each[auto.features_].coefs_[grid.index(auto.C_)])
    assert auto.layout_.blocks == tuple(auto.features_.split("+"))
    assert auto.validation_ == each[auto.features_].validation_
    with pytest.raises(ValueError, match="features must be 'auto' or"):
        StructSVMRanker(features="autoo").check_params()


def _write_v2_model(model, path: Path) -> None:
    """A model directory as format 2 wrote it (the previous release), from a fitted StructSVM."""
    import io
    import hashlib
    path.mkdir()
    buf = io.BytesIO()
    th = model.encoder_.thresholds_ if model.encoder_.thresholds_ is not None else np.zeros((0, 0))
    np.savez(buf, coef=model.coef_, thresholds=th)
    (path / "weights.npz").write_bytes(buf.getvalue())
    meta = dict(format="pyterrier-svmmap", format_version=2, package_version="0.1.0", estimator=type(model).__name__,
                params=dict(C=model.C_, loss=model.loss, loss_params=model.loss_params, features=model.features,
                            n_bins=model.n_bins, binning=model.binning, epsilon=model.epsilon, max_iter=model.max_iter,
                            threshold_depth=model.threshold_depth, prior=model.prior, prior_scale=model.prior_scale),
                base_names=model.base_names_, n_functions=model.n_functions_, dim=len(model.coef_),
                validation={str(k): v for k, v in model.validation_.items()},
                training=dict(n_iter=model.n_iter_, converged=model.converged_, final=model.history_[-1]),
                weights_sha256=hashlib.sha256(buf.getvalue()).hexdigest())
    (path / "model.json").write_text(json.dumps(meta))


#: models the previous release could make (its raw block scaled nothing)
V2_LEARNERS = {"svm-map": lambda: SVMMap(C=[0.1, 10.0], features="raw", n_bins=5, normalise=None),
               "svm-acc": lambda: StructSVM(C=[1.0, 10.0], loss="acc", features="raw", n_bins=4, binning="minmax",
                                            normalise=None)}


@pytest.mark.parametrize("name", sorted(V2_LEARNERS))
def test_previous_format_still_loads(name, data, tmp_path):
    train, train_qrels, valid, valid_qrels, _ = data
    model = V2_LEARNERS[name]().fit(train, train_qrels, valid, valid_qrels)
    _write_v2_model(model, tmp_path / "v2")
    again = load_model(tmp_path / "v2")
    assert type(again) is type(model) and again.C_ == model.C_ and again.validation_ == model.validation_
    np.testing.assert_array_equal(again.transform(data[-1])["score"], model.transform(data[-1])["score"])
    assert again.feature_names_ == model.feature_names_          # the acc bias is back (format 2 lost it)


def test_cli_acc_model_classifies(tmp_path, capsys):
    """Issue: ``svmmap learn --loss acc`` then ``svmmap classify`` exited 2 with a width mismatch."""
    assert main(["learn", "--loss", "acc", "-c", "10", str(TRAIN), str(tmp_path / "m")]) == 0
    assert main(["classify", str(TEST), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    py = load_model(tmp_path / "m")
    from pyterrier_svmmap.io.svmlight import read_svmlight
    d = read_svmlight(TEST)
    expected = d.ungroup(py.decision_function(d.grouped(d.features), d.offsets))
    got = np.array([float(x) for x in (tmp_path / "p").read_text().split()])
    np.testing.assert_array_equal(got, expected)                   # full precision: bit for bit
    assert py.feature_names_[-1] == "bias"


@pytest.mark.parametrize("argv,message", [
    (["learn", "--loss", "map@5", str(TRAIN), "M"], "loss='map@5'"),
    (["learn", "--bins", "0", str(TRAIN), "M"], "n_bins must be"),
    (["learn", "--max-iter", "0", str(TRAIN), "M"], "max_iter must be"),
    (["learn", "-e", "nan", str(TRAIN), "M"], "epsilon must be"),
    (["learn", str(TRAIN), "FILE"], "is an existing file"),
])
def test_cli_learn_rejects_before_training(tmp_path, capsys, argv, message):
    (tmp_path / "FILE").write_text("x")
    argv = [str(tmp_path / a) if a in ("M", "FILE") else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_classify_does_not_import_pyterrier(tmp_path):
    assert main(["learn", "--bins", "3", str(TRAIN), str(tmp_path / "m")]) == 0
    code = ("import sys; from pyterrier_svmmap.cli import main; "
            f"assert main(['classify', {str(TEST)!r}, {str(tmp_path / 'm')!r}, {str(tmp_path / 'p')!r}]) == 0; "
            "print(sorted(m for m in ('pyterrier', 'pyterrier_svmmap.estimators.base', 'pyterrier_svmmap.frames') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    ranker = load_ranker(tmp_path / "m")
    assert isinstance(ranker, StructSVMRanker)


def test_model_file_names_a_foreign_class_fails(data, tmp_path):
    _fit("svm-map", data).save(tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    doc["estimator"] = "os:system"
    (tmp_path / "m" / "model.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="not a pyterrier_svmmap class"):
        load_model(tmp_path / "m")


def test_plot_leaves_the_users_matplotlib_backend_alone(data, tmp_path):
    """Issue: model.plot() switched the user's backend (matplotlib.use("Agg") at import)."""
    matplotlib = pytest.importorskip("matplotlib")
    code = ("import matplotlib; matplotlib.use('svg'); from pyterrier_svmmap import plot; "
            "import numpy as np; print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "svg"
    model = _fit("svm-map", data)
    before = matplotlib.get_backend()
    model.plot(path=tmp_path / "p.png")
    assert matplotlib.get_backend() == before and (tmp_path / "p.png").stat().st_size > 0


@pytest.mark.parametrize("drop", ["n_bins", "features", "loss"])
def test_format_2_file_missing_a_parameter_is_a_format_error(data, tmp_path, drop):
    """Issue: model.json without params.n_bins ended in a KeyError traceback."""
    model = _fit("svm-map", data)
    _write_v2_model(model, tmp_path / "v2")
    doc = json.loads((tmp_path / "v2" / "model.json").read_text())
    del doc["params"][drop]
    (tmp_path / "v2" / "model.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=f"incomplete: missing .*{drop}"):
        load_model(tmp_path / "v2")
