"""Lossless state of the array-level rankers that are not structural SVMs: ApproxRanker (ApproxAP /
ApproxNDCG), AdaRankRanker, LambdaMARTRanker and McRankRanker.

Each fitted ranker goes through ``get_state()``, its meta through strict JSON and its arrays through
``np.savez`` / ``np.load``, then ``from_state``; the rebuilt ranker must score bit-identically and
have every attribute (parameters and learned ones) bit-identical too. Incomplete or inconsistent
states must raise ValueError naming what is wrong.
"""
import inspect
import io
import json
import math

import numpy as np
import pytest

import pyterrier_svmmap.approx.ranker as approx

from pyterrier_svmmap.boosting import adarank, common, lambdamart, mcrank
from pyterrier_svmmap.features.encoder import FeatureEncoder


# ---------------------------------------------------------------------------------------------
# data and helpers
# ---------------------------------------------------------------------------------------------
def synthetic(seed, n_queries=12, n_cand=25, n_funcs=4, grades=(0, 1, 2)):
    """Candidates of ``n_queries`` queries; relevance grows with function 0 and falls with 1;
    15% of scores missing (NaN). ``grades``: the label values used, low to high."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_cand
    offsets = np.arange(n_queries + 1) * n_cand
    raw = rng.normal(size=(n, n_funcs))
    latent = raw[:, 0] - raw[:, 1] + 0.7 * rng.normal(size=n)
    cuts = np.quantile(latent, [0.7, 0.9][:len(grades) - 1])
    labels = np.asarray(grades, dtype=float)[np.searchsorted(cuts, latent)]
    raw[rng.random(raw.shape) < 0.15] = np.nan
    return raw, labels, offsets


def roundtrip(state):
    """The state as a model file would give it back: meta through strict JSON (no NaN/inf),
    arrays through an in-memory .npz (no pickles)."""
    meta, arrays = state
    meta = json.loads(json.dumps(meta, allow_nan=False))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return meta, arrays


def assert_same(a, b, where="model"):
    """a and b are the same bit for bit: same types, array dtypes/shapes/bytes, float bits (NaN
    equal to NaN, -0.0 not equal to 0.0), dict keys in the same order; boosters by their model text."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert a.tobytes() == b.tobytes(), f"{where}: values differ"
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or \
            (a == b and math.copysign(1, a) == math.copysign(1, b)), f"{where}: {a!r} vs {b!r}"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif type(a).__name__ == "Booster":
        assert a.model_to_string(num_iteration=-1) == b.model_to_string(num_iteration=-1), f"{where}: trees differ"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def assert_same_model(a, b):
    """Every attribute of the two rankers (constructor parameters and learned attributes)."""
    assert sorted(vars(a)) == sorted(vars(b)), f"attributes {sorted(vars(a))} vs {sorted(vars(b))}"
    for k in vars(a):
        assert_same(getattr(a, k), getattr(b, k), k)


# ---------------------------------------------------------------------------------------------
# the fitted rankers: (name, constructor kwargs, how to fit, how to score)
# ---------------------------------------------------------------------------------------------
def _approx_data(seed, grades=(0, 1)):
    raw, labels, offsets = synthetic(seed, grades=grades)
    return raw, labels, offsets


def _fit_approx(kwargs, valid, grades):
    raw, labels, offsets = _approx_data(0, grades)
    enc = FeatureEncoder("minmax+bins", n_bins=4).fit(raw, offsets)
    kw = {}
    if valid:
        vraw, vlabels, voffsets = _approx_data(1, grades)
        kw = dict(X_valid=enc.transform(vraw, voffsets), labels_valid=vlabels, offsets_valid=voffsets,
                  n_relevant_valid=np.array([np.sum(vlabels[lo:hi] > 0) + 1 for lo, hi in
                                             zip(voffsets[:-1], voffsets[1:])], dtype=float))
    model = approx.ApproxRanker(**kwargs).fit(enc.transform(raw, offsets), labels, offsets, **kw)
    return model, lambda m, raw, offsets: m.decision_function(enc.transform(raw, offsets))


