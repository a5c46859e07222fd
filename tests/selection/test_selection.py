"""Model selection (pyterrier_svmmap.selection): the grids, the folds, the rule that picks, the evidence."""
import math

import numpy as np
import pytest

from pyterrier_svmmap import selection
from pyterrier_svmmap.selection import engine
from pyterrier_svmmap.selection import (AUTO_FEATURES, c_grid, cv_folds, feature_options, features_name,
                                        first_best, select)
from pyterrier_svmmap.selection import SELECTION_C_GRID, choose, evidence_source, max_gain_pvalue, paired_t
from pyterrier_svmmap.svm.ranker import StructSVMRanker


def test_the_rule_takes_the_first_maximum_and_ranks_nan_lowest():
    assert first_best([0.2, 0.5, 0.5, 0.1]) == 1
    assert first_best([float("nan"), 0.1, None]) == 1
    assert first_best([float("nan"), float("nan")]) == 0           # nothing scored: the first setting


def test_select_records_the_evidence_of_the_choice():
    folds = np.array([[0.1, 0.3], [0.2, 0.4]])
    choice = select(folds.mean(axis=0), "cv", folds)
    assert choice.chosen == 1 and choice.method == "cv" and choice.fold_scores is folds
    assert choice.scores == [pytest.approx(0.15), pytest.approx(0.35)]
    assert all(isinstance(s, float) for s in choice.scores)
    none = select([None], "none")
    assert none.chosen == 0 and math.isnan(none.scores[0])
    with pytest.raises(ValueError, match="method"):
        select([0.1], "best")


def test_one_function_chooses_for_both_protocols_and_the_grid_searches(monkeypatch):
    """selection.rule.choose is the one function that picks a setting: the paper's protocol (on validation
    queries and by cross-validation), the default's and the other learners' grid searches (select) all call
    it, and what it returns is what they keep."""
    from pyterrier_svmmap.selection import engine, rule
    calls = []

    def last(evidence, fallback=None, alpha=0.5, seed=0, levels=None):   # a rule that keeps the last setting
        calls.append(alpha)
        n = np.asarray(evidence).shape[1]
        return rule.Choice(n - 1, n - 1, 0.0, None, None, None, None, alpha, len(evidence))
    monkeypatch.setattr(engine, "choose", last)
    monkeypatch.setattr(rule, "choose", last)
    assert select([0.9, 0.1], "validation").chosen == 1 and calls == [None]
    train, valid = _planted(0, 15, helpful=True), _planted(1, 5, helpful=True)
    grid = [0.01, 0.1, 1.0]
    on_valid = StructSVMRanker(C=grid, features="raw").fit(*train, valid=valid)
    by_cv = StructSVMRanker(C=grid, features="raw").fit(*train)
    auto = StructSVMRanker(C=grid, features="raw", prior="best", selection="auto").fit(*train)
    assert calls == [None, None, None, 0.5]
    assert on_valid.C_ == by_cv.C_ == auto.C_ == 1.0          # the last setting, not the best one


def test_cv_folds_deal_shuffled_queries_round_robin():
    fold = cv_folds(11, 3, random_state=0, n_settings=2)
    assert sorted(np.bincount(fold)) == [3, 4, 4]
    assert np.array_equal(fold, cv_folds(11, 3, random_state=0, n_settings=2))
    assert not np.array_equal(fold, cv_folds(11, 3, random_state=1, n_settings=2))
    with pytest.raises(ValueError, match="needs at least 5 usable training queries"):
        cv_folds(4, 5, random_state=0, n_settings=6)


def test_grids_and_feature_options():
    assert c_grid(1) == [1.0] and c_grid([0.1, 10]) == [0.1, 10.0]
    for bad in ([], [0.0], [1.0, 1.0], "x", [float("inf")]):
        with pytest.raises(ValueError):
            c_grid(bad)
    assert feature_options("auto") == list(AUTO_FEATURES)
    assert feature_options(("bins", "raw")) == [("bins", "raw")]
    assert features_name(("bins", "raw")) == "bins+raw" == features_name("bins+raw")


