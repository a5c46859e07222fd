"""One contract, checked over every learner (as scikit-learn's ``check_estimator``): fit returns self and
sets only ``_``-suffixed attributes, transform before fit says "not fitted", fit without validation data,
an empty frame, row-order invariance (training and transform), pickle / save-load / repr round trips, and a
clear message for each kind of bad input.

Every learner runs in a small, fast configuration; the structural SVMs cover every loss.
"""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

pt = pytest.importorskip("pyterrier")
import pyterrier_svmmap  # noqa: E402
from pyterrier_svmmap import (AdaRank, ApproxAP, ApproxNDCG, LambdaMART, McRank, StructSVM,  # noqa: E402
                              SVMMap)

from tests.helpers import run  # noqa: E402

#: one small configuration per learner; a C grid (SVMMap, acc) chooses C by cross-validation without
#: validation data
LEARNERS = {
    "svm-map": lambda: SVMMap(C=[0.1, 10.0], n_bins=5, cv=2),
    "svm-roc": lambda: StructSVM(C=[1.0], loss="roc", n_bins=4),
    "svm-ndcg@5": lambda: StructSVM(C=1.0, loss="ndcg@5", n_bins=4),
    "svm-ndcg": lambda: StructSVM(C=1.0, loss="ndcg", features="minmax"),
    "svm-mrr@5": lambda: StructSVM(C=1.0, loss="mrr@5", features="raw"),
    "svm-dorm": lambda: StructSVM(C=0.1, loss="dorm", loss_params={"k": 3, "window": 6}, features="raw"),
    "svm-combo": lambda: StructSVM(C=1.0, loss="combo", features="raw",
                                   loss_params=dict(losses=["map", "ndcg@5"], slack="separate")),
    "svm-acc": lambda: StructSVM(C=[1.0, 10.0], loss="acc", n_bins=4, cv=2),
    "svm-acc2": lambda: StructSVM(C=1.0, loss="acc2", features="raw"),
    "approx-ap": lambda: ApproxAP(alphas=[10.0], betas=[10.0], n_iter=5, learning_rate=0.05),
    "approx-ndcg": lambda: ApproxNDCG(alphas=[10.0], n_iter=5, learning_rate=0.05, features="bins", n_bins=4),
    "adarank": lambda: AdaRank(n_rounds=5),
    "lambdamart": lambda: LambdaMART(n_estimators=10, params={"num_threads": 1}),   # one thread: no OpenMP
    "mcrank": lambda: McRank(n_estimators=5, params={"num_threads": 1}),           # spinning on a busy machine
}
NAMES = list(LEARNERS)


def make(name):
    if name in ("lambdamart", "mcrank"):
        pytest.importorskip("lightgbm")
    return LEARNERS[name]()


@pytest.fixture(scope="module")
def data():
    train, train_qrels = run(0, n_queries=6, n_cand=20)
    valid, valid_qrels = run(1, n_queries=4, n_cand=20)
    test, _ = run(2, n_queries=4, n_cand=20)
    return train, train_qrels, valid, valid_qrels, test


_FITTED: dict = {}


def fitted(name, data):
    """The learner trained with validation data (once per module)."""
    if name not in _FITTED:
        train, train_qrels, valid, valid_qrels, _ = data
        _FITTED[name] = make(name).fit(train, train_qrels, valid, valid_qrels)
    return _FITTED[name]


def scores(model, res) -> pd.Series:
    """The model's score of every (qid, docno) of ``res``, indexed by (qid, docno), sorted."""
    out = model.transform(res)
    return out.set_index(["qid", "docno"])["score"].sort_index()


def public(model) -> dict:
    return {k: v for k, v in vars(model).items() if not k.startswith("_")}


# ---------------------------------------------------------------- fit
@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_and_sets_only_learned_attributes(name, data):
    train, train_qrels, valid, valid_qrels, test = data
    model = make(name)
    before = public(model)
    assert not [k for k in before if k.endswith("_")], "a learned attribute before fit"
    with pytest.raises(RuntimeError, match="not fitted"):
        model.transform(test)
    params = repr(model)
    inputs = [x.copy(deep=True) for x in (train, train_qrels, valid, valid_qrels)]
    assert model.fit(train, train_qrels, valid, valid_qrels) is model
    for x, y in zip(inputs, (train, train_qrels, valid, valid_qrels)):
        pd.testing.assert_frame_equal(x, y)               # fit does not modify its inputs
    after = public(model)
    new = sorted(set(after) - set(before))
    assert new and all(k.endswith("_") for k in new), new
    assert {"n_functions_", "base_names_"} <= set(new)
    assert repr(model) == params                          # fit does not change the parameters
    for k, v in before.items():
        assert after[k] is v, f"fit replaced parameter {k}"