def _fit_peer(cls, kwargs, valid, grades):
    raw, labels, offsets = synthetic(0, grades=grades)
    args = synthetic(1, grades=grades) if valid else ()
    model = cls(**kwargs).fit(raw, labels, offsets, *args)
    return model, lambda m, raw, offsets: m.predict(raw, offsets)


DIM = 24               # dimensions of FeatureEncoder("minmax+bins", n_bins=4) on 4 functions

CASES = {
    # ApproxAP with a validation set, a start vector w0 and a 2×2 grid
    "approx-ap": (approx.ApproxRanker,
                  dict(measure="ap", alphas=[5.0, 20.0], betas=[1.0, 10.0], n_iter=4, learning_rate=0.05,
                       w0=np.linspace(-0.1, 0.1, DIM), track_error=True, max_entries=1 << 20,
                       random_state=3, verbose=False),
                  lambda kw: _fit_approx(kw, valid=True, grades=(0, 1))),
    # ApproxNDCG: β is NaN (not strict JSON), no ρ tracked (NaN curves), selected on training
    "approx-ndcg": (approx.ApproxRanker,
                    dict(measure="ndcg", alphas=[10.0, 50.0], betas=None, n_iter=3, learning_rate=0.05,
                         w0=None, track_error=False, max_entries=1 << 20, random_state=0, verbose=False),
                    lambda kw: _fit_approx(kw, valid=False, grades=(0, 1, 2))),
    "adarank": (adarank.AdaRankRanker, dict(n_rounds=6, measure="ndcg", k=5, verbose=False),
                lambda kw: _fit_peer(adarank.AdaRankRanker, kw, valid=True, grades=(0, 1, 2))),
    "lambdamart": (lambdamart.LambdaMARTRanker,
                   dict(n_estimators=25, learning_rate=0.1, num_leaves=5, min_child_samples=5, metric="ndcg",
                        eval_at=5, early_stopping_rounds=3, random_state=1,
                        params={"subsample": 0.8, "subsample_freq": 1, "reg_lambda": 0.5, "n_jobs": 1},
                        verbose=False),
                   lambda kw: _fit_peer(lambdamart.LambdaMARTRanker, kw, valid=True, grades=(0, 1, 2))),
    # multiclass (three grades)
    "mcrank": (mcrank.McRankRanker,
               dict(n_estimators=6, learning_rate=0.1, num_leaves=5, min_child_samples=5, random_state=0,
                    params={"n_jobs": 1}, verbose=False),   # one thread: fast on a busy machine
               lambda kw: _fit_peer(mcrank.McRankRanker, kw, valid=False, grades=(0, 1, 2))),
    # two grades with a gap (0 and 2): the binary model, and classes_ maps its output back to 0/2
    "mcrank-binary": (mcrank.McRankRanker,
                      dict(n_estimators=6, learning_rate=0.1, num_leaves=5, min_child_samples=5,
                           random_state=0, params={"n_jobs": 1}, verbose=False),
                      lambda kw: _fit_peer(mcrank.McRankRanker, kw, valid=False, grades=(0, 2))),
}
LIGHTGBM = {"lambdamart", "mcrank", "mcrank-binary"}

@pytest.fixture(scope="module")
def fitted():
    """``fitted(name)``: (model, score function, kwargs) of a case, fitted once for the module's tests."""
    models = {}

    def get(name):
        cls, kwargs, fit = CASES[name]
        if name in LIGHTGBM:
            pytest.importorskip("lightgbm")
        if name not in models:
            model, score = fit(kwargs)
            models[name] = (model, score)
        return models[name] + (kwargs,)
    return get


# ---------------------------------------------------------------------------------------------
# round trip
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_state_roundtrip_scores_bit_identical(name, fitted):
    model, score, _ = fitted(name)
    loaded = type(model).from_state(*roundtrip(model.get_state()))
    raw, _, offsets = synthetic(7, n_queries=5)       # unseen candidates, with missing scores
    want = score(model, raw, offsets)
    assert len(np.unique(want)) > 10                  # a model that actually ranks
    got = score(loaded, raw, offsets)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("name", list(CASES))
