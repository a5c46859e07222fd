"""``svmmap reproduce`` is never silently wrong: content-keyed caches, atomic writes, argument checks,
one-line errors on Ctrl-C and offline datasets, checkpointed trials that resume to the same results.

The collections are small synthetic ones (words w0..w59, relevant = holds two of the query's words),
indexed by PISA in a fraction of a second.
"""
import json
import logging
import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is needed for the base runs")

from pyterrier_svmmap.cli import main  # noqa: E402
from pyterrier_svmmap.experiments.reproduce import base_runs as br  # noqa: E402
from pyterrier_svmmap.experiments.reproduce.trials import TrialStore, _Trials, estimator_signature  # noqa: E402
from pyterrier_svmmap.experiments.reproduce.evaluation import Evaluator, MEASURES
from pyterrier_svmmap.experiments.reproduce.base_runs import load_directory  # noqa: E402
from tests.helpers import _docs_text, _write_collection  # noqa: E402

NAMES = ["bm25.none.none", "dph.porter2.terrier"]      # two base runs: one per index


# ------------------------------------------------------------------------------------------
# 1. the cache is keyed on the collection's content
# ------------------------------------------------------------------------------------------
def test_replacing_docs_in_the_same_folder_recomputes_indices_and_runs(tmp_path):
    coll = _write_collection(tmp_path / "c", n_docs=100)
    runs1, _ = br.base_runs(load_directory(coll), tmp_path / "out", names=NAMES)
    assert all(int(d[1:]) < 100 for r in runs1.values() for d in r["docno"])
    (coll / "docs.trec").write_text(_docs_text(300))           # same first 100 docs, 200 more
    (tmp_path / "out" / "indices" / ".none.killed.building").mkdir()   # left by a killed build
    runs2, _ = br.base_runs(load_directory(coll), tmp_path / "out", names=NAMES)
    for name in NAMES:       # the larger collection is searched: documents beyond d99 are retrieved
        assert any(int(d[1:]) >= 100 for d in runs2[name]["docno"]), name
    assert sorted(p.name for p in (tmp_path / "out" / "indices").iterdir()) == ["none", "porter2"]


def test_irds_content_key_follows_topics_and_qrels(monkeypatch):
    pytest.importorskip("ir_datasets")
    import pyterrier as pt
    from pyterrier_svmmap.experiments.reproduce.base_runs import load_irds

    class FakeDataset:
        def __init__(self, label):
            self.label = label

        def get_topics(self):
            return pd.DataFrame({"qid": ["1"], "query": ["Hello, world"]})

        def get_qrels(self):
            return pd.DataFrame({"qid": ["1"], "docno": ["d1"], "label": [self.label]})
    monkeypatch.setattr(pt, "get_dataset", lambda name: FakeDataset(1))
    a = load_irds("irds:fake")
    assert list(a.topics["query"]) == ["hello world"]
    assert load_irds("irds:fake").content_key() == a.content_key()
    monkeypatch.setattr(pt, "get_dataset", lambda name: FakeDataset(2))
    assert load_irds("irds:fake").content_key() != a.content_key()