# =================================================================================================
# the package's default rule, selection="auto" (select_auto, choose, max_gain_pvalue): the fallback base
# function is kept when learning shows no evidence, replaced when it clearly does
# =================================================================================================


# -- the default rule (selection="auto"): the array rule ---------------------------------------------------------------------------------
def test_cv_folds_balanced_and_seeded():
    f = cv_folds(17, 5, 3, n_settings=8)
    assert sorted(np.bincount(f)) == [3, 3, 3, 4, 4]
    assert (f == cv_folds(17, 5, 3, n_settings=8)).all()
    with pytest.raises(ValueError):
        cv_folds(3, 5, 0, n_settings=8)
    with pytest.raises(ValueError, match="at least 2 folds"):
        cv_folds(10, 1, 0, n_settings=8)


def test_paired_t():
    assert paired_t(np.array([0.1, 0.1, 0.1])) == np.inf
    assert paired_t(np.zeros(4)) == 0.0
    assert paired_t(np.array([0.2])) == 0.0
    d = np.array([0.1, -0.05, 0.2, 0.0])
    assert paired_t(d) == pytest.approx(d.mean() / (d.std(ddof=1) / 2))


def test_evidence_source():
    assert evidence_source(5, 50) == "cv"
    assert evidence_source(0, 50) == "cv"
    assert evidence_source(157, 50) == "validation"


def test_choose_argmax_without_fallback():
    E = np.array([[0.1, 0.5, 0.5], [0.2, 0.4, 0.4]])
    c = choose(E, None)
    assert c.index == 1 and c.best == 1 and not c.fallback          # first of equal maxima


def test_choose_keeps_fallback_on_noise():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.1, 0.6, size=10)
    noise = base[:, None] + rng.normal(0, 0.1, size=(10, 8))      # settings no better than the base
    noise -= noise.mean(axis=0) - base.mean() - 0.002             # each a hair above on average
    c = choose(noise, base, alpha=0.5)
    assert c.fallback and c.index == -1 and c.gain > 0 and c.p_value > 0.5


def test_choose_takes_a_clear_gain():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.1, 0.6, size=10)
    E = np.stack([base + 0.05 + rng.normal(0, 0.01, 10), base - 0.02], axis=1)
    c = choose(E, base, alpha=0.5)
    assert not c.fallback and c.index == 0 and c.t > 5 and c.p_value < 0.01


def test_choose_never_falls_back_to_a_loss():
    base = np.array([0.3, 0.4, 0.5])
    assert choose(base[:, None] - 0.1, base, alpha=1.0).fallback   # a negative gain never replaces the base


def test_max_gain_pvalue():
    assert max_gain_pvalue(np.full((6, 2), -0.1)) == 1.0
    assert max_gain_pvalue(np.full((6, 1), 0.1)) == 1 / 64          # exact: only the identity reaches it
    one = np.zeros((20, 1))
    one[3] = 0.01                                                   # one query differs: p = 1/2
    assert max_gain_pvalue(one) == pytest.approx(0.5, abs=0.03)
    rng = np.random.default_rng(0)
    # calibrated under the null, whatever the number of settings: P(p <= 0.5) is about 0.5
    ps = [max_gain_pvalue(rng.normal(0, 0.1, size=(15, 30)), n_flips=500, seed=i) for i in range(200)]
    assert 0.38 < np.mean(np.array(ps) <= 0.5) < 0.62
    assert 0.0 < np.mean(np.array(ps) <= 0.1) < 0.2
    assert max_gain_pvalue(rng.normal(0, 0.1, size=(15, 30)) + 0.1) < 0.01