def test_state_roundtrip_keeps_every_attribute(name, fitted):
    model, _, _ = fitted(name)
    loaded = type(model).from_state(*roundtrip(model.get_state()))
    assert_same_model(model, loaded)
    # and the loaded model's state is the same state again
    meta, arrays = model.get_state()
    meta2, arrays2 = loaded.get_state()
    assert json.dumps(meta) == json.dumps(meta2)
    assert_same(arrays, arrays2)


@pytest.mark.parametrize("name", list(CASES))
def test_state_is_a_copy(name, fitted):
    """Changing the state's arrays afterwards changes neither the model nor the loaded model."""
    model, score, _ = fitted(name)
    meta, arrays = roundtrip(model.get_state())
    loaded = type(model).from_state(meta, arrays)
    raw, _, offsets = synthetic(8, n_queries=3)
    before = score(loaded, raw, offsets)
    for a in arrays.values():
        a[...] = 0
    for a in model.get_state()[1].values():
        a[...] = 0
    assert np.array_equal(score(loaded, raw, offsets), before)
    assert np.array_equal(score(model, raw, offsets), before)


def test_approx_state_layout(fitted):
    """The documented keys: NaN β of ApproxNDCG as "nan", grid curves stacked (grid × T)."""
    model, _, _ = fitted("approx-ndcg")
    meta, arrays = model.get_state()
    assert meta["ranker"] == "ApproxRanker" and meta["beta"] == "nan"
    assert meta["params"]["w0"] is None and "w0" not in arrays
    assert arrays["search_valid_score"].shape == (2, 3) and np.isnan(arrays["approx_error"]).all()
    meta, arrays = fitted("approx-ap")[0].get_state()
    assert meta["params"]["w0"] == "array" and arrays["w0"].shape == (DIM,)
    assert len(meta["search_results"]) == 4


@pytest.mark.parametrize("name", ["lambdamart", "mcrank"])
def test_booster_is_lightgbm_text(name, fitted):
    model, _, _ = fitted(name)
    meta, arrays = model.get_state()
    assert arrays["booster"].dtype == np.uint8
    assert arrays["booster"].tobytes().decode("utf-8") == model.booster_.model_to_string(num_iteration=-1)


# ---------------------------------------------------------------------------------------------
# get_params
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_get_params_are_the_constructor_parameters(name, fitted):
    cls, kwargs, _ = CASES[name]
    model = fitted(name)[0]
    names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
    assert list(kwargs) == names                      # the cases spell out every parameter
    assert_same(model.get_params(), kwargs)
    assert_same(cls().get_params(), {n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
                                     if n != "self"})


def test_numpy_parameters_are_saved_as_json_numbers():
    model = approx.ApproxRanker(measure="ap", alphas=np.array([10.0]), betas=(np.float64(10.0),), n_iter=np.int64(2))
    raw, labels, offsets = synthetic(0)
    enc = FeatureEncoder("minmax+bins", n_bins=4).fit(raw, offsets)
    model.fit(enc.transform(raw, offsets), (labels > 0).astype(float), offsets)
    meta, arrays = roundtrip(model.get_state())
    assert meta["params"]["alphas"] == [10.0] and meta["params"]["n_iter"] == 2
    assert np.array_equal(approx.ApproxRanker.from_state(meta, arrays).coef_, model.coef_)


def test_unsaveable_parameter_is_a_clear_error():
    model = adarank.AdaRankRanker(n_rounds=2)
    model.fit(*synthetic(0))
    model.measure = object()
    with pytest.raises(ValueError, match="parameter measure=.*cannot be saved"):
        model.get_state()


@pytest.mark.parametrize("cls", [approx.ApproxRanker, adarank.AdaRankRanker, lambdamart.LambdaMARTRanker,
                                 mcrank.McRankRanker])
