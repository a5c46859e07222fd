"""Every learner's constructor parameters follow scikit-learn's contract, and its one specification
(``PARAMS``, :mod:`pyterrier_svmmap.params`) agrees with the signature, the docstring, ``repr``, the model files
and ``svmmap learn``'s options."""
import argparse
import inspect
import json
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.utils.estimator_checks import (check_get_params_invariance, check_no_attributes_set_in_init,  # noqa: E402
                                            check_parameters_default_constructible, check_set_params)

import pyterrier_svmmap as ps  # noqa: E402
from pyterrier_svmmap.approx.ranker import ApproxRanker  # noqa: E402
from pyterrier_svmmap.boosting.adarank import AdaRankRanker  # noqa: E402
from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker  # noqa: E402
from pyterrier_svmmap.boosting.mcrank import McRankRanker  # noqa: E402
from pyterrier_svmmap.params import Parametrized  # noqa: E402
from pyterrier_svmmap.svm.params import STRUCT_SVM_PARAMS  # noqa: E402
from pyterrier_svmmap.svm.ranker import StructSVMRanker  # noqa: E402

ESTIMATORS = [ps.SVMMap, ps.StructSVM, ps.ApproxAP, ps.ApproxNDCG, ps.AdaRank, ps.LambdaMART, ps.McRank]
RANKERS = [StructSVMRanker, ApproxRanker, AdaRankRanker, LambdaMARTRanker, McRankRanker]
CLASSES = ESTIMATORS + RANKERS
SKLEARN_CHECKS = [check_parameters_default_constructible, check_get_params_invariance, check_set_params,
                  check_no_attributes_set_in_init]


def _all_parametrized(cls=Parametrized):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_parametrized(sub)


def test_every_public_learner_is_covered():
    """A new learner with PARAMS joins the checks below (private bases excepted)."""
    bases = {"Peer", "RankerEstimator"}                  # abstract: the peers' and the estimators' shared code
    public = {c for c in _all_parametrized() if not c.__name__.startswith("_") and c.__name__ not in bases}
    assert public <= set(CLASSES), sorted(c.__name__ for c in public - set(CLASSES))


