"""Integration: every registered reproduce system through reproduce's own trial loop, the tables,
and StructSVM's bias feature for the classification losses."""
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyterrier")
pytest.importorskip("ir_measures")
from pyterrier_svmmap import StructSVM, SVMMap  # noqa: E402
import pyterrier_svmmap.experiments.systems as sysreg  # noqa: E402
from pyterrier_svmmap.experiments.reproduce.evaluation import aggregate  # noqa: E402
from pyterrier_svmmap.experiments.reproduce.trials import run_trials
from pyterrier_svmmap.experiments.reproduce.experiment import make_splits  # noqa: E402
from pyterrier_svmmap.experiments.reproduce.evaluation import (format_learner_table, format_loss_table,  # noqa: E402
                                               results_dict, tables_markdown)

EXPECTED = ["svm-map", "svm-map-paper", "svm-roc", "svm-ndcg@10", "svm-ndcg-nc", "svm-mrr@10", "svm-combo", "dorm",
            "svm-acc", "svm-acc2", "svm-acc3", "svm-acc4", "approx-ap", "approx-ndcg", "lambdamart",
            "mcrank", "adarank"]


def synthetic(n_queries=8, n_cand=25, n_funcs=3, seed=0):
    """Candidates (qid, query, docno, features with NaNs) whose relevance follows f0 − f1."""
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_queries):
        f = rng.normal(size=(n_cand, n_funcs))
        latent = f[:, 0] - f[:, 1] + 0.3 * rng.normal(size=n_cand)
        rel = latent > np.quantile(latent, 0.8)
        f[rng.random(f.shape) < 0.1] = np.nan
        for d in range(n_cand):
            rows.append({"qid": f"q{q}", "query": "x", "docno": f"d{d}", "features": f[d]})
            if rel[d]:
                qrels.append({"qid": f"q{q}", "docno": f"d{d}", "label": 1})
    return pd.DataFrame(rows), pd.DataFrame(qrels)


def test_registry_has_exactly_the_systems():
    assert set(EXPECTED) <= set(sysreg.SYSTEMS)
    assert sysreg.parse_names("all") == list(sysreg.SYSTEMS) == [
        "svm-map", "svm-map-paper", "svm-map-cv", "svm-map-noavg", "svm-map-alpha0.6", "svm-map-raw", "svm-map-bins",
        "svm-map-allbins", "svm-map-prior", *EXPECTED[2:]]


def test_the_ablations_are_the_documented_svm_maps(monkeypatch):
    """The default's ablations and SVM-map's feature options (docs/experiments.md) build these estimators, the
    paper's C grid read when they are built."""
    import pyterrier_svmmap as ps
    monkeypatch.setattr(ps, "DEFAULT_C_GRID", (0.1, 1.0))
    paper = dict(C=[0.1, 1.0], features="bins", n_bins=50, prior=None, selection="validation")
    want = {"svm-map-cv": SVMMap(fallback_alpha=None, average_folds=False),
            "svm-map-noavg": SVMMap(average_folds=False), "svm-map-alpha0.6": SVMMap(fallback_alpha=0.6),
            "svm-map-bins": SVMMap(features="bins"), "svm-map-allbins": SVMMap(threshold_depth=None, **paper),
            "svm-map-prior": SVMMap(**{**paper, "prior": "best"})}
    for name, est in want.items():
        assert sysreg.SYSTEMS[name]().get_params() == est.get_params(), name


def test_structural_systems_share_svm_map_defaults():
    import pyterrier_svmmap as ps
    # the other losses use the paper's configuration (svm-map-paper); svm-map is the package's default
    ref = sysreg.SYSTEMS["svm-map-paper"]()
    assert list(ref.C) == list(ps.DEFAULT_C_GRID)
    assert sysreg.SYSTEMS["svm-map"]().get_params() == ps.SVMMap().get_params()
    for name in EXPECTED:
        est = sysreg.SYSTEMS[name]() if name not in ("lambdamart", "mcrank") or _has_lgb() else None
        if not isinstance(est, StructSVM) or name == "svm-map":
            continue
        # the same grid, scaled only for the losses whose Ψ is on another scale (systems.C_GRID_SCALE)
        scale = {"svm-mrr@10": sysreg.C_GRID_SCALE["mrr"], "dorm": sysreg.C_GRID_SCALE["dorm"]}.get(name, 1.0)
        assert list(est.C) == pytest.approx([c * scale for c in ref.C], rel=1e-12), name
        assert est.features == ref.features and est.n_bins == ref.n_bins
        assert est.selection == ref.selection == "validation" and est.prior is ref.prior is None
        assert est.epsilon == ref.epsilon
        assert est.binning == {"svm-acc3": "percentile", "svm-acc4": "minmax"}.get(name, ref.binning)


