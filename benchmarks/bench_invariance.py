"""The default on any data: invariance to the features' units, noise columns, quality and fit time, in one run.

Usage::

    python benchmarks/bench_invariance.py [--quick] [--parts vmlqt] [--splits N] [--cache DIR]

Parts (every number is measured in this run; a ratio compares two runs of the same process):

v. Vaswani: ``RunFeatures`` of 4 PISA functions (BM25, DPH, PL2, QL; porter2 stemming, Terrier's stopwords) >>
   ``SVMMap()``, ``--splits`` random splits of 10 training / 5 validation queries (the rest test). For each
   change of the features — one function × 1e-6, × 1e4 or × 1e6, a constant column (1e20), a column constant
   within each query, a column of pure noise N(0, 1) × 1e5 or × 1e-3 — the test MAP (ir_measures' AP over the
   test queries) and the fit seconds against the original features. Targets: invariance |ΔMAP| ≤ 0.0005 at
   ≤ 1.5× the time; noise ΔMAP ≥ −0.005 at ≤ 2× the time.
m. MQ2008 Fold 1: the array-level learner with ``SVMMap()``'s defaults on ``train.txt`` with ``vali.txt``,
   the same changes of the features, test MAP with LETOR 4.0's semantics; the same targets.
l. ``svmmap learn`` with its default options then ``svmmap classify``, on MQ2008 Fold 1 files written with
   the same changes (fresh processes; the seconds are the learn's), the same targets.
q. Quality and fit time of the default: MQ2008's 5 folds (target: mean test MAP ≥ 0.485; all folds ≤ 15 s of
   fitting), and on the main job's candidates (Vaswani, 16 PISA functions, the first ``--splits`` splits of
   ``svmmap reproduce``) the median seconds per fit of ``SVMMap()`` against the configuration the package's
   default had before it was free of units (``SVMMap(C=SELECTION_C_GRID, features="raw", normalise=None)``:
   target ≤ 1.5×), both one thread (as the main job's trials run).
t. Honest numerics: every fit of this run is counted for log lines "the dual QP hit its step cap" (target
   none) and every score for non-finite values (target none).

The Vaswani parts build a PISA index and base runs in ``--cache`` (default: a folder in the temporary
directory) the first time.
"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pyterrier_svmmap.io.svmlight import read_svmlight  # noqa: E402
from pyterrier_svmmap.measures import letor_mean_average_precision  # noqa: E402

DATA = REPO.parent / "shared" / "data"
MQ2008 = DATA / "letor" / "MQ2008"
VASWANI = DATA / "vaswani"

#: the changes of the features: name → f(raw, offsets, rng) → raw'
CHANGES: Dict[str, Callable] = {
    "f0 × 1e-6": lambda raw, off, rng: _scale(raw, 0, 1e-6),
    "f0 × 1e4": lambda raw, off, rng: _scale(raw, 0, 1e4),
    "f0 × 1e6": lambda raw, off, rng: _scale(raw, 0, 1e6),
    "f2 × 1e6": lambda raw, off, rng: _scale(raw, 2, 1e6),
    "+ constant 1e20": lambda raw, off, rng: np.hstack([raw, np.full((len(raw), 1), 1e20)]),
    "+ per-query constant": lambda raw, off, rng: np.hstack(
        [raw, np.repeat(rng.normal(0, 100, len(off) - 1), np.diff(off))[:, None]]),
    "+ noise × 1e5": lambda raw, off, rng: np.hstack([raw, rng.standard_normal((len(raw), 1)) * 1e5]),
    "+ noise × 1e-3": lambda raw, off, rng: np.hstack([raw, rng.standard_normal((len(raw), 1)) * 1e-3]),
}
INVARIANT = [k for k in CHANGES if "noise" not in k]


def _scale(raw, f, factor):
    out = raw.copy()
    out[:, f] *= factor
    return out


class StepCapCounter(logging.Handler):
    """Counts the solver's log lines about the dual QP's step cap."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        if "step cap" in record.getMessage():
            self.count += 1


FINITE = {"scores": 0, "non_finite": 0}


def _checked(scores: np.ndarray) -> np.ndarray:
    FINITE["scores"] += len(scores)
    FINITE["non_finite"] += int((~np.isfinite(scores)).sum())
    return scores


def report(title: str, rows: Dict[str, Tuple[float, float]], unit: str):
    """rows: change → (MAP, seconds); the first row is the original."""
    (base_name, (base_map, base_s)), *rest = rows.items()
    print(f"\n{title}")
    print(f"{'features':<22} {'MAP':>7} {'ΔMAP':>8} {unit:>8} {'× time':>7}  target")
    print(f"{base_name:<22} {base_map:7.4f} {'':>8} {base_s:8.2f} {'':>7}")
    ok = True
    for name, (m, s) in rest:
        noise = "noise" in name
        good = (m - base_map >= -0.005 and s <= 2 * base_s) if noise else \
            (abs(m - base_map) <= 0.0005 and s <= 1.5 * base_s)
        ok &= good
        target = "ΔMAP ≥ −0.005, ≤ 2×" if noise else "|ΔMAP| ≤ 0.0005, ≤ 1.5×"
        print(f"{name:<22} {m:7.4f} {m - base_map:+8.4f} {s:8.2f} {s / base_s:7.2f}  {target}: "
              f"{'met' if good else 'NOT met'}")
    return ok


