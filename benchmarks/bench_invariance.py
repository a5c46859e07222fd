"""The default free of units: the same model, cost and test MAP whatever the features' scales, little harm from
noise columns, and the default's quality and fit time; every number measured in this run.

Usage::

    python benchmarks/bench_invariance.py [--quick] [--only vaswani,mq2008,learn,default,numerics] [--splits N]

Each change of the features (:data:`CHANGES`: rescaled functions, constant columns, noise columns) is fitted
against the original features in the same run; targets: |ΔMAP| ≤ 0.0005 at ≤ 1.5× the time, noise: ΔMAP ≥
−0.005 at ≤ 2× the time (setups and results in docs/performance.md).

* ``vaswani``: ``RunFeatures`` of 4 PISA functions >> ``SVMMap()``, ``--splits`` random splits of 10 training /
  5 validation queries, the rest test;
* ``mq2008``: MQ2008 Fold 1, ``StructSVMRanker`` with ``SVMMap()``'s defaults on train with vali;
* ``learn``: ``svmmap learn`` then ``classify`` on MQ2008 Fold 1 files written with each change;
* ``default``: MQ2008's 5 folds (targets: mean test MAP ≥ 0.485, ≤ 15 s of fitting in all), and on Vaswani's 16
  functions the median seconds per fit of ``SVMMap()`` ÷ the scores as they are, one thread (target ≤ 1.5×);
* ``numerics``: over the sections run before it, the dual QP's step-cap log lines and non-finite scores
  (target: none).

The Vaswani sections build a PISA index and base runs in ``--cache`` the first time. About 5 minutes on 2 cores
once the index is built (``--quick``: one split; about 2).
"""
from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from _common import CLI, DATA, ENV, main, mq2008_folds, quiet, target, timed

from pyterrier_svmmap.measures import letor_mean_average_precision

CHANGES = {
    "f0 × 1e-6": lambda raw, off, rng: scaled(raw, 0, 1e-6),
    "f0 × 1e4": lambda raw, off, rng: scaled(raw, 0, 1e4),
    "f0 × 1e6": lambda raw, off, rng: scaled(raw, 0, 1e6),
    "f2 × 1e6": lambda raw, off, rng: scaled(raw, 2, 1e6),
    "+ constant 1e20": lambda raw, off, rng: np.hstack([raw, np.full((len(raw), 1), 1e20)]),
    "+ per-query constant": lambda raw, off, rng: np.hstack(
        [raw, np.repeat(rng.normal(0, 100, len(off) - 1), np.diff(off))[:, None]]),
    "+ noise × 1e5": lambda raw, off, rng: np.hstack([raw, rng.standard_normal((len(raw), 1)) * 1e5]),
    "+ noise × 1e-3": lambda raw, off, rng: np.hstack([raw, rng.standard_normal((len(raw), 1)) * 1e-3]),
}
SEEN = dict(step_cap=0, scores=0, non_finite=0)


def scaled(raw, f, factor):
    out = raw.copy()
    out[:, f] *= factor
    return out


def changed(name, split, seed):
    return split.raw if name == "original" else CHANGES[name](split.raw, split.offsets, np.random.default_rng(seed))


class StepCap(logging.Handler):
    """Counts the solver's log lines about the dual QP's step cap."""

    def emit(self, record):
        SEEN["step_cap"] += "step cap" in record.getMessage()


def checked(scores):
    SEEN["scores"] += len(scores)
    SEEN["non_finite"] += int((~np.isfinite(scores)).sum())
    return scores


def report(where: str, rows: dict, unit: str):
    """rows: change → (MAP, seconds), the original first; a table and a target line per change."""
    (_, (base_map, base_s)), *rest = rows.items()
    print(f"{'features':<22} {'MAP':>7} {'ΔMAP':>8} {unit:>8} {'× time':>7}")
    print(f"{'original':<22} {base_map:7.4f} {'':>8} {base_s:8.2f}")
    for name, (m, s) in rest:
        print(f"{name:<22} {m:7.4f} {m - base_map:+8.4f} {s:8.2f} {s / base_s:7.2f}")
    for noise, what, slower in ((False, "|ΔMAP| ≤ 0.0005", 1.5), (True, "ΔMAP ≥ −0.005", 2.0)):
        got = [(name, m - base_map, s / base_s) for name, (m, s) in rest if ("noise" in name) == noise]
        dmap = min(got, key=lambda r: r[1] if noise else -abs(r[1]))
        slow = max(got, key=lambda r: r[2])
        ok = all((d >= -0.005 if noise else abs(d) <= 0.0005) and x <= slower for _, d, x in got)
        target(f"{where}, {'every noise column' if noise else 'every change of units'}: {what} (worst "
               f"{dmap[1]:+.4f}, {dmap[0]}) at ≤ {slower:g}× the time (worst {slow[2]:.2f}×, {slow[0]})", ok)