def _has_lgb():
    try:
        import lightgbm  # noqa: F401
        return True
    except ImportError:
        return False


def test_every_system_fits_and_scores_through_run_trials(monkeypatch):
    # the registry's factories read pyterrier_svmmap.DEFAULT_C_GRID when called; a two-value grid keeps
    # this test short (the full grid costs minutes for svm-combo, whose several slack groups take
    # the solver's slower SMO path)
    import pyterrier_svmmap
    monkeypatch.setattr(pyterrier_svmmap, "DEFAULT_C_GRID", (0.1, 1.0))
    cands, qrels = synthetic()
    names = [n for n in EXPECTED if n not in ("lambdamart", "mcrank") or _has_lgb()]
    systems = sysreg.resolve(names)
    assert list(systems) == names
    splits = make_splits(sorted(cands["qid"].unique()), trials=1, train=4, valid=2, seed=0)
    per_trial, fit_seconds = run_trials(cands, qrels, splits, systems, {}, progress=False)
    summary = aggregate(per_trial, "svm-map", fit_seconds)
    assert set(summary["name"]) == set(names)
    assert (summary["kind"] == "learned").all() and (summary["fit_seconds"] > 0).all()
    res = results_dict(summary, collection="syn", trials=1, train=4, valid=2, seed=0, reference="svm-map")
    for s in res["systems"]:
        assert s["kind"] == "learned" and s["fit_seconds"] > 0
        assert {"map", "ndcg_cut_10", "recip_rank_10"} <= set(s)
    # the ranking learners find f0 − f1 (random MAP on these candidates is about 0.25)
    by = summary.set_index("name")["map"]
    for n in ("svm-map", "svm-roc", "svm-combo", "svm-acc", "svm-acc2", "approx-ap", "adarank"):
        assert by[n] > 0.5, (n, by[n])


def test_parallel_trials_give_the_sequential_results():
    """--jobs: trials fitted in forked workers give the same per-query measures, in split order, and
    the first split's models; only the fit times may differ."""
    cands, qrels = synthetic(n_queries=10)
    systems = sysreg.resolve(["svm-map", "adarank"])
    splits = make_splits(sorted(cands["qid"].unique()), trials=4, train=4, valid=2, seed=3)
    runs = {"f0": cands.assign(score=cands["features"].map(lambda f: np.nan_to_num(f[0], nan=-9)))}
    seq_models, par_models = {}, {}
    seq, seq_s = run_trials(cands, qrels, splits, systems, runs, progress=False, first_models=seq_models, jobs=1)
    par, par_s = run_trials(cands, qrels, splits, systems, runs, progress=False, first_models=par_models, jobs=2)
    pd.testing.assert_frame_equal(seq, par)
    assert {k: len(v) for k, v in seq_s.items()} == {k: len(v) for k, v in par_s.items()} == {"svm-map": 4, "adarank": 4}
    assert set(par_models) == {"svm-map", "adarank"}
    np.testing.assert_array_equal(seq_models["svm-map"].coef_, par_models["svm-map"].coef_)
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        run_trials(cands, qrels, splits, systems, runs, progress=False, jobs=0)


class _BlasProbe(SVMMap):
    """SVMMap that appends the BLAS thread counts its fit ran with to the file ``record`` (set before the
    trials, so that forked workers write there too)."""
    record = None

    def fit_candidates(self, *args, **kwargs):                  # what the trials call
        from threadpoolctl import threadpool_info
        threads = sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
        with open(self.record, "a") as f:
            f.write(f"{threads}\n")
        return super().fit_candidates(*args, **kwargs)