# -- the ranker with selection="auto" ----------------------------------------------------------------
def _planted(seed, n_q, helpful, n=60, F=4):
    """Base function 0 is informative; with ``helpful`` functions 1 and 2 carry independent evidence too,
    so a combination clearly beats any single function; without, they are pure noise."""
    rng = np.random.default_rng(seed)
    raws, labels, offsets = [], [], [0]
    for _ in range(n_q):
        y = (rng.random(n) < 0.15).astype(float)
        y[0], y[1] = 1.0, 0.0
        X = rng.normal(size=(n, F))
        X[:, 0] += 1.0 * y
        if helpful:
            X[:, 1] += 1.2 * y
            X[:, 2] += 1.2 * y
        raws.append(X)
        labels.append(y)
        offsets.append(offsets[-1] + n)
    return np.vstack(raws), np.concatenate(labels), np.array(offsets)


def _auto(**kw):
    return StructSVMRanker(C=list(SELECTION_C_GRID), features="raw", prior="best", selection="auto", **kw)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_base_is_best_returns_the_base_function(seed):
    # one informative function and 9 of noise: any learned combination is overfitted noise
    r = _auto().fit(*_planted(seed, 15, helpful=False, F=10), valid=_planted(seed + 10, 5, helpful=False, F=10))
    assert r.selection_ == "cv" and r.choice_["fallback"] and r.C_ == 0.0
    assert r.prior_function_ == r.base_names_[0]
    raw, _, offsets = _planted(99, 3, helpful=False, F=10)
    # the model ranks exactly as base function 0 does
    for q in range(3):
        s = r.decision_function(raw, offsets)[offsets[q]:offsets[q + 1]]
        assert (np.argsort(-s, kind="stable") == np.argsort(-raw[offsets[q]:offsets[q + 1], 0], kind="stable")).all()
    assert r.path_[-1]["fallback"] and len(r.path_[-1]["cv_scores"]) == 5


def test_planted_learning_helps_is_learned():
    r = _auto().fit(*_planted(0, 15, helpful=True), valid=_planted(1, 5, helpful=True))
    assert r.selection_ == "cv" and not r.choice_["fallback"] and r.C_ > 0
    assert r.choice_["gain"] > 0.05 and r.choice_["p_value"] <= r.fallback_alpha
    assert abs(r.coef_[1]) > 0 and abs(r.coef_[2]) > 0


def test_large_validation_set_is_the_evidence():
    r = _auto(min_valid_queries=20).fit(*_planted(0, 30, helpful=True), valid=_planted(1, 25, helpful=True))
    assert r.selection_ == "validation" and not r.choice_["fallback"]
    assert r.choice_["n_queries"] == 25


def test_auto_state_round_trip():
    r = _auto().fit(*_planted(0, 15, helpful=True), valid=_planted(1, 5, helpful=True))
    meta, arrays = r.get_state()
    back = StructSVMRanker.from_state(meta, arrays)
    raw, _, offsets = _planted(3, 4, helpful=True)
    assert np.array_equal(back.decision_function(raw, offsets), r.decision_function(raw, offsets))
    assert back.choice_ == r.choice_ and back.selection == "auto"


def test_auto_parameters_validated():
    for kwargs, message in ((dict(selection="best"), "selection must be one of"),
                            (dict(prior="auto", selection="validation"), "prior='auto'.*needs selection='auto'"),
                            (dict(selection="auto", fallback_alpha=0.0), r"fallback_alpha \(the level .*\) must be in \(0, 1\]"),
                            (dict(selection="auto", min_valid_queries=0), "min_valid_queries must be")):
        with pytest.raises(ValueError, match=message):
            StructSVMRanker(**kwargs).check_params()