def test_unfitted_has_no_state(cls):
    with pytest.raises(RuntimeError, match="not fitted"):
        cls().get_state()


# ---------------------------------------------------------------------------------------------
# bad states
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_missing_keys_are_named(name, fitted):
    model, _, _ = fitted(name)
    meta, arrays = roundtrip(model.get_state())
    cls = type(model)
    for key in meta:
        bad = {k: v for k, v in meta.items() if k != key}
        with pytest.raises(ValueError, match=f"meta\\[{key!r}\\]|{key!r}"):
            cls.from_state(bad, arrays)
    for key in arrays:
        bad = {k: v for k, v in arrays.items() if k != key}
        with pytest.raises(ValueError, match=f"arrays\\[{key!r}\\]"):
            cls.from_state(meta, bad)
    for key in meta["params"]:
        bad = dict(meta, params={k: v for k, v in meta["params"].items() if k != key})
        with pytest.raises(ValueError, match=f"lacks \\[{key!r}\\]"):
            cls.from_state(bad, arrays)
    with pytest.raises(ValueError, match="unknown \\['colour'\\]"):
        cls.from_state(dict(meta, params=dict(meta["params"], colour="red")), arrays)


@pytest.mark.parametrize("name", list(CASES))
def test_wrong_shapes_are_named(name, fitted):
    model, _, _ = fitted(name)
    meta, arrays = roundtrip(model.get_state())
    cls = type(model)
    for key, a in arrays.items():
        if key in ("booster", "classes"):          # any length (checked against the booster)
            continue
        longer = np.concatenate([a, a[:1]]) if a.ndim else a
        with pytest.raises(ValueError, match=f"arrays\\[{key!r}\\].*shape"):
            cls.from_state(meta, dict(arrays, **{key: longer}))
        with pytest.raises(ValueError, match=f"arrays\\[{key!r}\\].*shape"):
            cls.from_state(meta, dict(arrays, **{key: a[None]}))


@pytest.mark.parametrize("name", list(CASES))
def test_state_of_another_ranker_is_refused(name, fitted):
    model, _, _ = fitted(name)
    meta, arrays = model.get_state()
    other = adarank.AdaRankRanker if not isinstance(model, adarank.AdaRankRanker) else mcrank.McRankRanker
    with pytest.raises(ValueError, match=f"is of ranker '{type(model).__name__}'"):
        other.from_state(meta, arrays)


def test_approx_inconsistent_states(fitted):
    model, _, _ = fitted("approx-ap")
    meta, arrays = roundtrip(model.get_state())
    cls = approx.ApproxRanker
    with pytest.raises(ValueError, match="best_iteration.*not in 1..n_iter=4"):
        cls.from_state(dict(meta, best_iteration=5), arrays)
    with pytest.raises(ValueError, match="best_iteration'\\] must be an integer"):
        cls.from_state(dict(meta, best_iteration=2.0), arrays)
    with pytest.raises(ValueError, match="one dict per grid point \\(4"):     # the grid has 2 × 2 points
        cls.from_state(dict(meta, search_results=meta["search_results"][:3]), arrays)
    # n_iter must match the curves' length
    with pytest.raises(ValueError, match="arrays\\['coef_path'\\] has shape \\(4, 24\\), expected \\(5, any\\)"):
        cls.from_state(dict(meta, params=dict(meta["params"], n_iter=5)), arrays)
    with pytest.raises(ValueError, match="arrays\\['w0'\\] is missing"):
        cls.from_state(meta, {k: v for k, v in arrays.items() if k != "w0"})
    with pytest.raises(ValueError, match="must be a number"):
        cls.from_state(dict(meta, alpha="ten"), arrays)
    with pytest.raises(ValueError, match="measure='err' is not valid"):
        cls.from_state(dict(meta, params=dict(meta["params"], measure="err")), arrays)
    bad = [dict(r) for r in meta["search_results"]]
    del bad[1]["seconds"]
    with pytest.raises(ValueError, match="search_results'\\]\\[1\\] lacks \\['seconds'\\]"):
        cls.from_state(dict(meta, search_results=bad), arrays)