# -- v. Vaswani, 4 PISA functions --------------------------------------------------------------------------
def vaswani_candidates(cache: Path, names: List[str]):
    from pyterrier_svmmap import RunFeatures
    from pyterrier_svmmap.experiments.reproduce.base_runs import base_runs
    from pyterrier_svmmap.experiments.reproduce.collection import load_directory
    collection = load_directory(VASWANI)
    topics = collection.judged_topics()
    runs, _ = base_runs(collection, cache, topics, names=names)
    return RunFeatures({n: runs[n] for n in names}).transform(topics[["qid", "query"]]), topics, collection.qrels


def test_map(model, res, qrels) -> float:
    import ir_measures
    out = model.transform(res)
    _checked(out["score"].to_numpy())
    run = out[["qid", "docno", "score"]].rename(columns={"qid": "query_id", "docno": "doc_id"})
    qr = qrels[qrels["qid"].isin(res["qid"].unique())].rename(
        columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return float(ir_measures.calc_aggregate([ir_measures.AP], qr, run)[ir_measures.AP])


def with_features(res, raw):
    out = res.copy()
    out["features"] = list(raw)
    return out


def part_vaswani(cache: Path, splits: int):
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.frames import candidates_from_frame
    names = [f"{f}.porter2.terrier" for f in ("bm25", "dph", "pl2", "qld")]
    res, topics, qrels = vaswani_candidates(cache, names)
    cands = candidates_from_frame(res)
    res = cands.frame.reset_index(drop=True)
    qids = topics["qid"].to_numpy()
    with warnings.catch_warnings():                           # the kernels loaded before anything is timed
        warnings.simplefilter("ignore")
        SVMMap().fit(res[res["qid"].isin(qids[:15])], qrels)
    rows = {}
    for name in ["original"] + list(CHANGES):
        raw = cands.raw if name == "original" else CHANGES[name](cands.raw, cands.offsets, np.random.default_rng(1))
        frame = with_features(res, raw)
        maps, seconds = [], 0.0
        for s in range(splits):
            order = np.random.default_rng(s).permutation(len(qids))
            tr, va, te = (qids[order[a:b]] for a, b in ((0, 10), (10, 15), (15, None)))
            model = SVMMap()
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(frame[frame["qid"].isin(tr)], qrels, frame[frame["qid"].isin(va)], qrels)
            seconds += time.perf_counter() - t
            maps.append(test_map(model, frame[frame["qid"].isin(te)], qrels))
        rows[name] = (float(np.mean(maps)), seconds)
    return report(f"v. Vaswani, RunFeatures of {', '.join(names)} >> SVMMap(), {splits} splits of 10 / 5 "
                  "queries: test MAP (mean over splits) and fit seconds (all splits)", rows, "fit s")


# -- m. MQ2008 Fold 1, the array-level default -------------------------------------------------------------
def mq2008(fold: int = 1):
    return [read_svmlight(MQ2008 / f"Fold{fold}" / f"{p}.txt") for p in ("train", "vali", "test")]


def default_ranker(**extra):
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: v for k, v in SVMMap().get_params().items() if k in StructSVMRanker.MODEL_PARAMS}
    return StructSVMRanker(**{**params, **extra})


def fit_mq(train, vali, raw_tr, raw_va, **extra):
    model = default_ranker(**extra)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(raw_tr, train.labels, train.offsets, valid=(raw_va, vali.labels, vali.offsets))
    return model, time.perf_counter() - t


def part_mq2008():
    train, vali, test = mq2008()
    fit_mq(train, vali, train.features, vali.features)          # kernels loaded
    rows = {}
    for name in ["original"] + list(CHANGES):
        parts = [d.features if name == "original" else CHANGES[name](d.features, d.offsets, np.random.default_rng(i))
                 for i, d in enumerate((train, vali, test))]
        model, seconds = fit_mq(train, vali, parts[0], parts[1])
        scores = _checked(model.ranking_scores(parts[2], test.offsets))
        rows[name] = (letor_mean_average_precision(scores, test.labels, test.offsets), seconds)
    return report("m. MQ2008 Fold 1, StructSVMRanker with SVMMap()'s defaults, train + vali: test MAP and fit seconds",
                  rows, "fit s")


# -- l. svmmap learn and classify --------------------------------------------------------------------------
def write_svmlight(path: Path, data, raw):
    with open(path, "w") as f:
        q = np.repeat(np.arange(len(data.offsets) - 1), np.diff(data.offsets))
        for i in range(len(raw)):
            feats = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(raw[i]))
            f.write(f"{int(data.labels[i])} qid:{q[i] + 1} {feats}\n")


