"""``svmmap reproduce --folds K --repeats R``: k-fold splits over all judged queries, and the row of the
base function chosen per split on its training and validation queries (``base-chosen-on-training``)."""
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap.experiments.reproduce.evaluation import aggregate
from pyterrier_svmmap.experiments.reproduce.trials import CHOSEN_BASE, choose_bases, run_trials
from pyterrier_svmmap.experiments.reproduce.experiment import Split, make_folds, role_counts


# ------------------------------------------------------------------------------------------
# the splits
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,folds,repeats", [(93, 5, 2), (10, 3, 3), (17, 4, 1), (7, 7, 2)])
def test_every_query_is_tested_exactly_repeats_times(n, folds, repeats):
    qids = [f"q{i}" for i in range(n)]
    splits = make_folds(qids, folds=folds, repeats=repeats, seed=4)
    assert [s.trial for s in splits] == list(range(folds * repeats))
    assert [(s.repeat, s.fold) for s in splits] == [(r, k) for r in range(repeats) for k in range(folds)]
    counts = role_counts(splits, qids)
    assert set(counts["test"].values()) == {repeats}
    assert set(counts["valid"].values()) == {repeats}                 # the next fold validates
    assert set(counts["train"].values()) == {repeats * (folds - 2)}
    for s in splits:
        assert set(s.train) | set(s.valid) | set(s.test) == set(qids)
        assert len(s.train) + len(s.valid) + len(s.test) == n        # the three roles are disjoint
        assert list(s.train) == sorted(s.train) and list(s.test) == sorted(s.test)


def test_folds_of_a_repeat_are_disjoint_covering_and_balanced():
    qids = [str(i) for i in range(23)]
    splits = make_folds(qids, folds=5, repeats=2, seed=0)
    for r in range(2):
        tests = [s.test for s in splits if s.repeat == r]
        assert sorted(q for t in tests for q in t) == sorted(qids)   # covering, and disjoint (no repeat)
        assert {len(t) for t in tests} == {4, 5}                      # 23 = 3 × 5 + 2 × 4
        for k, s in enumerate(s for s in splits if s.repeat == r):
            assert s.valid == tests[(k + 1) % 5]                      # validation: the next fold
    # the repeats shuffle differently
    assert {s.test for s in splits[:5]} != {s.test for s in splits[5:]}


def test_folds_are_deterministic_per_seed():
    qids = [str(i) for i in range(30)]
    a = make_folds(qids, folds=5, repeats=2, seed=1)
    assert a == make_folds(qids, folds=5, repeats=2, seed=1)
    assert a != make_folds(qids, folds=5, repeats=2, seed=2)
    # the first repeat does not depend on how many repeats follow
    assert make_folds(qids, folds=5, repeats=1, seed=1) == a[:5]


def test_folds_without_validation_train_on_the_other_folds():
    qids = [str(i) for i in range(10)]
    splits = make_folds(qids, folds=2, repeats=1, seed=0, valid_fold=False)
    assert all(s.valid == () and set(s.train) == set(qids) - set(s.test) for s in splits)


@pytest.mark.parametrize("kwargs,message", [(dict(folds=2), "--folds must be at least 3"),
                                            (dict(folds=5, repeats=0), "--repeats must be at least 1"),
                                            (dict(folds=11), "cannot be split into 11 folds")])
def test_impossible_folds_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_folds([str(i) for i in range(10)], **kwargs)


# ------------------------------------------------------------------------------------------
# the chosen base, by hand
# ------------------------------------------------------------------------------------------
# Six queries, four documents each, d0 the only relevant one. Base A ranks d0 first on q0–q2 (AP 1) and
# last on q3–q5 (AP 1/4); base B ranks it second on q0–q2 (AP 1/2) and first on q3–q5 (AP 1).
AP = {"A": {"q0": 1, "q1": 1, "q2": 1, "q3": .25, "q4": .25, "q5": .25},
      "B": {"q0": .5, "q1": .5, "q2": .5, "q3": 1, "q4": 1, "q5": 1}}