def test_auto_keeps_working_with_the_reliability_fixes(capsys):
    train, valid = _planted(0, 15, helpful=True), _planted(1, 5, helpful=True)
    # verbose: the progress lines name every cv fold's fits and the refit
    r = _auto(verbose=True).fit(*train, valid=valid)
    err = capsys.readouterr().err
    assert "cv fold 4, features=raw C=1000" in err and r.choice_ is not None
    # validation that cannot choose (no relevant candidate): a warning, then CV over the training queries alone
    vr, vl, vo = valid
    with pytest.warns(UserWarning, match="no validation candidate is relevant"):
        blind = _auto().fit(*train, valid=(vr, np.zeros_like(vl), vo))
    alone = _auto().fit(*train)
    assert blind.selection_ == "cv" and np.array_equal(blind.coef_, alone.coef_)
    assert blind.training_summary_["selection_queries"] == 15
    # a single setting is trained as given: nothing to select, no choice_
    single = StructSVMRanker(C=1.0, features="raw", prior="best", selection="auto").fit(*train, valid=valid)
    assert not hasattr(single, "choice_") and single.selection_ == "validation"


def test_select_auto_records_are_coherent():
    r = _auto().fit(*_planted(0, 15, helpful=True), valid=_planted(1, 5, helpful=True))
    assert len(r.path_) == len(SELECTION_C_GRID) + 1 and r.path_[-1]["fallback"]
    assert r.choice_["chosen"] == r.path_[r.choice_["best"]] and r.choice_["source"] == r.selection_ == "cv"
    assert r.choice_["averaged_models"] == 6                      # 5 fold models and the refit
    assert r.validation_ == {p["C"]: p["validation"] for p in r.path_[:-1]}
    assert r.C_ == r.choice_["chosen"]["C"] and r.coefs_.shape[0] == SELECTION_C_GRID.index(r.C_) + 1


def test_model_files_keep_the_paper_protocol_format_and_old_models_load_as_it(tmp_path):
    import json
    from pathlib import Path
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.cli.learn import save_ranker
    raw, y, off = _planted(0, 15, helpful=True)
    paper = StructSVMRanker(C=[0.1, 1.0], features="raw").fit(raw, y, off)
    save_ranker(paper, tmp_path / "paper", "pyterrier_svmmap.estimator:SVMMap")
    doc = json.loads((tmp_path / "paper" / "model.json").read_text())
    for params in (doc["params"], doc["state"]["params"]):       # written as before the rule existed
        assert not {"selection", "fallback_alpha", "min_valid_queries", "average_folds"} & set(params)
    loaded = SVMMap.load(tmp_path / "paper")
    assert loaded.selection == "validation" and loaded.fallback_alpha == 0.5 and loaded.average_folds is True
    auto = _auto().fit(raw, y, off)
    save_ranker(auto, tmp_path / "auto", "pyterrier_svmmap.estimator:SVMMap")
    back = SVMMap.load(tmp_path / "auto")
    assert back.selection == "auto" and back.choice_ == auto.choice_ and back.selection_ == "cv"
    assert np.array_equal(back.decision_function(raw, off), auto.decision_function(raw, off))
    old = SVMMap.load(Path(__file__).resolve().parents[1] / "golden" / "saved_models" / "vaswani-svmmap")
    assert old.selection == "validation" and old.features == "bins" and old.prior is None


def test_svmmap_learn_runs_the_rule_when_asked(tmp_path, capsys):
    from pathlib import Path
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.cli import main
    train = Path(__file__).resolve().parents[2] / "examples" / "letor_train.txt"
    assert main(["learn", "--selection", "auto", "--prior", "best", "--raw", "--cv", "2", "-c", "0.001,1",
                 str(train), str(tmp_path / "m")]) == 0
    model = SVMMap.load(tmp_path / "m")
    assert model.selection == "auto" and model.prior == "best" and model.choice_["source"] == "cv"
    assert main(["learn", "--selection", "auto", "--prior", "best", "--raw", "--cv", "2", "-c", "0.001,1",
                 "--workers", "2", str(train), str(tmp_path / "m2")]) == 0       # the rule's fits on a cluster
    on_cluster = SVMMap.load(tmp_path / "m2")
    assert on_cluster.choice_ == model.choice_ and np.array_equal(on_cluster.ranker_.coef_, model.ranker_.coef_)
    assert main(["learn", "--prior", "auto", str(train), str(tmp_path / "m3")]) == 2   # needs --selection auto