def test_trials_fit_with_one_blas_thread_however_they_run(tmp_path, monkeypatch):
    """A threaded BLAS sums in pieces that depend on its thread count, which moves the classification
    baselines' models: every trial runs with BLAS on one thread, sequential (--jobs 1) or in workers."""
    pytest.importorskip("threadpoolctl")
    cands, qrels = synthetic(n_queries=10)
    splits = make_splits(sorted(cands["qid"].unique()), trials=2, train=4, valid=2, seed=3)
    runs = {"f0": cands.assign(score=cands["features"].map(lambda f: np.nan_to_num(f[0], nan=-9)))}
    for jobs in (1, 2):
        record = tmp_path / f"blas-{jobs}.txt"
        monkeypatch.setattr(_BlasProbe, "record", record)
        run_trials(cands, qrels, splits, {"probe": lambda: _BlasProbe(C=1.0, features="raw")}, runs,
                   progress=False, jobs=jobs)
        seen = record.read_text().splitlines()        # each trial's fit (and, in workers, the warm-up's)
        assert len(seen) >= len(splits) and set(seen) == {"[1]"}, (jobs, seen)


def test_parallel_trials_fall_back_without_fork(monkeypatch, caplog):
    """Where 'fork' is missing (Windows), --jobs runs the trials sequentially with one warning."""
    import multiprocessing
    cands, qrels = synthetic(n_queries=8)
    splits = make_splits(sorted(cands["qid"].unique()), trials=2, train=4, valid=2, seed=0)
    systems = sysreg.resolve(["adarank"])
    expected, _ = run_trials(cands, qrels, splits, systems, {}, progress=False, jobs=1)
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    with caplog.at_level("WARNING"):
        got, _ = run_trials(cands, qrels, splits, systems, {}, progress=False, jobs=2)
    pd.testing.assert_frame_equal(expected, got)
    assert "lacks: running the trials one after another" in caplog.text


def test_missing_dependency_skips_with_a_message(monkeypatch, caplog):
    def needs_x():
        raise ImportError("needs X; pip install x")
    monkeypatch.setitem(sysreg.SYSTEMS, "needs-x", needs_x)
    with caplog.at_level("WARNING"):
        out = sysreg.resolve(["svm-map", "needs-x"])
    assert list(out) == ["svm-map"]
    assert "skipping system needs-x: needs X; pip install x" in caplog.text


def test_systems_missing_one_dependency_are_skipped_in_one_message(monkeypatch, caplog):
    """Without the peers extra, LambdaMART and McRank are skipped with one message saying why."""
    def needs_lightgbm():
        raise ImportError("needs LightGBM (No module named 'lightgbm'); pip install 'pyterrier-svmmap[peers]'")
    monkeypatch.setitem(sysreg.SYSTEMS, "lambdamart", needs_lightgbm)
    monkeypatch.setitem(sysreg.SYSTEMS, "mcrank", needs_lightgbm)
    with caplog.at_level("WARNING"):
        out = sysreg.resolve(["svm-map", "lambdamart", "mcrank", "adarank"])
    assert list(out) == ["svm-map", "adarank"]
    lines = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
    assert lines == ["skipping systems lambdamart, mcrank: needs LightGBM (No module named 'lightgbm'); "
                     "pip install 'pyterrier-svmmap[peers]'"]


# ------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------
def _summary():
    return pd.DataFrame([
        dict(name="svm-map", kind="learned", map=0.30, ndcg_cut_10=0.45, recip_rank_10=0.60, wins=0,
             losses=0, p_value=1.0, fit_seconds=2.0, n_queries=10),
        dict(name="svm-acc", kind="learned", map=0.25, ndcg_cut_10=0.47, recip_rank_10=0.55, wins=7,
             losses=2, p_value=0.01, fit_seconds=0.5, n_queries=10),
        dict(name="adarank", kind="learned", map=0.28, ndcg_cut_10=0.40, recip_rank_10=0.65, wins=5,
             losses=4, p_value=0.6, fit_seconds=0.25, n_queries=10),
        dict(name="bm25", kind="base", map=0.27, ndcg_cut_10=0.41, recip_rank_10=0.5, wins=6,
             losses=3, p_value=0.2, fit_seconds=np.nan, n_queries=10),
    ])


def test_learner_table_form():
    t = format_learner_table(_summary(), "svm-map").splitlines()
    assert t[0].split() == ["learner", "MAP", "W/L", "vs", "svm-map", "fit", "s"]
    body = [line.split() for line in t[2:5]]
    assert body == [["svm-map", "0.3000", "-", "2.00"], ["adarank", "0.2800", "5/4", "0.25"],
                    ["svm-acc", "0.2500", "7/2", "**", "0.50"]]
    assert not any("bm25" in line for line in t)