@pytest.mark.parametrize("name", NAMES)
def test_fit_without_validation_data(name, data):
    train, train_qrels, _, _, test = data
    model = make(name)
    assert model.fit(train, train_qrels) is model
    out = model.transform(test)
    assert len(out) == len(test) and np.isfinite(out["score"]).all()
    if isinstance(model, StructSVM) and len(model.path_) > 1:        # a C grid: cross-validation chose C
        assert all(len(p["cv_scores"]) == model.cv for p in model.path_)
        assert model.C_ in [p["C"] for p in model.path_]


@pytest.mark.parametrize("name", NAMES)
def test_refit_forgets_the_previous_fit(name, data):
    """Fitting a fitted learner on other data gives what a fresh learner fits (no state carried over)."""
    train, train_qrels, valid, valid_qrels, test = data
    fresh = fitted(name, data)
    other, other_qrels = run(5, n_queries=5, n_cand=15)
    refit = make(name).fit(other, other_qrels).fit(train, train_qrels, valid, valid_qrels)
    pd.testing.assert_series_equal(scores(refit, test), scores(fresh, test), check_exact=True)
    assert sorted(k for k in public(refit) if k.endswith("_")) == sorted(k for k in public(fresh) if k.endswith("_"))


# ---------------------------------------------------------------- transform
@pytest.mark.parametrize("name", NAMES)
def test_transform_scores_every_row_once_and_keeps_its_input(name, data):
    model = fitted(name, data)
    test = data[-1]
    before = test.copy(deep=True)
    out = model.transform(test)
    pd.testing.assert_frame_equal(test, before)            # the input frame is not modified
    assert sorted(zip(out["qid"], out["docno"])) == sorted(zip(test["qid"], test["docno"]))
    assert out["score"].dtype.kind == "f" and np.isfinite(out["score"]).all()
    for _, q in out.groupby("qid"):                        # rank 0, 1, ... by decreasing score
        assert sorted(q["rank"]) == list(range(len(q)))
        assert (np.diff(q.sort_values("rank")["score"].to_numpy()) <= 0).all()


@pytest.mark.parametrize("name", NAMES)
def test_transform_empty_frame(name, data):
    model = fitted(name, data)
    empty = data[-1].iloc[:0]
    out = model.transform(empty)
    assert len(out) == 0 and {"qid", "docno", "features", "score", "rank"} <= set(out.columns)
    assert out["score"].dtype.kind == "f" and out["rank"].dtype.kind == "i"


@pytest.mark.parametrize("name", NAMES)
def test_transform_is_row_order_invariant(name, data):
    model = fitted(name, data)
    test = data[-1]
    a = scores(model, test)
    b = scores(model, test.sample(frac=1, random_state=7))
    pd.testing.assert_series_equal(a, b, check_exact=True)


@pytest.mark.parametrize("name", NAMES)
def test_training_is_row_order_invariant(name, data):
    """frames.candidates_from_frame puts candidates in a canonical order (qid, docno), so shuffled training rows
    give every learner the same arrays: the scores are bit for bit the same."""
    train, train_qrels, valid, valid_qrels, test = data
    a = scores(fitted(name, data), test)
    shuffled = make(name).fit(train.sample(frac=1, random_state=11), train_qrels.sample(frac=1, random_state=12),
                              valid.sample(frac=1, random_state=13), valid_qrels)
    b = scores(shuffled, test)
    np.testing.assert_array_equal(b.to_numpy(), a.to_numpy())


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("name", NAMES)
def test_pickle_round_trip(name, data):
    model = fitted(name, data)
    clone = pickle.loads(pickle.dumps(model))
    assert type(clone) is type(model) and repr(clone) == repr(model)
    pd.testing.assert_series_equal(scores(clone, data[-1]), scores(model, data[-1]), check_exact=True)


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip(name, data, tmp_path):
    model = fitted(name, data)
    model.save(tmp_path / "m")
    again = type(model).load(tmp_path / "m")
    assert type(again) is type(model) and repr(again) == repr(model)
    pd.testing.assert_series_equal(scores(again, data[-1]), scores(model, data[-1]), check_exact=True)


@pytest.mark.parametrize("name", NAMES)
def test_repr_round_trip(name):
    model = make(name)
    namespace = {k: getattr(pyterrier_svmmap, k) for k in dir(pyterrier_svmmap) if not k.startswith("__")}
    rebuilt = eval(repr(model), namespace)
    assert type(rebuilt) is type(model) and repr(rebuilt) == repr(model)


# ---------------------------------------------------------------- bad input
def _without_label(qrels):
    return qrels.drop(columns=["label"])


def _short_features(res):
    res = res.copy()
    res.at[res.index[3], "features"] = res["features"].iloc[3][:-1]
    return res


def _inf_features(res):
    res = res.copy()
    f = np.array(res["features"].iloc[5], dtype=float)
    f[1] = np.inf
    res.at[res.index[5], "features"] = f
    return res