def vaswani_candidates(cache: Path, names=None):
    """(frame of RunFeatures, judged topics, qrels) of Vaswani's base runs ``names`` (default: all 16)."""
    from pyterrier_svmmap import RunFeatures
    from pyterrier_svmmap.experiments.reproduce.base_runs import base_names, base_runs, load_directory
    collection = load_directory(DATA / "vaswani")
    topics, names = collection.judged_topics(), names or base_names()
    runs, _ = base_runs(collection, cache, topics, names=names)
    return RunFeatures({n: runs[n] for n in names}).transform(topics[["qid", "query"]]), topics, collection.qrels


def test_map(model, res, qrels) -> float:
    import ir_measures
    run = model.transform(res)
    checked(run["score"].to_numpy())
    run = run[["qid", "docno", "score"]].rename(columns={"qid": "query_id", "docno": "doc_id"})
    qr = qrels[qrels["qid"].isin(res["qid"].unique())].rename(
        columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return float(ir_measures.calc_aggregate([ir_measures.AP], qr, run)[ir_measures.AP])


def vaswani(args):
    """Vaswani, 4 PISA functions >> SVMMap(): test MAP (mean over splits) and fit seconds (all splits)"""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.frames import candidates_from_frame
    res, topics, qrels = vaswani_candidates(Path(args.cache), [f"{f}.porter2.terrier" for f in ("bm25", "dph",
                                                                                                 "pl2", "qld")])
    cands = candidates_from_frame(res)
    res, qids = cands.frame.reset_index(drop=True), topics["qid"].to_numpy()
    quiet(SVMMap().fit, res[res["qid"].isin(qids[:15])], qrels)             # the kernels loaded before timing
    rows = {}
    for name in ["original"] + list(CHANGES):
        frame = res.copy()
        frame["features"] = list(changed(name, cands, 1))
        maps, seconds = [], 0.0
        for s in range(args.splits or (1 if args.quick else 3)):
            order = np.random.default_rng(s).permutation(len(qids))
            tr, va, te = (frame[frame["qid"].isin(qids[order[a:b]])] for a, b in ((0, 10), (10, 15), (15, None)))
            model, s = timed(quiet, SVMMap().fit, tr, qrels, va, qrels)
            seconds += s
            maps.append(test_map(model, te, qrels))
        rows[name] = (float(np.mean(maps)), seconds)
    report("Vaswani", rows, "fit s")


def fit_default(train, vali, raw_tr, raw_va, **extra):
    """(StructSVMRanker with SVMMap()'s defaults fitted on train with vali, seconds)."""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: v for k, v in SVMMap().get_params().items() if k in StructSVMRanker.MODEL_PARAMS}
    return timed(quiet, StructSVMRanker(**{**params, **extra}).fit, raw_tr, train.labels, train.offsets,
                 valid=(raw_va, vali.labels, vali.offsets))


def mq2008(args):
    """MQ2008 Fold 1, StructSVMRanker with SVMMap()'s defaults: test MAP and fit seconds"""
    fold = mq2008_folds()[1]
    fit_default(fold.train, fold.vali, fold.train.raw, fold.vali.raw)                  # kernels loaded
    rows = {}
    for name in ["original"] + list(CHANGES):
        raw = [changed(name, s, i) for i, s in enumerate((fold.train, fold.vali, fold.test))]
        model, seconds = fit_default(fold.train, fold.vali, raw[0], raw[1])
        scores = checked(model.ranking_scores(raw[2], fold.test.offsets))
        rows[name] = (letor_mean_average_precision(scores, fold.test.labels, fold.test.offsets), seconds)
    report("MQ2008 Fold 1", rows, "fit s")