def test_loss_table_form():
    t = format_loss_table(_summary()).splitlines()
    assert t[0].split() == ["training", "loss", "/", "learner", "MAP", "nDCG@10", "RR@10"]
    rows = {line.split()[0]: line.split()[1:] for line in t[2:5]}
    assert rows["svm-map"] == ["0.3000*", "0.4500", "0.6000"]
    assert rows["svm-acc"] == ["0.2500", "0.4700*", "0.5500"]
    assert rows["adarank"] == ["0.2800", "0.4000", "0.6500*"]


def test_tables_markdown_has_all_three():
    md = tables_markdown(_summary(), "svm-map", "syn")
    assert md.startswith("# syn")
    assert "Table 9 form" in md and "Figure 9 form" in md and "Table 6 form" in md
    assert md.count("```") == 6 and "bm25" in md


# ------------------------------------------------------------------------------------------
# classification losses: the bias feature
# ------------------------------------------------------------------------------------------
def _separable(seed=0, n_queries=6, n_cand=40):
    """One base function; relevant iff its score > 1.5 (not at 0): separable only with a bias."""
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_queries):
        x = rng.uniform(0, 3, size=n_cand)
        x[0], x[1] = 2.5, 0.5                        # both classes in every query
        for d in range(n_cand):
            rows.append({"qid": f"{seed}-{q}", "docno": f"d{d}", "features": np.array([x[d]])})
            if x[d] > 1.5:
                qrels.append({"qid": f"{seed}-{q}", "docno": f"d{d}", "label": 1})
    return pd.DataFrame(rows), pd.DataFrame(qrels)


@pytest.mark.parametrize("loss", ["acc", "acc2"])
def test_classification_loss_learns_a_bias(loss):
    res, qrels = _separable()
    model = StructSVM(C=1000.0, loss=loss, features="raw").fit(res, qrels)
    dim = model.encoder_.transform(np.zeros((1, 1)), np.array([0, 1])).dim
    assert model.ranker_.needs_bias and model.layout_.dim == dim + 1 == len(model.coef_)
    assert model.feature_names_[-1] == "bias"
    test, test_qrels = _separable(seed=1)
    x = np.stack(test["features"].to_numpy())[:, 0]
    decision = model.decision_function(x[:, None], np.array([0, len(x)]))
    acc = np.mean((decision > 0) == (x > 1.5))
    assert acc >= 0.95                               # without the bias the threshold is pinned at 0
    assert model.coef_[-1] < 0
    # the bias is constant per candidate: transform's scores are w·φ without it, shifted by b
    from pyterrier_svmmap.frames import candidates_from_frame
    c = candidates_from_frame(model.transform(test))
    no_bias = model.encoder_.transform(c.raw, c.offsets).dot(model.coef_[:-1])
    np.testing.assert_allclose(c.frame["score"].to_numpy(), no_bias + model.coef_[-1])


def test_ranking_losses_get_no_bias():
    res, qrels = _separable()
    model = StructSVM(C=1.0, loss="map", features="raw").fit(res, qrels)
    dim = model.encoder_.transform(np.zeros((1, 1)), np.array([0, 1])).dim
    assert not model.ranker_.needs_bias and len(model.coef_) == dim == model.layout_.dim


def test_default_systems_are_the_issues_learners():
    """``--systems default`` (the command's default) runs every learner the papers compare, under the
    names results.json uses; ``all`` adds SVM-map's feature options; a list is taken as given."""
    assert sysreg.parse_names("default") == EXPECTED
    from pyterrier_svmmap.cli.reproduce import DEFAULT_SYSTEMS
    assert sysreg.parse_names(DEFAULT_SYSTEMS) == EXPECTED
    assert set(sysreg.parse_names("all")) == set(EXPECTED) | {"svm-map-raw", "svm-map-bins", "svm-map-allbins", "svm-map-prior",
                                                              "svm-map-cv", "svm-map-noavg", "svm-map-alpha0.6"}
    assert sysreg.parse_names(" svm-map, adarank ") == ["svm-map", "adarank"]
    with pytest.raises(ValueError, match="at least one"):
        sysreg.parse_names(" , ")