def _even_queries(n_q, n, seed):
    """(raw, labels, offsets, Queries): n_q queries of n candidates, 3 uniform base functions, ~30 % relevant
    and each query's first candidate relevant."""
    from pyterrier_svmmap.queries import Queries
    rng = np.random.default_rng(seed)
    raw = rng.random((n_q * n, 3))
    labels = (rng.random(n_q * n) < 0.3).astype(float)
    labels[::n] = 1.0
    offsets = np.arange(0, n_q * n + 1, n, dtype=np.int64)
    return raw, labels, offsets, Queries(raw, labels, offsets)


def test_cross_validate_trains_every_setting_once_per_fold_and_scores_only_held_out_queries():
    """A path that 'learns' base function j for setting j: each held-out query's AP is that function's AP on
    it, every fold trains every setting once on the other folds, and the fallback is measured beside."""
    from pyterrier_svmmap.features.layout import EncodedQueries, FeatureLayout
    from pyterrier_svmmap.measures import average_precision
    from pyterrier_svmmap.svm.cutting_plane import TrainingResult
    n = 15
    raw, labels, offsets, queries = _even_queries(12, n, seed=0)
    calls = []

    def train_path(q, grid, setting, fold, shards, encoded):
        calls.append((setting, fold, q.n_queries, encoded.X.n_rows, tuple(grid)))
        w = np.eye(encoded.layout.dim)[setting]         # the raw block's column of base function `setting`
        return encoded.layout, [TrainingResult(w=w * C, converged=True, history=[], C=C, group_C=np.array([C]))
                                for C in grid], None

    layout = FeatureLayout.fit(raw, offsets, "raw", 5)          # one layout, shared by the folds
    encoded = EncodedQueries.of(layout, raw, offsets)
    held = selection.cross_validate(queries, [0, 2], [[1.0, 2.0], [3.0, 4.0]], train_path, [encoded, encoded], 4, 0,
                                    fallback=lambda tr: (FeatureLayout.fit(tr.raw, tr.offsets, "raw", 5),
                                                         np.eye(6)[1], 1))
    # 9 training queries (3 held out) a fold, their 9 × 15 rows of the shared φ, each setting's own C values
    assert sorted(calls) == sorted((s, k, 9, 9 * n, g) for s, g in ((0, (1.0, 2.0)), (2, (3.0, 4.0)))
                                   for k in range(4))
    assert all(np.array_equal(w[0], np.eye(6)[s] * g) for s, g, ws in ((0, 1.0, held.fold_weights[0]),
                                                                        (2, 3.0, held.fold_weights[1])) for w in ws)
    assert sorted(np.bincount(held.fold).tolist()) == [3, 3, 3, 3]
    ap = [average_precision(raw[:, j], labels, offsets) for j in range(3)]
    assert np.allclose(held.ap, np.stack([ap[0], ap[0], ap[2], ap[2]], axis=1))        # scale of w: same ranking
    assert np.allclose(held.fallback_ap, ap[1])
    assert held.fold_means()[1].tolist() == [float(held.ap[held.fold == 1, c].mean()) for c in range(4)] + [
        float(held.fallback_ap[held.fold == 1].mean())]


