"""Tests of ``svmmap reproduce``: readers, splits, aggregation, and an end-to-end run on Vaswani."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pyterrier_svmmap.experiments.reproduce.base_runs import (clean_query, iter_trec_docs, read_trec_qrels,
                                                   read_trec_topics)
from pyterrier_svmmap.experiments.reproduce.evaluation import aggregate, compare, per_query_means
from pyterrier_svmmap.experiments.reproduce.experiment import make_splits, role_counts


# ------------------------------------------------------------------------------------------
# readers
# ------------------------------------------------------------------------------------------
def test_trec_docs_from_string():
    text = ("<DOC>\n<DOCNO> 1 </DOCNO>\nhello   world\n</DOC>\n"
            "<DOC><DOCNO>d2</DOCNO>second <B>doc</B>\ntext</DOC>")
    docs = list(iter_trec_docs(text))
    assert docs == [{"docno": "1", "text": "hello world"}, {"docno": "d2", "text": "second doc text"}]


def test_trec_docs_without_docno_is_an_error():
    with pytest.raises(ValueError):
        list(iter_trec_docs("<DOC>no number</DOC>"))


def test_trec_topics_from_string():
    text = ("<top>\n<num>1</num><title>\nMEASUREMENT OF (DIELECTRIC) CONSTANT: liquids?\n</title>\n</top>\n"
            "<top><num> 27 </num><title>Two words</title></top>")
    t = read_trec_topics(text)
    assert list(t["qid"]) == ["1", "27"]
    assert list(t["query"]) == ["measurement of dielectric constant liquids", "two words"]


def test_clean_query_removes_pisa_syntax():
    assert clean_query('a:b "c" (d) e-f') == "a b c d e f"


def test_trec_qrels_from_string():
    q = read_trec_qrels("1 0 1239 1\n1 0 1502 1\n\n2 0 7 0\n")
    assert q.to_dict("records") == [{"qid": "1", "docno": "1239", "label": 1},
                                    {"qid": "1", "docno": "1502", "label": 1},
                                    {"qid": "2", "docno": "7", "label": 0}]
    with pytest.raises(ValueError):
        read_trec_qrels("1 0 1239\n")


# ------------------------------------------------------------------------------------------
# splits
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,trials,train,valid", [(93, 50, 10, 5), (20, 7, 3, 2), (16, 50, 10, 5)])
def test_splits_are_balanced_and_disjoint(n, trials, train, valid):
    qids = [f"q{i}" for i in range(n)]
    splits = make_splits(qids, trials=trials, train=train, valid=valid, seed=3)
    assert len(splits) == trials
    for s in splits:
        assert len(s.train) == train and len(s.valid) == valid and len(s.test) == n - train - valid
        assert set(s.train) | set(s.valid) | set(s.test) == set(qids)
        assert not (set(s.train) & set(s.valid)) and not (set(s.test) & set(s.train + s.valid))
    counts = role_counts(splits, qids)
    test = np.array(list(counts["test"].values()))
    valid_c = np.array(list(counts["valid"].values()))
    train_c = np.array(list(counts["train"].values()))
    assert test.max() - test.min() <= 1
    assert valid_c.max() - valid_c.min() <= 1
    assert train_c.max() - train_c.min() <= 2
    assert test.sum() == trials * (n - train - valid)


def test_splits_are_deterministic_per_seed():
    qids = [str(i) for i in range(40)]
    a = make_splits(qids, trials=5, train=10, valid=5, seed=1)
    b = make_splits(qids, trials=5, train=10, valid=5, seed=1)
    c = make_splits(qids, trials=5, train=10, valid=5, seed=2)
    assert a == b
    assert a != c


def test_splits_need_test_queries():
    with pytest.raises(ValueError):
        make_splits([str(i) for i in range(15)], trials=2, train=10, valid=5)


# ------------------------------------------------------------------------------------------
# aggregation
# ------------------------------------------------------------------------------------------
def _long(system, kind, values):
    """values: {(trial, qid): ap}; the other measures are ap/2."""
    return pd.DataFrame([{"system": system, "kind": kind, "trial": t, "qid": q, "map": v,
                          "ndcg_cut_10": v / 2, "recip_rank_10": v / 2}
                         for (t, q), v in values.items()])


def test_aggregation_averages_per_query_then_over_queries():
    # q1 tested in trials 0 and 1, q2 only in trial 1: per-query means 0.3 and 0.8 → MAP 0.55
    # (a mean over all rows would give (0.2 + 0.4 + 0.8)/3 = 0.4667)
    df = pd.concat([_long("svm-map", "learned", {(0, "q1"): 0.2, (1, "q1"): 0.4, (1, "q2"): 0.8}),
                    _long("bm25", "base", {(0, "q1"): 0.1, (1, "q1"): 0.1, (1, "q2"): 0.9})])
    pq = per_query_means(df)
    assert pq.loc[("svm-map", "q1"), "map"] == pytest.approx(0.3)
    s = aggregate(df, "svm-map", {"svm-map": [1.0, 3.0, 10.0]}).set_index("name")
    assert s.loc["svm-map", "map"] == pytest.approx(0.55)
    assert s.loc["svm-map", "ndcg_cut_10"] == pytest.approx(0.275)
    assert s.loc["bm25", "map"] == pytest.approx(0.5)
    assert (s.loc["bm25", "wins"], s.loc["bm25", "losses"]) == (1, 1)   # q1: .3 > .1, q2: .8 < .9
    assert s.loc["svm-map", "fit_seconds"] == pytest.approx(3.0)        # median
    assert (s.loc["svm-map", "wins"], s.loc["svm-map", "p_value"]) == (0, 1.0)
    assert list(s.index[:1]) == ["svm-map"]                              # learned systems first


def test_compare_wilcoxon_against_scipy():
    from scipy.stats import wilcoxon
    rng = np.random.default_rng(0)
    ref = pd.Series(rng.random(30), index=[f"q{i}" for i in range(30)])
    other = ref - 0.05 + 0.1 * rng.random(30) * (np.arange(30) % 3 == 0)
    r = compare(ref, other)
    d = ref - other
    assert r["wins"] == int((d > 0).sum()) and r["losses"] == int((d < 0).sum())
    assert r["p_value"] == pytest.approx(wilcoxon(ref, other).pvalue)
    # clearly better on every query → significant; identical → p = 1, no W/L
    assert compare(ref + 0.1, ref)["p_value"] < 0.05
    assert compare(ref, ref.copy()) == {"wins": 0, "losses": 0, "p_value": 1.0}


def test_compare_aligns_on_query_ids():
    ref = pd.Series([0.9, 0.1], index=["a", "b"])
    other = pd.Series([0.5, 0.2], index=["b", "a"])   # a: .9 > .2 win; b: .1 < .5 loss
    r = compare(ref, other)
    assert (r["wins"], r["losses"]) == (1, 1)


# ------------------------------------------------------------------------------------------
# end to end on a Vaswani subset
# ------------------------------------------------------------------------------------------
def _write_subset(vaswani: Path, dest: Path, n_docs=2000, n_queries=20):
    docs = []
    for d in iter_trec_docs(vaswani / "docs.trec"):
        docs.append(d)
        if len(docs) == n_docs:
            break
    kept = {d["docno"] for d in docs}
    qrels = read_trec_qrels(vaswani / "qrels")
    qrels = qrels[qrels["docno"].isin(kept)]
    topics = read_trec_topics(vaswani / "topics.trec")
    qids = [q for q in topics["qid"] if q in set(qrels["qid"])][:n_queries]
    topics = topics[topics["qid"].isin(qids)]
    # one extra topic without relevant documents: must be left out
    extra = next(q for q in read_trec_topics(vaswani / "topics.trec")["qid"] if q not in set(qrels["qid"]))
    all_topics = read_trec_topics(vaswani / "topics.trec")
    topics = pd.concat([topics, all_topics[all_topics["qid"] == extra]])
    dest.mkdir()
    (dest / "docs.trec").write_text("".join(f"<DOC>\n<DOCNO>{d['docno']}</DOCNO>\n{d['text']}\n</DOC>\n"
                                            for d in docs))
    (dest / "topics.trec").write_text("".join(f"<top>\n<num>{r.qid}</num><title>\n{r.query}\n</title>\n</top>\n"
                                              for r in topics.itertuples()))
    (dest / "qrels").write_text("".join(f"{r.qid} 0 {r.docno} {r.label}\n"
                                        for r in qrels[qrels["qid"].isin(qids)].itertuples()))
    return qids


def test_reproduce_end_to_end_on_vaswani_subset(tmp_path, monkeypatch, capsys, vaswani_dir):
    pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is needed for the base runs")
    from pyterrier_svmmap.cli import main
    import pyterrier_svmmap.experiments.systems as systems

    coll = tmp_path / "coll"
    qids = _write_subset(vaswani_dir, coll)
    from pyterrier_svmmap import SVMMap
    monkeypatch.setitem(systems.SYSTEMS, "svm-map", lambda: SVMMap(C=[0.1, 1.0], n_bins=10))
    out = tmp_path / "out"
    argv = ["reproduce", "--collection", str(coll), "--trials", "2", "--train", "4", "--valid", "2",
            "--out", str(out), "--no-progress", "--systems", "svm-map"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "svm-map" in table and "bm25.porter2.terrier" in table

    assert (out / "tables.md").exists() and "Table 9 form" in (out / "tables.md").read_text()
    if importlib.util.find_spec("matplotlib"):
        assert (out / "systems.png").stat().st_size > 1000
        assert (out / "svm-map-contributions.png").stat().st_size > 1000
    res = json.loads((out / "results.json").read_text())
    assert {k: res[k] for k in ("collection", "trials", "train", "valid", "seed")} == \
        {"collection": str(coll), "trials": 2, "train": 4, "valid": 2, "seed": 0}
    assert res["n_queries"] == len(qids) and res["queries_left_out"] == 1
    names = [s["name"] for s in res["systems"]]
    # svm-map, the two unsupervised fusions, the base chosen per trial on its training and validation queries,
    # 16 base functions
    assert names[0] == "svm-map" and sorted(names[1:3]) == ["fusion-combsum", "fusion-rrf"]
    assert names[3] == "base-chosen-on-training" and len(names) == 20 and len(set(names)) == 20
    bases = [s for s in res["systems"] if s["kind"] == "base"]
    assert sum(res["chosen_bases"].values()) == 2 and set(res["chosen_bases"]) <= {s["name"] for s in bases}
    assert res["protocol"] == "random"
    splits = json.loads((out / "splits.json").read_text())["splits"]
    assert [s["chosen_base"] in res["chosen_bases"] for s in splits] == [True, True]
    assert res["best_base"] == max(bases, key=lambda s: s["map"])["name"]
    for s in res["systems"]:
        assert set(s) >= {"name", "kind", "map", "ndcg_cut_10", "recip_rank_10", "wins", "losses", "p_value"}
        assert s["kind"] in ("learned", "unsupervised", "chosen", "base")
        assert ("gain_vs_chosen" in s) == (s["kind"] in ("learned", "unsupervised"))
        assert 0.0 <= s["map"] <= 1.0 and 0.0 <= s["ndcg_cut_10"] <= 1.0 and 0.0 <= s["p_value"] <= 1.0
        assert s["wins"] + s["losses"] <= len(qids)
        assert ("fit_seconds" in s) == (s["kind"] == "learned")
    assert all(s["map"] > 0.05 for s in bases)   # PISA retrieved something sensible
    # the learned placeholder ranks like one of the base functions: its MAP is within their range
    learned = res["systems"][0]
    assert min(s["map"] for s in bases) - 1e-9 <= learned["map"] <= max(s["map"] for s in bases) + 1e-9

    # second run reuses the cached indices and runs
    assert main(argv) == 0
    res2 = json.loads((out / "results.json").read_text())
    assert res2["timings"]["index_seconds"] == 0.0 and res2["timings"]["runs_seconds"] == 0.0
    assert [s["map"] for s in res2["systems"]] == [s["map"] for s in res["systems"]]


def test_unknown_system_is_a_usage_error(tmp_path, capsys):
    from pyterrier_svmmap.cli import main
    assert main(["reproduce", "--collection", str(tmp_path), "--systems", "nope"]) == 2
    assert "unknown system" in capsys.readouterr().err


def test_missing_collection_files_is_a_usage_error(tmp_path, capsys):
    from pyterrier_svmmap.cli import main
    assert main(["reproduce", "--collection", str(tmp_path), "--systems", "svm-map",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "docs.trec" in err or "svm-map" in err


def test_worker_thread_limit_covers_lightgbm():
    """threadpoolctl limits only the libraries loaded when it is entered; LightGBM is imported lazily by the
    first LambdaMART fit, so the limit must load it first (without that, each --jobs worker's first
    LambdaMART fit ran LightGBM on every core: 60 s instead of ~1 s). In a fresh process: nothing imported."""
    import subprocess
    import sys
    pytest.importorskip("lightgbm")
    pytest.importorskip("threadpoolctl")
    code = ("from pyterrier_svmmap.experiments.reproduce.trials import _thread_limit\n"
            "from threadpoolctl import threadpool_info\n"
            "with _thread_limit(1):\n"
            "    import lightgbm\n"
            "    print(sorted({i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openmp'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[1]"


@pytest.mark.parametrize("name", ["lambdamart", "mcrank"])
def test_registry_lightgbm_learners_train_on_one_thread(name):
    """The comparison's LightGBM learners are given one thread explicitly: in forked trial workers the
    threadpoolctl limit alone left LightGBM's OpenMP pool stalling (fits of ~1 s took 30–70 s)."""
    pytest.importorskip("lightgbm")
    from pyterrier_svmmap.experiments.systems import resolve
    est = resolve([name])[name]()
    rng = np.random.default_rng(0)
    offsets = np.arange(0, 121, 20)
    raw, labels = rng.normal(size=(120, 3)), rng.integers(0, 3, 120).astype(float)
    ranker = est.ranker_class(**est.get_params(deep=False)).fit(raw, labels, offsets)
    assert ranker.booster_.params["num_threads"] == 1
    assert "n_jobs=1" in repr(est).replace("'n_jobs': 1", "n_jobs=1")