def test_same_content_elsewhere_reuses_the_cache_and_depth_is_part_of_the_key(tmp_path, monkeypatch):
    a = _write_collection(tmp_path / "a")
    b = _write_collection(tmp_path / "b")                        # identical files, other folder
    runs_a, _ = br.base_runs(load_directory(a), tmp_path / "out", names=NAMES)
    calls = []
    real = br._retrieve
    monkeypatch.setattr(br, "_retrieve", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    runs_b, timings = br.base_runs(load_directory(b), tmp_path / "out", names=NAMES)
    assert calls == [] and timings["runs_seconds"] == 0.0
    for name in NAMES:
        pd.testing.assert_frame_equal(runs_a[name], runs_b[name])
    runs_c, _ = br.base_runs(load_directory(b), tmp_path / "out", names=NAMES, num_results=5)
    assert sorted(calls) == sorted(NAMES)
    assert all(r.groupby("qid").size().max() <= 5 for r in runs_c.values())


def test_cache_keys_change_with_every_input(tmp_path):
    coll = load_directory(_write_collection(tmp_path / "c"))
    topics = coll.topics
    key = br.run_key(coll, topics, "bm25.none.none", 1000)
    assert key == br.run_key(load_directory(tmp_path / "c"), topics.copy(), "bm25.none.none", 1000)
    others = [br.run_key(coll, topics, "bm25.porter2.none", 1000),      # stemmer
              br.run_key(coll, topics, "bm25.none.terrier", 1000),      # stopwords
              br.run_key(coll, topics, "qld.none.none", 1000),          # weighting model
              br.run_key(coll, topics, "bm25.none.none", 999),          # depth
              br.run_key(coll, topics.iloc[1:], "bm25.none.none", 1000),  # topics
              br.run_key(coll, topics.assign(query=topics["query"] + " w1"), "bm25.none.none", 1000)]
    assert len({key, *others}) == len(others) + 1
    (tmp_path / "c" / "qrels").write_text((tmp_path / "c" / "qrels").read_text() + "1 0 d0 0\n")
    assert load_directory(tmp_path / "c").content_key() != coll.content_key()


def test_pisa_parameters_are_part_of_the_run_key(tmp_path, monkeypatch):
    coll = load_directory(_write_collection(tmp_path / "c"))
    key = br.run_key(coll, coll.topics, "bm25.none.none", 1000)
    monkeypatch.setitem(br.PARAMS, "bm25", {"bm25_k1": 1.2, "bm25_b": 0.75})
    assert br.run_key(coll, coll.topics, "bm25.none.none", 1000) != key


# ------------------------------------------------------------------------------------------
# 2. atomic writes, unreadable files, empty runs, argument checks
# ------------------------------------------------------------------------------------------
def test_truncated_run_file_is_recomputed_with_a_warning(tmp_path, caplog):
    coll = load_directory(_write_collection(tmp_path / "c"))
    runs1, _ = br.base_runs(coll, tmp_path / "out", names=NAMES)
    f = tmp_path / "out" / "runs" / f"{NAMES[0]}.pkl"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])         # an interrupted in-place write
    with caplog.at_level(logging.WARNING):
        runs2, _ = br.base_runs(coll, tmp_path / "out", names=NAMES)
    assert any("unreadable" in r.message and NAMES[0] in r.message for r in caplog.records)
    pd.testing.assert_frame_equal(runs1[NAMES[0]], runs2[NAMES[0]])
    assert pickle.loads(f.read_bytes())["run"].equals(runs2[NAMES[0]])   # and rewritten whole


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    f = tmp_path / "x.bin"
    br.atomic_write_bytes(f, b"old")

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(br.os, "replace", boom)
    with pytest.raises(OSError):
        br.atomic_write_bytes(f, b"new content")
    assert f.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]          # no temporary file left


def test_a_run_that_retrieves_nothing_is_an_error_and_not_cached(tmp_path):
    c = _write_collection(tmp_path / "c")
    (c / "topics.trec").write_text("<top><num>1</num><title>zebra</title></top>\n")  # no such word
    (c / "qrels").write_text("1 0 d1 1\n")
    with pytest.raises(ValueError, match="retrieved no document"):
        br.base_runs(load_directory(c), tmp_path / "out", names=NAMES[:1])
    assert not list((tmp_path / "out" / "runs").glob("*.pkl"))


def test_threads_zero_is_rejected_by_base_runs(tmp_path):
    coll = load_directory(_write_collection(tmp_path / "c"))
    with pytest.raises(ValueError, match="--threads must be at least 1"):
        br.base_runs(coll, tmp_path / "out", names=NAMES, threads=0)
    assert not list((tmp_path / "out").rglob("*.pkl"))


@pytest.mark.parametrize("option,value", [("--threads", "0"), ("--depth", "0"), ("--trials", "0"),
                                          ("--train", "0"), ("--valid", "-1"), ("--jobs", "0"),
                                          ("--seed", "-1")])