def test_each_folds_held_out_ranking_breaks_ties_by_that_folds_reference_function(monkeypatch):
    """A path and a fallback of w = 0 tie every candidate: each held-out query is then ranked by its fold's own
    tie-break function (the reference function of the fold's training queries), as per_query_ap ranks it."""
    from pyterrier_svmmap.features.layout import EncodedQueries, FeatureLayout
    from pyterrier_svmmap.svm.cutting_plane import TrainingResult
    raw, labels, offsets, queries = _even_queries(16, 20, seed=5)
    ties = [2, 0, 1, 2]
    monkeypatch.setattr(engine, "fold_best_functions", lambda *a: ties)
    layout = FeatureLayout.fit(raw, offsets, "raw", 5)
    zero = np.zeros(layout.dim)

    def train_path(q, grid, setting, fold, shards, encoded):
        return encoded.layout, [TrainingResult(w=zero, converged=True, history=[], C=C, group_C=np.array([C]))
                                for C in grid], None
    held = engine.cross_validate(queries, [("raw", None)], [[1.0]], train_path,
                                 [EncodedQueries.of(layout, raw, offsets)], 4, 0, fallback=lambda tr: (layout, zero, 0))
    for k, f in enumerate(ties):
        part = queries.subset(held.fold == k)
        want = selection.per_query_ap(layout, np.eye(layout.dim)[f], part, f)       # function f alone ranks
        assert np.array_equal(held.ap[held.fold == k, 0], want)
        assert np.array_equal(held.fallback_ap[held.fold == k], want)
    assert len({tuple(held.ap[held.fold == k, 0]) for k in range(4)}) > 1


# -- levels of model classes: a richer class must beat the simpler one's choice --------------------------------
def _evidence(gains, n=30, seed=0):
    """Per-query APs: a fallback column and one column per gain (its mean advantage over the fallback, with
    per-query noise)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, n)
    return np.stack([base + g + rng.normal(0, 0.01, n) for g in gains], axis=1), base


def test_a_richer_level_replaces_the_simpler_choice_only_with_evidence_against_it():
    E, fb = _evidence([0.05, 0.04, 0.0, 0.0])
    swing = np.resize([0.0102, -0.01], len(fb))            # level 1 a hair above level 0 on average: noise
    E[:, 2], E[:, 3] = E[:, 0] + swing, E[:, 0] - swing
    c = choose(E, fb, 0.5, levels=[[0, 1], [2, 3]])
    assert c.index == 0 and c.best == 2
    assert [s["accepted"] for s in c.steps] == [True, False]
    assert c.steps[0]["against"] == -1 and c.steps[1]["against"] == 0 and c.steps[1]["best"] == 2
    assert c.p_value == c.steps[0]["p_value"] and c.gain == pytest.approx(c.steps[0]["gain"])
    E, fb = _evidence([0.05, 0.04, 0.12, 0.02])           # level 1 clearly better: it is chosen
    c = choose(E, fb, 0.5, levels=[[0, 1], [2, 3]])
    assert c.index == 2 and [s["accepted"] for s in c.steps] == [True, True]
    assert c.p_value == c.steps[1]["p_value"] and c.gain == pytest.approx(c.steps[1]["gain"])


def test_a_richer_level_can_win_when_the_simpler_one_does_not_beat_the_fallback():
    E, fb = _evidence([-0.02, -0.01, 0.08, 0.01])
    c = choose(E, fb, 0.5, levels=[[0, 1], [2, 3]])
    assert c.index == 2 and [s["accepted"] for s in c.steps] == [False, True]
    assert c.steps[1]["against"] == -1                     # compared with the fallback, still the choice
    E, fb = _evidence([-0.02, -0.01, -0.03, -0.01])
    c = choose(E, fb, 0.5, levels=[[0, 1], [2, 3]])
    assert c.fallback and c.p_value == c.steps[0]["p_value"] == 1.0


def test_without_a_test_or_a_fallback_the_levels_start_from_the_arg_max():
    E, fb = _evidence([0.05, 0.04, 0.0, 0.0])
    swing = np.resize([0.0102, -0.01], len(fb))
    E[:, 2], E[:, 3] = E[:, 0] + swing, E[:, 0] - swing
    assert choose(E, fb, None, levels=[[0, 1], [2, 3]]).index == 2           # alpha=None: the plain arg-max
    c = choose(E, None, 0.5, levels=[[0, 1], [2, 3]])                        # no fallback: level 0's arg-max
    assert c.index == 0 and len(c.steps) == 1 and not c.steps[0]["accepted"]
    assert choose(E, fb, 0.5).index == 2                                     # one level: the arg-max vs fallback


def test_the_levels_follow_the_model_class_of_each_setting():
    settings = [("raw", "best"), ("bins", "best"), ("bins+raw", None), ("minmax", None)]
    assert selection.setting_levels(settings, 2) == [[0, 1, 6, 7], [2, 3, 4, 5]]
    assert [selection.model_class(f) for f, _ in settings] == [0, 1, 1, 0]


def test_a_richer_level_is_tested_against_every_setting_tried_so_far():
    # level 0 rejected against the fallback; level 1's test counts level 0's columns too (they had their
    # chance to win), so its p-value is the max-gain test over all columns, not over level 1's alone
    E, fb = _evidence([0.004, -0.004, 0.006], n=12, seed=3)
    c = choose(E, fb, 0.5, levels=[[0, 1], [2]])
    assert c.steps[0]["against"] == -1 and c.steps[1]["against"] == (0 if c.steps[0]["accepted"] else -1)
    current = fb if not c.steps[0]["accepted"] else E[:, 0]
    assert c.steps[1]["p_value"] == max_gain_pvalue(E - current[:, None])
    assert c.steps[1]["p_value"] >= max_gain_pvalue(E[:, [2]] - current[:, None])


# -- racing: the richer model classes go on to every fold only when they beat the simpler choice on the first
def _two_sided(seed, n_q, n=60, F=3):
    """Relevant candidates have an extreme score of function 0 on either side: a step function of the score
    (bins) ranks them, no linear one does."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n_q * n) < 0.15).astype(float)
    y[::n], y[1::n] = 1.0, 0.0
    raw = rng.normal(size=(n_q * n, F))
    raw[:, 0] += 3.0 * y * rng.choice([-1.0, 1.0], n_q * n)
    return raw, y, np.arange(0, n_q * n + 1, n)