@pytest.mark.parametrize("check", SKLEARN_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_scikit_learn_contract_checks(cls, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(cls.__name__, cls())


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_init_is_keyword_only_and_stores_every_argument_unchanged(cls):
    signature = inspect.signature(cls)
    assert list(signature.parameters) == list(cls.PARAMS.names)
    assert all(p.kind is p.KEYWORD_ONLY for p in signature.parameters.values())
    sentinels = {name: object() for name in cls.PARAMS.names}       # values no check would accept
    model = cls(**sentinels)
    assert all(getattr(model, k) is v for k, v in sentinels.items())
    assert all(model.get_params(deep=False)[k] is v for k, v in sentinels.items())
    with pytest.raises(TypeError):
        cls(1.0)
    with pytest.raises(ValueError):
        model.check_params()


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_clone_copies_the_parameters_not_the_fit(cls):
    first = cls.PARAMS.params[0]
    model = cls()
    model.fitted_ = True
    copy = clone(model)
    assert type(copy) is cls and copy.get_params(deep=False) == model.get_params(deep=False)
    assert not hasattr(copy, "fitted_")
    assert copy.set_params(**{first.name: first.default}) is copy
    with pytest.raises(ValueError, match="has no parameter 'nope'"):
        copy.set_params(nope=1)


def test_set_params_reaches_a_parameter_that_is_an_estimator():
    outer = ps.StructSVM(executor=StructSVMRanker(C=2.0))
    assert outer.get_params(deep=True)["executor__C"] == 2.0
    outer.set_params(executor__C=3.0)
    assert outer.executor.C == 3.0


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_pyterrier_get_and_set_parameter(cls):
    name = cls.PARAMS.params[0].name
    model = cls()
    model.set_parameter(name, "x")
    assert model.get_parameter(name) == "x" == getattr(model, name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_docstring_documents_every_parameter_with_its_default(cls):
    doc = inspect.getdoc(cls)
    assert "Parameters\n----------" in doc and "{parameters}" not in doc
    for p in cls.PARAMS:
        assert f"\n{p.name} : {p.type_doc}, default " in doc, (cls.__name__, p.name)


def test_svmmap_is_map_and_takes_no_loss():
    assert "loss" not in inspect.signature(ps.SVMMap).parameters
    with pytest.raises(TypeError):
        ps.SVMMap(loss="ndcg")
    assert ps.SVMMap().loss == "map" and ps.SVMMap()._ranker().loss == "map"


@pytest.mark.parametrize("cls", [ps.SVMMap, ps.StructSVM, StructSVMRanker], ids=lambda c: c.__name__)
def test_repr_shows_exactly_the_model_parameters(cls):
    text = repr(cls())
    for p in cls.PARAMS:
        assert (f"{p.name}=" in text) == p.model, p.name


# -- svmmap learn: each option that sets a parameter is that parameter's ``cli`` ----------------------------------
#: a value of each option other than the one it has by default in svmmap learn
OPTION_VALUES = {"-c": "0.5", "--loss": "ndcg", "--features": "bins+raw", "--normalise": "none", "--n-bins": "7",
                 "-e": "0.01", "--max-iter": "9", "--prior": "best", "--cv": "3", "--selection": "auto",
                 "--fallback-alpha": "0.1", "--min-valid-queries": "4", "--rel": "2", "-j": "2", "--workers": "2"}
#: options of svmmap learn that set no ranker parameter
NOT_PARAMETERS = {"-h", "--help", "--bins", "--raw", "--valid", "-v", "-y", "-o", "-p", "--scheduler", "--max-features",
                  "--scratch", "--force", "--jobs", "-#", "--debug"}


def _learn_parser():
    from pyterrier_svmmap.cli import learn
    parser = argparse.ArgumentParser()
    learn.add_arguments(parser)
    return learn, parser


def test_spec_names_options_that_exist_and_each_option_sets_its_parameter():
    learn, parser = _learn_parser()
    declared = {p.cli: p.name for p in STRUCT_SVM_PARAMS if p.cli}
    assert set(declared) == set(OPTION_VALUES)
    options = {o for action in parser._actions for o in action.option_strings}
    assert set(declared) <= options
    base = learn.ranker_params(parser.parse_args(["train.txt", "model"]))
    for option, value in OPTION_VALUES.items():
        args = parser.parse_args([option, value, "train.txt", "model"])
        changed = {k for k in set(base) | set(vars(args)) if k in STRUCT_SVM_PARAMS.names
                   and learn.ranker_params(args).get(k, base.get(k)) != base.get(k)}
        if option == "--workers":                       # the cluster: an executor made by run(), not a parameter
            assert args.workers == 2
            continue
        assert changed == {declared[option]}, (option, changed)


def test_every_option_that_changes_a_parameter_is_declared():
    learn, parser = _learn_parser()
    declared = {p.cli for p in STRUCT_SVM_PARAMS if p.cli}
    for action in parser._actions:
        for option in action.option_strings:
            if option in declared or option in NOT_PARAMETERS or option[1:] in learn.IGNORED:   # svm_struct's
                continue
            pytest.fail(f"svmmap learn's {option} is neither a Param.cli of STRUCT_SVM_PARAMS nor listed as no parameter")


# -- model files: what is saved is the spec's ------------------------------------------------------------------
def _fitted(cls, **kw):
    import pandas as pd
    rng = np.random.default_rng(0)
    rows, qrels = [], []
    for q in range(8):
        for d in range(10):
            rows.append(dict(qid=str(q), docno=f"d{d}", features=rng.random(3) + (d < 2)))
            qrels.append(dict(qid=str(q), docno=f"d{d}", label=int(d < 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**kw).fit(pd.DataFrame(rows), pd.DataFrame(qrels))


@pytest.mark.parametrize("cls,kw", [(ps.SVMMap, dict(C=1.0)), (ps.StructSVM, dict(C=1.0, loss="ndcg")),
                                    (ps.ApproxAP, dict(n_iter=2)), (ps.AdaRank, dict(n_rounds=3))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_model_file_saves_the_spec_parameters_but_the_runtime_ones(cls, kw, tmp_path):
    model = _fitted(cls, **kw)
    model.save(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "model.json").read_text())["params"]
    expected = set(cls.PARAMS.names) - set(cls.PARAMS.runtime_names)
    implied = cls.PARAMS.implied
    assert expected - set(implied) <= set(saved) <= expected
    loaded = cls.load(tmp_path / "m")
    assert loaded.get_params(deep=False) == {**model.get_params(deep=False),
                                             **{k: v.default for k, v in zip(cls.PARAMS.names, cls.PARAMS)
                                                if k in cls.PARAMS.runtime_names}}
    assert repr(loaded) == repr(model)


def test_a_file_without_an_implied_parameter_means_its_implied_value(tmp_path):
    model = _fitted(ps.SVMMap, C=1.0, selection="validation")
    model.save(tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    assert "selection" not in doc["params"]          # the implied value is left out of the file
    loaded = ps.SVMMap.load(tmp_path / "m")
    assert loaded.selection == "validation"