def test_impossible_options_are_one_line_errors_before_any_work(tmp_path, capsys, option, value):
    coll = _write_collection(tmp_path / "c")
    out = tmp_path / "out"
    argv = ["reproduce", "--collection", str(coll), "--out", str(out), "--trials", "2", "--train", "3",
            "--valid", "2", "--systems", "svm-map", "--no-progress", option, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{option} must be at least" in err and value in err
    assert not out.exists()                                         # nothing indexed, nothing cached


def test_offline_dataset_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    pytest.importorskip("ir_datasets")
    import pyterrier as pt

    def offline(*a, **k):
        raise RuntimeError("All download sources failed", [("http://example", ConnectionError("no\nnet"))])
    monkeypatch.setattr(pt, "get_dataset", offline)
    assert main(["reproduce", "--dataset", "irds:vaswani", "--out", str(tmp_path / "o"),
                 "--systems", "svm-map"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "irds:vaswani" in err and "All download sources failed" in err


# ------------------------------------------------------------------------------------------
# 3-4. Ctrl-C: one line, status 130, finished trials kept; the re-run gives the same results
# ------------------------------------------------------------------------------------------
@pytest.fixture
def tiny_svm_map(monkeypatch):
    """svm-map with one C and 10 bins; no pictures (matplotlib takes longer than the trials)."""
    from pyterrier_svmmap import SVMMap
    import pyterrier_svmmap.experiments.reproduce.experiment as experiment
    import pyterrier_svmmap.experiments.systems as systems
    monkeypatch.setitem(systems.SYSTEMS, "svm-map", lambda: SVMMap(C=[1.0], n_bins=10))
    monkeypatch.setattr(experiment, "_save_pictures", lambda out, models: None)


def _argv(coll, out, jobs=1):
    return ["reproduce", "--collection", str(coll), "--out", str(out), "--trials", "4", "--train", "4",
            "--valid", "2", "--systems", "svm-map", "--no-progress", "--jobs", str(jobs)]


def _main_no_escape(argv):
    try:
        return main(argv)
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped from svmmap reproduce")


def _comparable(out: Path) -> dict:
    """results.json without what is measured in wall-clock time."""
    res = json.loads((out / "results.json").read_text())
    res.pop("timings")
    for s in res["systems"]:
        s.pop("fit_seconds", None)
    return res


def test_interrupt_during_retrieval_is_one_line_and_status_130(tmp_path, capsys, monkeypatch):
    coll = _write_collection(tmp_path / "c")

    def interrupted_native_call(*a, **k):            # what PISA does on Ctrl-C
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("<built-in function retrieve> returned a result with an exception set")
    monkeypatch.setattr(br, "base_runs", interrupted_native_call)
    assert _main_no_escape(_argv(coll, tmp_path / "out")) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "interrupted; 0 finished trials are kept in" in err and "re-run the same command" in err


def test_other_system_errors_are_not_taken_for_an_interrupt(tmp_path, monkeypatch):
    coll = _write_collection(tmp_path / "c")

    def broken(*a, **k):
        raise SystemError("a real bug")
    monkeypatch.setattr(br, "base_runs", broken)
    with pytest.raises(SystemError, match="a real bug"):
        main(_argv(coll, tmp_path / "out"))


@pytest.mark.parametrize("jobs", [1, 2])
def test_interrupted_reproduce_resumes_to_the_uninterrupted_results(tmp_path, capsys, monkeypatch,
                                                                    tiny_svm_map, jobs):
    coll = _write_collection(tmp_path / "c")
    assert _main_no_escape(_argv(coll, tmp_path / "whole", jobs)) == 0

    k = 2
    real_run = _Trials.run
    fits = []

    def run_until_k(self, split, keep_models):
        if split.trial == k:
            raise KeyboardInterrupt
        return real_run(self, split, keep_models)
    monkeypatch.setattr(_Trials, "run", run_until_k)
    capsys.readouterr()
    assert _main_no_escape(_argv(coll, tmp_path / "resumed", jobs)) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    n = int(re.search(r"interrupted; (\d+) finished trials are kept in ", err).group(1))
    assert n >= k if jobs > 1 else n == k
    assert not (tmp_path / "resumed" / "results.json").exists()

    monkeypatch.setattr(_Trials, "run", real_run)
    real_fit = _Trials._fit_and_test
    monkeypatch.setattr(_Trials, "_fit_and_test", lambda self, *a: fits.append(a[1].trial) or real_fit(self, *a))
    assert _main_no_escape(_argv(coll, tmp_path / "resumed", 1)) == 0
    assert len(fits) == 4 - n and all(t >= k for t in fits)           # finished trials not refitted
    assert _comparable(tmp_path / "resumed") == _comparable(tmp_path / "whole")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "resumed" / "per_trial.csv"),
                                  pd.read_csv(tmp_path / "whole" / "per_trial.csv"))


def test_unreadable_checkpoint_is_recomputed_and_others_reused(tmp_path, capsys, tiny_svm_map, monkeypatch,
                                                               caplog):
    coll = _write_collection(tmp_path / "c")
    out = tmp_path / "out"
    assert main(_argv(coll, out)) == 0
    first = _comparable(out)
    files = sorted((out / "trials").glob("*.pkl"))
    assert len(files) == 4                                            # one per (trial, system)
    files[0].write_bytes(b"not a pickle")
    stale = out / "trials" / f".{files[1].name}.x1y2.tmp"             # a killed worker's unfinished write
    stale.write_bytes(b"half")
    fits = []
    real_fit = _Trials._fit_and_test
    monkeypatch.setattr(_Trials, "_fit_and_test", lambda self, *a: fits.append(a[1].trial) or real_fit(self, *a))
    with caplog.at_level(logging.WARNING):
        assert main(_argv(coll, out)) == 0
    assert len(fits) == 1 and any("unreadable" in r.message for r in caplog.records)
    assert not stale.exists()
    assert _comparable(out) == first


def test_checkpoints_are_not_reused_for_another_depth_or_estimator(tmp_path, capsys, tiny_svm_map, monkeypatch):
    from pyterrier_svmmap import SVMMap
    import pyterrier_svmmap.experiments.systems as systems
    coll = _write_collection(tmp_path / "c")
    out = tmp_path / "out"
    assert main(_argv(coll, out)) == 0
    fits = []
    real_fit = _Trials._fit_and_test
    monkeypatch.setattr(_Trials, "_fit_and_test", lambda self, *a: fits.append(a[1].trial) or real_fit(self, *a))
    assert main(_argv(coll, out) + ["--depth", "5"]) == 0
    assert len(fits) == 4
    monkeypatch.setitem(systems.SYSTEMS, "svm-map", lambda: SVMMap(C=[1.0], n_bins=10, binning="minmax"))
    assert main(_argv(coll, out)) == 0
    assert len(fits) == 8


# ------------------------------------------------------------------------------------------
# trial keys
# ------------------------------------------------------------------------------------------
class _Hidden:
    """An estimator whose repr hides its parameter (as ``LambdaMART(**params)`` did)."""

    def __init__(self, a):
        self.a = a

    def __repr__(self):
        return "Hidden()"


def test_estimator_signature_sees_parameters_repr_hides_and_no_addresses():
    from pyterrier_svmmap import ApproxAP
    import pyterrier_svmmap.experiments.systems as systems
    acc, acc3 = systems.SYSTEMS["svm-acc"](), systems.SYSTEMS["svm-acc3"]()    # differ in binning only
    assert estimator_signature(acc) != estimator_signature(acc3)
    assert estimator_signature(_Hidden(1)) != estimator_signature(_Hidden(2))
    assert estimator_signature(ApproxAP()) == estimator_signature(ApproxAP())
    assert "0x" not in estimator_signature(ApproxAP())
    assert estimator_signature(ApproxAP(n_iter=3)) != estimator_signature(ApproxAP())


def test_trial_key_depends_on_split_system_context_and_version(tmp_path, monkeypatch):
    import pyterrier_svmmap._version
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.experiments.reproduce.experiment import make_splits
    s0, s1 = make_splits([str(i) for i in range(10)], trials=2, train=3, valid=2, seed=0)
    store = TrialStore(tmp_path, "ctx")
    key = store.key(s0, "svm-map", SVMMap(C=[1.0]))
    assert key == store.key(s0, "svm-map", SVMMap(C=[1.0]))
    others = {store.key(s1, "svm-map", SVMMap(C=[1.0])),
              store.key(s0, "svm-map2", SVMMap(C=[1.0])),
              store.key(s0, "svm-map", SVMMap(C=[2.0])),
              TrialStore(tmp_path, "ctx2").key(s0, "svm-map", SVMMap(C=[1.0]))}
    monkeypatch.setattr(pyterrier_svmmap._version, "__version__", "0.0.0-other")
    others.add(store.key(s0, "svm-map", SVMMap(C=[1.0])))
    assert key not in others and len(others) == 5


# ------------------------------------------------------------------------------------------
# 5. per-query evaluation: one ir_measures call, the numbers of the former per-row loop
# ------------------------------------------------------------------------------------------
def _per_query_reference(qrels: pd.DataFrame, run: pd.DataFrame, qids) -> pd.DataFrame:
    """The former implementation: a dict built row by row, values written one by one."""
    import ir_measures
    names = {ir_measures.parse_measure(v): k for k, v in MEASURES.items()}
    q = pd.DataFrame({"query_id": qrels["qid"], "doc_id": qrels["docno"], "relevance": qrels["label"]})
    evaluator = ir_measures.evaluator(list(names), q)
    r = {}
    for qid, d, sc in zip(run["qid"].astype(str), run["docno"].astype(str), run["score"].astype(float)):
        if qid in set(qids):
            r.setdefault(qid, {})[d] = sc
    out = pd.DataFrame(0.0, index=pd.Index(list(qids), name="qid"), columns=list(MEASURES))
    for m in evaluator.iter_calc(r):
        if m.query_id in out.index:
            out.at[m.query_id, names[m.measure]] = float(m.value)
    return out


def test_per_query_equals_the_row_by_row_reference():
    rng = np.random.default_rng(5)
    qrels = pd.DataFrame([(str(q), f"d{d}", int(rng.integers(0, 3))) for q in range(8) for d in range(0, 40, 3)],
                         columns=["qid", "docno", "label"])
    rows = [(str(q), f"d{d}", float(rng.integers(0, 5))) for q in range(10) for d in rng.choice(40, 25, replace=False)]
    rows += [("2", "d3", 9.0), ("2", "d3", -1.0)]        # a duplicate: the last score counts, as before
    run = pd.DataFrame(rows, columns=["qid", "docno", "score"]).sample(frac=1.0, random_state=1)
    qids = ["3", "0", "2", "7", "5", "6", "1", "4", "99"]   # 8, 9 not asked for; 99 has no results
    got = Evaluator(qrels).per_query(run, qids)
    want = _per_query_reference(qrels, run, qids)
    assert (want.values > 0).any()
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    empty = Evaluator(qrels).per_query(run.iloc[:0], qids)
    assert list(empty.index) == qids and (empty.values == 0).all()