def _search(data, race):
    from pyterrier_svmmap.queries import Queries
    from pyterrier_svmmap.selection import engine, features_name
    raw, y, off = data
    ranker = StructSVMRanker(C="auto", features="auto", prior="best", selection="auto", n_bins=10)
    ranker.base_names_ = [f"f{i}" for i in range(raw.shape[1])]
    calls = []

    def train_path(queries, grid, setting, fold, shards, encoded):
        calls.append((features_name(setting[0]), fold))
        return ranker.train_path(queries, grid, setting, fold, shards, encoded)
    found = engine.search(Queries(raw, y, off), None, [(f, "best") for f in AUTO_FEATURES], "auto", train_path,
                          ranker._make_layout, engine.Protocol.auto(race=race), cv=5)
    return found, calls


@pytest.mark.parametrize("data,richer_wins", [(_planted(0, 20, helpful=True, F=8), False), (_two_sided(0, 20), True)])
def test_racing_chooses_what_the_plain_search_chooses(data, richer_wins):
    plain, plain_calls = _search(data, race=False)
    raced, raced_calls = _search(data, race=True)
    assert raced.selection.chosen == plain.selection.chosen and np.array_equal(raced.coef, plain.coef)
    assert (plain.settings[plain.setting][0] != "raw") == richer_wins
    folds = {f: sorted(k for g, k in raced_calls if g == f and k is not None) for f in AUTO_FEATURES}
    assert folds["raw"] == [0, 1, 2, 3, 4]
    assert folds["bins"] == folds["bins+raw"] == ([0, 1, 2, 3, 4] if richer_wins else [0, 1])
    assert len(plain_calls) == 16 and len(raced_calls) == (16 if richer_wins else 10)
    if not richer_wins:          # the settings that lost the race have no score: they were not held out everywhere
        lost = [p for p in raced.path() if p["features"] != "raw" and not p.get("fallback")]
        assert all(math.isnan(p["validation"]) for p in lost)
        assert all(math.isnan(p["cv_scores"][4]) and not math.isnan(p["cv_scores"][0]) for p in lost)
        assert len(plain.choice.steps) == 2 and len(raced.choice.steps) == 1     # the richer level is not tested