FIT_ERRORS = {
    "qrels-missing-label": (lambda tr, q: (tr, _without_label(q)), ValueError, r"qrels lack column\(s\) \['label'\]"),
    "features-wrong-length": (lambda tr, q: (_short_features(tr), q), ValueError, "features of different lengths"),
    "features-inf": (lambda tr, q: (_inf_features(tr), q), ValueError, "feature 1 is infinite"),
    "no-qrels": (lambda tr, q: (tr, None), ValueError, "needs train_qrels"),
    "no-features-column": (lambda tr, q: (tr.drop(columns=["features"]), q), ValueError, r"lacks \[.features.\].*put RunFeatures"),
    "empty-train": (lambda tr, q: (tr.iloc[:0], q), ValueError, "no training candidates"),
    "duplicate-rows": (lambda tr, q: (pd.concat([tr, tr.iloc[:1]]), q), ValueError, "duplicate \\(qid, docno\\) rows"),
    "qrels-not-a-frame": (lambda tr, q: (tr, q.to_dict()), TypeError, "qrels must be a DataFrame"),
}


@pytest.mark.parametrize("case", list(FIT_ERRORS))
@pytest.mark.parametrize("name", NAMES)
def test_fit_rejects_bad_input_with_a_message(name, case, data):
    train, train_qrels = data[0], data[1]
    corrupt, error, message = FIT_ERRORS[case]
    res, qrels = corrupt(train, train_qrels)
    model = make(name)
    with pytest.raises(error, match=message) as e:
        model.fit(res, qrels)
    assert error is KeyError or "\n" not in str(e.value)   # one line (pt's KeyError prints its own form)
    assert not [k for k in public(model) if k.endswith("_")], "a failed fit left learned attributes"


TRANSFORM_ERRORS = {
    "features-wrong-length": (_short_features, ValueError, "features of different lengths"),
    "features-inf": (_inf_features, ValueError, "feature 1 is infinite"),
    "other-width": (lambda r: r.assign(features=[np.append(f, 0.0) for f in r["features"]]), ValueError,
                    "trained with 4 features per row but these rows have 5"),
    "no-features-column": (lambda r: r.drop(columns=["features"]), ValueError, r"lacks \[.features.\].*put RunFeatures"),
}


@pytest.mark.parametrize("case", list(TRANSFORM_ERRORS))
@pytest.mark.parametrize("name", NAMES)
def test_transform_rejects_bad_input_with_a_message(name, case, data):
    model = fitted(name, data)
    corrupt, error, message = TRANSFORM_ERRORS[case]
    with pytest.raises(error, match=message) as e:
        model.transform(corrupt(data[-1]))
    assert error is KeyError or "\n" not in str(e.value)


@pytest.mark.parametrize("name", NAMES)
def test_validation_needs_both_frames(name, data):
    train, train_qrels, valid, valid_qrels, _ = data
    for v, vq in ((valid, None), (None, valid_qrels)):
        with pytest.raises(ValueError, match="give both valid_res and valid_qrels"):
            make(name).fit(train, train_qrels, v, vq)


def test_help_documents_every_parameter_of_the_classes_users_hold():
    """``help(SVMMap)`` (and the other learners') lists every constructor parameter in numpydoc form, not
    pt.Artifact's constructor text."""
    import inspect
    import pydoc
    import pyterrier_svmmap as ps
    for cls in (ps.SVMMap, ps.StructSVM, ps.StructSVMRanker, ps.ApproxAP, ps.ApproxNDCG, ps.RunFeatures,
                ps.AdaRank, ps.LambdaMART, ps.McRank):
        text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        assert "Initialize the artifact" not in text, cls
        assert "Parameters\n |  ----------" in text, cls
        for name, p in inspect.signature(cls).parameters.items():
            shown = f"**{name}" if p.kind is p.VAR_KEYWORD else name
            assert any(f in text for f in (f" |  {shown} :", f" |  {shown}\n", f" |  {name}, ", f", {name} :")), (cls, name)


def test_svmmap_fit_checks_its_parameters_before_it_reads_the_frames():
    """Parameters are stored by the constructor and checked by ``fit`` first, also when changed after
    construction (scikit-learn's contract), before the frames are converted."""
    from unittest import mock

    import pyterrier_svmmap as ps
    import pyterrier_svmmap.estimators.base as base
    train, qrels = run(0)
    est = ps.SVMMap(C=[0.1, 1.0], n_bins=5)
    est.C = []
    with mock.patch.object(base, "candidates_from_frame", side_effect=AssertionError("frames read")) as read:
        with pytest.raises(ValueError, match="C must be"):
            est.fit(train, qrels)
    assert read.call_count == 0
    est.set_params(C=[0.1, 1.0], prior="auto", selection="validation")   # a pair that cannot work together
    with pytest.raises(ValueError, match="prior='auto'.*needs selection='auto'"):
        est.fit(train, qrels)