SPLITS = [
    Split(0, ("q0", "q1"), ("q2",), ("q3", "q4", "q5")),       # A: 1 vs 1/2
    Split(1, ("q3", "q4"), ("q0",), ("q1", "q2", "q5")),       # B: 1/2 vs 5/6
    Split(2, ("q0",), ("q3", "q4"), ("q1", "q2", "q5")),       # B on train+valid (A on training alone)
    Split(3, ("q0", "q1", "q2"), ("q3", "q4"), ("q5",)),       # tie (5/8 each): the first base, A
]


def _collection():
    scores = {"A": {True: [4, 3, 2, 1], False: [1, 4, 3, 2]},    # key: query in q0–q2
              "B": {True: [3, 4, 2, 1], False: [4, 3, 2, 1]}}
    runs, cands = {"A": [], "B": []}, []
    for q in range(6):
        for d in range(4):
            f = [scores[b][q < 3][d] for b in ("A", "B")]
            cands.append({"qid": f"q{q}", "query": "x", "docno": f"d{d}", "features": np.array(f, float)})
            for b, v in zip(("A", "B"), f):
                runs[b].append({"qid": f"q{q}", "docno": f"d{d}", "score": float(v)})
    qrels = pd.DataFrame([{"qid": f"q{q}", "docno": "d0", "label": 1} for q in range(6)])
    return pd.DataFrame(cands), qrels, {b: pd.DataFrame(r) for b, r in runs.items()}


class _LikeB:
    """A 'learner' that ranks by base B's score, whatever it is trained on."""

    def fit(self, *args):
        return self

    def transform(self, res):
        return res.assign(score=[f[1] for f in res["features"]])


def test_choose_bases_uses_training_and_validation_queries_and_the_first_on_ties():
    base_pq = {b: pd.DataFrame({"map": pd.Series(ap)}) for b, ap in AP.items()}
    assert choose_bases(base_pq, SPLITS) == {0: "A", 1: "B", 2: "B", 3: "A"}
    swapped = {b: base_pq[b] for b in ("B", "A")}
    assert choose_bases(swapped, SPLITS)[3] == "B"                   # the tie follows the order


def test_chosen_base_row_measured_on_the_test_queries_and_compared_with_svm_map():
    cands, qrels, runs = _collection()
    chosen = {}
    per_trial, _ = run_trials(cands, qrels, SPLITS, {"svm-map": _LikeB}, runs, progress=False, chosen=chosen)
    assert chosen == {0: "A", 1: "B", 2: "B", 3: "A"}
    rows = per_trial[per_trial["system"] == CHOSEN_BASE]
    assert set(rows["kind"]) == {"chosen"}
    got = {(t, q): ap for t, q, ap in zip(rows["trial"], rows["qid"], rows["map"])}
    want = {(s.trial, q): AP[chosen[s.trial]][q] for s in SPLITS for q in s.test}
    assert got == pytest.approx(want) and len(got) == len(want)
    s = aggregate(per_trial, "svm-map", {"svm-map": [0.1] * 4}).set_index("name")
    # per-query means over the trials testing the query: q1 .5, q2 .5, q3 .25, q4 .25, q5 (.25+1+1+.25)/4
    assert s.loc[CHOSEN_BASE, "map"] == pytest.approx((.5 + .5 + .25 + .25 + .625) / 5)
    # svm-map ranks like B: 1/2 on q1, q2 (ties), 1 on q3–q5 (wins)
    assert (s.loc[CHOSEN_BASE, "wins"], s.loc[CHOSEN_BASE, "losses"]) == (3, 0)
    assert list(s["kind"]) == ["learned", "unsupervised", "unsupervised", "chosen", "base", "base"]
    # the best base in hindsight is another row: B, MAP (.5 + .5 + 1 + 1 + 1) / 5
    assert s.loc["B", "map"] == pytest.approx(0.8)
    # the unsupervised rows get their gain over the chosen base, as learned ones do
    assert {n: s.loc[n, "gain_vs_chosen"] for n in ("fusion-rrf", "fusion-combsum")} == pytest.approx(
        {n: s.loc[n, "map"] - s.loc[CHOSEN_BASE, "map"] for n in ("fusion-rrf", "fusion-combsum")})


