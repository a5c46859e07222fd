"""``svmmap reproduce``'s first stage (``--first-stage``) and a collection's own split (``split.train`` /
``split.test``)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap.experiments.reproduce.evaluation import aggregate
from pyterrier_svmmap.experiments.reproduce.experiment import file_split


def test_file_split_tests_the_test_queries_and_validates_a_seeded_fifth_of_the_training_ones():
    train = [f"t{i}" for i in range(23)]
    test = ["x1", "x2", "x3"]
    (split,) = file_split(train + test + ["unjudged"], train + ["unjudged-train"], test + ["gone"], seed=3)
    assert split.test == tuple(sorted(test))
    assert len(split.valid) == 23 // 5 and not set(split.valid) & set(split.train)
    assert sorted(split.train + split.valid) == sorted(train)
    assert file_split(train + test, train, test, seed=3) == [split]
    assert file_split(train + test, train, test, seed=4)[0].valid != split.valid
    with pytest.raises(ValueError, match="in both split.train and split.test"):
        file_split(train + test, train, test + ["t0"])
    with pytest.raises(ValueError, match="at least 5 training queries"):
        file_split(train + test, train[:4], test)


def _rows(system, kind, values):
    return pd.DataFrame([{"system": system, "kind": kind, "trial": 0, "qid": q, "map": v, "ndcg_cut_10": v,
                          "recip_rank_10": v} for q, v in values.items()])


def test_every_row_but_the_base_functions_is_compared_with_the_first_stage():
    qs = [f"q{i}" for i in range(8)]
    first = dict(zip(qs, np.linspace(0.1, 0.8, 8)))
    per_trial = pd.concat([_rows("svm-map", "learned", {q: v + 0.1 for q, v in first.items()}),
                           _rows("fusion-rrf", "unsupervised", {q: v - 0.05 for q, v in first.items()}),
                           _rows("base-chosen-on-training", "chosen", first),
                           _rows("bm25", "base", first), _rows("qld", "base", {q: 0.0 for q in qs})])
    s = aggregate(per_trial, "svm-map", {"svm-map": [1.0]}, first_stage="bm25").set_index("name")
    assert s.loc["svm-map", "gain_vs_first"] == pytest.approx(0.1)
    assert (s.loc["svm-map", "vs_first"]["wins"], s.loc["svm-map", "vs_first"]["losses"]) == (8, 0)
    assert s.loc["svm-map", "vs_first"]["p_value"] < 0.05
    assert s.loc["fusion-rrf", "gain_vs_first"] == pytest.approx(-0.05)
    assert s.loc["base-chosen-on-training", "vs_first"] == {"wins": 0, "losses": 0, "p_value": 1.0}
    assert not isinstance(s.loc["qld"].get("vs_first"), dict)
    assert "gain_vs_first" not in aggregate(per_trial, "svm-map", {"svm-map": [1.0]}).columns


@pytest.fixture
def collection(tmp_path):
    pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is needed for the base runs")
    from tests.helpers import _write_collection
    return _write_collection(tmp_path / "c", n_topics=12)


def _run(collection, out, monkeypatch, *extra):
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.cli import main
    import pyterrier_svmmap.experiments.reproduce.experiment as experiment
    import pyterrier_svmmap.experiments.systems as systems
    # a default that always falls back: it ranks exactly as its reference function
    monkeypatch.setitem(systems.SYSTEMS, "svm-map", lambda: SVMMap(C=[0.1, 1.0], features="raw",
                                                                   fallback_alpha=1e-9, cv=3))
    monkeypatch.setattr(experiment, "_save_pictures", lambda out, models: None)
    assert main(["reproduce", "--collection", str(collection), "--out", str(out), "--systems", "svm-map",
                 "--no-progress", "--jobs", "1", *extra]) == 0
    return {s["name"]: s for s in json.loads((out / "results.json").read_text())["systems"]}, \
        json.loads((out / "results.json").read_text())


def test_the_default_starts_from_the_given_first_stage(collection, tmp_path, monkeypatch):
    weak = "qld.none.none"
    systems, res = _run(collection, tmp_path / "out", monkeypatch, "--folds", "3", "--first-stage", weak)
    assert res["first_stage"] == weak and res["protocol"] == "folds"
    # the fallback is the first stage, not the best base function on the training queries
    assert systems["svm-map"]["map"] == pytest.approx(systems[weak]["map"], abs=2e-3)
    assert systems["svm-map"]["gain_vs_first"] == pytest.approx(systems["svm-map"]["map"] - systems[weak]["map"])
    assert set(systems["svm-map"]["vs_first"]) == {"wins", "losses", "p_value"}
    assert "vs_first" in systems["base-chosen-on-training"] and "vs_first" not in systems[weak]


def test_first_stage_none_starts_from_the_best_on_training(collection, tmp_path, monkeypatch):
    systems, res = _run(collection, tmp_path / "out", monkeypatch, "--folds", "3", "--first-stage", "none")
    assert res["first_stage"] is None and "vs_first" not in systems["svm-map"]
    assert systems["svm-map"]["map"] == pytest.approx(systems["base-chosen-on-training"]["map"], abs=2e-3)


def test_an_unknown_first_stage_is_one_line(collection, tmp_path, capsys):
    from pyterrier_svmmap.cli import main
    assert main(["reproduce", "--collection", str(collection), "--out", str(tmp_path / "out"), "--systems",
                 "svm-map", "--no-progress", "--first-stage", "bm99"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--first-stage bm99 is not a base function" in err


def test_a_folder_with_a_split_is_evaluated_on_it(collection, tmp_path, monkeypatch):
    qids = [line.split()[0] for line in (collection / "qrels").read_text().splitlines()]
    qids = list(dict.fromkeys(qids))
    (collection / "split.train").write_text("\n".join(qids[:9]) + "\n")
    (collection / "split.test").write_text("\n".join(qids[9:]) + "\n")
    systems, res = _run(collection, tmp_path / "out", monkeypatch)
    assert res["protocol"] == "split" and res["trials"] == 1
    split = json.loads((tmp_path / "out" / "splits.json").read_text())["splits"][0]
    assert sorted(split["train"] + split["valid"]) == sorted(qids[:9]) and len(split["valid"]) == 1
    per_trial = pd.read_csv(tmp_path / "out" / "per_trial.csv", dtype={"qid": str})
    assert set(per_trial["qid"]) == set(qids[9:])
    # an option of another protocol overrides the split
    _, res = _run(collection, tmp_path / "out2", monkeypatch, "--folds", "3")
    assert res["protocol"] == "folds"