def write_svmlight(path: Path, split, raw):
    """``raw`` with ``split``'s labels and queries as svmlight lines, every value written exactly (repr)."""
    q = np.repeat(np.arange(split.n_queries), np.diff(split.offsets))
    with open(path, "w") as f:
        for i in range(len(raw)):
            f.write(f"{int(split.labels[i])} qid:{q[i] + 1} " +
                    " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(raw[i])) + "\n")


def learn(args):
    """svmmap learn (default options) then classify, MQ2008 Fold 1: test MAP and the learn's seconds"""
    fold = mq2008_folds()[1]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in ["original"] + list(CHANGES):
            write_svmlight(tmp / "train.txt", fold.train, changed(name, fold.train, 0))
            write_svmlight(tmp / "test.txt", fold.test, changed(name, fold.test, 1))
            seconds = timed(subprocess.run, [sys.executable, "-c", CLI, "learn", "--force", str(tmp / "train.txt"),
                                             str(tmp / "model")], env=ENV, check=True, capture_output=True)[1]
            subprocess.run([sys.executable, "-c", CLI, "classify", str(tmp / "test.txt"), str(tmp / "model"),
                            str(tmp / "pred.txt")], env=ENV, check=True, capture_output=True)
            scores = checked(np.loadtxt(tmp / "pred.txt"))
            rows[name] = (letor_mean_average_precision(scores, fold.test.labels, fold.test.offsets), seconds)
    report("svmmap learn", rows, "learn s")


def default(args):
    """the default's quality and fit time: MQ2008's 5 folds, and Vaswani's 16 functions against raw scores"""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.experiments.reproduce.experiment import make_splits
    from pyterrier_svmmap.selection import SELECTION_C_GRID
    maps, seconds = [], 0.0
    for k, fold in mq2008_folds(range(1, 6)).items():
        if k == 1:
            fit_default(fold.train, fold.vali, fold.train.raw, fold.vali.raw)
        model, s = fit_default(fold.train, fold.vali, fold.train.raw, fold.vali.raw)
        seconds += s
        maps.append(letor_mean_average_precision(checked(model.ranking_scores(fold.test.raw, fold.test.offsets)),
                                                 fold.test.labels, fold.test.offsets))
    print(f"MQ2008 per fold: {' '.join(f'{m:.4f}' for m in maps)}")
    target(f"MQ2008, 5 folds: mean test MAP ≥ 0.485: {np.mean(maps):.4f}", np.mean(maps) >= 0.485)
    target(f"MQ2008, 5 folds: ≤ 15 s of fitting: {seconds:.1f} s", seconds <= 15)
    res, topics, qrels = vaswani_candidates(Path(args.cache))
    splits = args.splits or (1 if args.quick else 10)
    configs = {"SVMMap()": {}, "the scores as they are": dict(C=list(SELECTION_C_GRID), features="raw", normalise=None)}
    times = {k: [] for k in configs}
    for i, split in enumerate(make_splits(topics["qid"].tolist(), trials=splits, seed=0)):
        tr, va = res[res["qid"].isin(split.train)], res[res["qid"].isin(split.valid)]
        for name, params in configs.items():
            if i == 0:
                quiet(SVMMap(**params, n_jobs=1).fit, tr, qrels, va, qrels)
            times[name].append(timed(quiet, SVMMap(**params, n_jobs=1).fit, tr, qrels, va, qrels)[1])
    now, before = (float(np.median(v)) for v in times.values())
    print(f"Vaswani, 16 functions, {splits} splits, one thread: median seconds per fit SVMMap() {now:.2f}, "
          f"the scores as they are {before:.2f}")
    target(f"SVMMap() ≤ 1.5× the fit on the scores as they are: {now / before:.2f}×", now <= 1.5 * before)


def numerics(args):
    """honest numerics over the sections run before this one"""
    target(f"no dual QP at its step cap: {SEEN['step_cap']} log lines", SEEN["step_cap"] == 0)
    target(f"no non-finite score: {SEEN['non_finite']} of {SEEN['scores']}", SEEN["non_finite"] == 0)


if __name__ == "__main__":
    logging.getLogger("pyterrier_svmmap").addHandler(StepCap(logging.WARNING))
    main(__doc__, dict(vaswani=vaswani, mq2008=mq2008, learn=learn, default=default, numerics=numerics), options=[
        (("--splits",), dict(type=int, default=None, help="Vaswani splits (default 3, 10 for `default`; 1 --quick)")),
        (("--cache",), dict(default=str(Path(tempfile.gettempdir()) / "pyterrier-svmmap-bench-invariance")))])