def test_fusion_rows_rank_the_candidates_by_their_fused_scores():
    cands, qrels, runs = _collection()
    per_trial, _ = run_trials(cands, qrels, SPLITS, {}, runs, progress=False)
    rrf = per_trial[per_trial["system"] == "fusion-rrf"]
    assert set(rrf["kind"]) == {"unsupervised"} and len(rrf) == sum(len(s.test) for s in SPLITS)
    # q3–q5: A puts d1, d2, d3, d0 and B d0, d1, d2, d3: 1/64 + 1/61 puts d0 second, behind d1 (1/61 + 1/62)
    later = rrf[rrf["qid"].isin(["q3", "q4", "q5"])]
    assert list(later["map"]) == pytest.approx([0.5] * len(later))


def test_no_base_runs_no_chosen_row():
    cands, qrels, _ = _collection()
    per_trial, _ = run_trials(cands, qrels, SPLITS[:1], {"svm-map": _LikeB}, {}, progress=False)
    assert set(per_trial["system"]) == {"svm-map"}


# ------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra,message", [
    (["--folds", "5", "--train", "10"], "--train belongs to random splits"),
    (["--folds", "5", "--trials", "3", "--valid", "2"], "--trials, --valid belong to random splits"),
    (["--repeats", "2"], "--repeats needs --folds"),
    (["--folds", "2"], "--folds must be at least 3"),
    (["--folds", "3", "--repeats", "0"], "--repeats must be at least 1"),
    (["--jobs", "2", "--workers", "2"], "give one of them"),
    (["--workers", "0"], "--workers must be at least 1"),
])
def test_option_conflicts_are_one_line_errors_before_any_work(tmp_path, capsys, extra, message):
    from pyterrier_svmmap.cli import main
    out = tmp_path / "out"
    assert main(["reproduce", "--collection", str(tmp_path), "--out", str(out), "--systems", "svm-map",
                 "--no-progress", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not out.exists()


def test_reproduce_folds_end_to_end_and_resume(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is needed for the base runs")
    from tests.helpers import _write_collection
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.cli import main
    import pyterrier_svmmap.experiments.reproduce.experiment as experiment
    import pyterrier_svmmap.experiments.systems as systems
    from pyterrier_svmmap.experiments.reproduce.trials import _Trials
    monkeypatch.setitem(systems.SYSTEMS, "svm-map", lambda: SVMMap(C=[1.0], n_bins=10))
    monkeypatch.setattr(experiment, "_save_pictures", lambda out, models: None)
    coll = _write_collection(tmp_path / "c", n_topics=10)
    out = tmp_path / "out"
    argv = ["reproduce", "--collection", str(coll), "--out", str(out), "--folds", "3", "--repeats", "2",
            "--systems", "svm-map", "--no-progress", "--jobs", "1"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "2 × 3-fold cross-validation" in table and CHOSEN_BASE in table
    notes = [line.split(":")[0] for line in table.splitlines() if line.startswith((f"{CHOSEN_BASE}:", "unsupervised:"))]
    assert notes == [CHOSEN_BASE, "unsupervised"] * 3                 # under each of the three tables
    res = json.loads((out / "results.json").read_text())
    assert (res["protocol"], res["folds"], res["repeats"], res["trials"]) == ("folds", 3, 2, 6)
    assert res["train"] is None and res["valid"] is None
    assert sum(res["chosen_bases"].values()) == 6
    per_trial = pd.read_csv(out / "per_trial.csv", dtype={"qid": str})
    for system, rows in per_trial.groupby("system"):
        assert Counter(rows["qid"]) == {str(q): 2 for q in range(1, 11)}, system   # each query tested twice
    names = [s["name"] for s in res["systems"]]
    assert names[0] == "svm-map" and names[3] == CHOSEN_BASE and len(names) == 20
    splits = json.loads((out / "splits.json").read_text())
    assert [(s["repeat"], s["fold"]) for s in splits["splits"]] == [(r, k) for r in range(2) for k in range(3)]

    # a split is a split: the re-run reuses every checkpoint and gives the same results
    fits = []
    real_fit = _Trials._fit_and_test
    monkeypatch.setattr(_Trials, "_fit_and_test", lambda self, *a: fits.append(a[1].trial) or real_fit(self, *a))
    assert main(argv) == 0
    assert fits == []
    again = json.loads((out / "results.json").read_text())
    for r in (res, again):
        r.pop("timings")
    assert again == res