def part_learn(tmp: Path):
    train, _, test = mq2008()
    rows = {}
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = [sys.executable, "-c", "import sys; from pyterrier_svmmap.cli import main; sys.exit(main(sys.argv[1:]))"]
    for name in ["original"] + list(CHANGES):
        parts = [d.features if name == "original" else CHANGES[name](d.features, d.offsets, np.random.default_rng(i))
                 for i, d in enumerate((train, test))]
        write_svmlight(tmp / "train.txt", train, parts[0])
        write_svmlight(tmp / "test.txt", test, parts[1])
        t = time.perf_counter()
        subprocess.run([*cli, "learn", "--force", str(tmp / "train.txt"), str(tmp / "model")], env=env, check=True,
                       capture_output=True)
        seconds = time.perf_counter() - t
        subprocess.run([*cli, "classify", str(tmp / "test.txt"), str(tmp / "model"), str(tmp / "pred.txt")], env=env,
                       check=True, capture_output=True)
        scores = _checked(np.loadtxt(tmp / "pred.txt"))
        rows[name] = (letor_mean_average_precision(scores, test.labels, test.offsets), seconds)
    return report("l. svmmap learn (default options: -c 1, raw features) then classify, MQ2008 Fold 1: test MAP "
                  "and seconds of the learn process", rows, "learn s")


# -- q. quality and time of the default --------------------------------------------------------------------
def part_quality(cache: Path, splits: int):
    maps, seconds = [], 0.0
    for fold in range(1, 6):
        train, vali, test = mq2008(fold)
        if fold == 1:
            fit_mq(train, vali, train.features, vali.features)
        model, s = fit_mq(train, vali, train.features, vali.features)
        seconds += s
        maps.append(letor_mean_average_precision(_checked(model.ranking_scores(test.features, test.offsets)),
                                                 test.labels, test.offsets))
    print("\nq. the default's quality and fit time")
    ok_map, ok_s = np.mean(maps) >= 0.485, seconds <= 15
    print(f"MQ2008, 5 folds: MAP {np.mean(maps):.4f} (per fold {' '.join(f'{m:.4f}' for m in maps)}), target ≥ 0.485: "
          f"{'met' if ok_map else 'NOT met'}; fit {seconds:.1f} s, target ≤ 15 s: {'met' if ok_s else 'NOT met'}")
    ok_t = main_job_time(cache, splits)
    return ok_map and ok_s and ok_t


def main_job_time(cache: Path, splits: int) -> bool:
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.experiments.reproduce.base_runs import base_names
    from pyterrier_svmmap.experiments.reproduce.protocol import make_splits
    from pyterrier_svmmap.selection import SELECTION_C_GRID
    res, topics, qrels = vaswani_candidates(cache, base_names())
    trials = make_splits(topics["qid"].tolist(), trials=splits, seed=0)
    configs = {"SVMMap()": {}, "before (raw, absolute C, normalise=None)": dict(
        C=list(SELECTION_C_GRID), features="raw", normalise=None)}
    times: Dict[str, List[float]] = {k: [] for k in configs}
    for i, split in enumerate(trials):
        tr, va = res[res["qid"].isin(split.train)], res[res["qid"].isin(split.valid)]
        for name, params in configs.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if i == 0:
                    SVMMap(**params, n_jobs=1).fit(tr, qrels, va, qrels)
                t = time.perf_counter()
                SVMMap(**params, n_jobs=1).fit(tr, qrels, va, qrels)
                times[name].append(time.perf_counter() - t)
    now, before = np.median(times["SVMMap()"]), np.median(times["before (raw, absolute C, normalise=None)"])
    ok = now <= 1.5 * before
    print(f"main job (Vaswani, 16 functions, {splits} splits, one thread): median seconds per fit SVMMap() {now:.2f}, "
          f"the configuration before {before:.2f}: {now / before:.2f}×, target ≤ 1.5×: {'met' if ok else 'NOT met'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer splits")
    ap.add_argument("--parts", default="vmlqt")
    ap.add_argument("--splits", type=int, default=None, help="Vaswani splits (default 3, or 1 with --quick)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "pyterrier-svmmap-bench-invariance"))
    args = ap.parse_args()
    splits = args.splits or (1 if args.quick else 3)
    cache = Path(args.cache)
    counter = StepCapCounter()
    logging.getLogger("pyterrier_svmmap").addHandler(counter)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    results = {}
    if "v" in args.parts:
        results["v"] = part_vaswani(cache, splits)
    if "m" in args.parts:
        results["m"] = part_mq2008()
    if "l" in args.parts:
        with tempfile.TemporaryDirectory() as tmp:
            results["l"] = part_learn(Path(tmp))
    if "q" in args.parts:
        results["q"] = part_quality(cache, max(splits, 10) if not args.quick else splits)
    if "t" in args.parts:
        ok = counter.count == 0 and FINITE["non_finite"] == 0
        results["t"] = ok
        print(f"\nt. honest numerics: {counter.count} log lines about the dual QP's step cap (target none), "
              f"{FINITE['non_finite']} non-finite of {FINITE['scores']} scores (target none): "
              f"{'met' if ok else 'NOT met'}")
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("targets:", ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in results.items()))


if __name__ == "__main__":
    main()