def test_peer_inconsistent_states(fitted):
    pytest.importorskip("lightgbm")
    meta, arrays = roundtrip(fitted("mcrank")[0].get_state())
    mc = mcrank.McRankRanker
    with pytest.raises(ValueError, match="booster takes 4 features but meta\\['n_functions'\\] is 5"):
        mc.from_state(dict(meta, n_functions=5), arrays)
    with pytest.raises(ValueError, match="3 class\\(es\\) per round.*2 grades"):
        mc.from_state(meta, dict(arrays, classes=np.array([0, 1])))
    with pytest.raises(ValueError, match="ascending distinct"):
        mc.from_state(meta, dict(arrays, classes=np.array([0, 2, 1])))
    with pytest.raises(ValueError, match="not a LightGBM text model"):
        mc.from_state(meta, dict(arrays, booster=arrays["booster"][:200]))
    meta, arrays = roundtrip(fitted("lambdamart")[0].get_state())
    with pytest.raises(ValueError, match="best_iteration'\\] must be at least 1"):
        lambdamart.LambdaMARTRanker.from_state(dict(meta, best_iteration=0), arrays)
    meta, arrays = roundtrip(fitted("adarank")[0].get_state())
    ada = adarank.AdaRankRanker
    with pytest.raises(ValueError, match="best_round'\\] is 7, but there are 6 rounds"):
        ada.from_state(dict(meta, best_round=7), arrays)
    with pytest.raises(ValueError, match="feature 4 is not one of the 4 base functions"):
        ada.from_state(dict(meta, history=[dict(h, feature=4) for h in meta["history"]]), arrays)
    with pytest.raises(ValueError, match="history'\\]\\[0\\] lacks \\['alpha'\\]"):
        ada.from_state(dict(meta, history=[{k: v for k, v in h.items() if k != "alpha"}
                                           for h in meta["history"]]), arrays)
    with pytest.raises(ValueError, match="n_functions'\\] must be at least 1"):
        ada.from_state(dict(meta, n_functions=0), arrays)


# ---------------------------------------------------------------------------------------------
# predicting from the booster alone is what LightGBM's scikit-learn wrappers predict
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("grades", [(0, 1, 2), (0, 2)])
def test_mcrank_predicts_as_lgbm_classifier(grades):
    lgb = pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic(0, grades=grades)
    kw = dict(n_estimators=6, learning_rate=0.1, num_leaves=5, min_child_samples=5, random_state=0)
    ours = mcrank.McRankRanker(**kw, params={"n_jobs": 1}).fit(raw, labels, offsets)
    y = labels.astype(int)
    ref = lgb.LGBMClassifier(objective="multiclass" if len(grades) > 2 else "binary", verbose=-1, n_jobs=1,
                             **kw).fit(common.fill_missing(raw, offsets), y)
    test_raw, _, test_offsets = synthetic(7, n_queries=5)
    want = ref.predict_proba(common.fill_missing(test_raw, test_offsets)) @ ref.classes_.astype(float)
    assert np.array_equal(ours.predict(test_raw, test_offsets), want)


def test_lambdamart_predicts_as_lgbm_ranker():
    lgb = pytest.importorskip("lightgbm")
    raw, labels, offsets = synthetic(0)
    kw = dict(n_estimators=5, learning_rate=0.1, num_leaves=5, min_child_samples=5, random_state=0)
    ours = lambdamart.LambdaMARTRanker(**kw, params={"n_jobs": 1}).fit(raw, labels, offsets)
    ref = lgb.LGBMRanker(objective="lambdarank", verbose=-1, n_jobs=1, **kw).fit(
        common.fill_missing(raw, offsets), labels.astype(int), group=np.diff(offsets))
    test_raw, _, test_offsets = synthetic(7, n_queries=5)
    want = ref.predict(common.fill_missing(test_raw, test_offsets))
    assert np.array_equal(ours.predict(test_raw, test_offsets), want)
