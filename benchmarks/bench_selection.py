"""The default's cost: ``SVMMap()``'s model selection against one fit and against LightGBM, where a default fit
spends its time, and the fits of the main job and SciFact.

Usage::

    python benchmarks/bench_selection.py [--quick] [--only default,profile,mainjob,scifact] [--repeat N]

Sections (results in docs/performance.md):

* ``default``: ``SVMMap()``'s learner on 200 queries × 1,000 candidates × 16 functions ÷ ``LGBMRanker()``
  (target ≤ 0.5×); without racing: the same model bit for bit (target); without shared cuts: the speed-up
  and the same choice (also on SciFact);
* ``profile``: where one default fit spends its time (cross-validation paths by block, scoring, the refit);
* ``mainjob``: ``svmmap reproduce`` of the main job's ``svm-map`` on Vaswani (50 trials of 10/5 queries): the
  median fit (target ≤ 0.6 s);
* ``scifact``: ``SVMMap()`` on SciFact's 809 training claims × 4 PISA functions, BM25 the first stage, from
  bench_quality's cached runs (target ≤ 6 s).

``mainjob`` and ``scifact`` reuse the indices and base runs under ``--cache`` (``bench_quality.py``'s output,
default ``runs/quality``). About 6 minutes on an idle 2-core machine. The other cost targets of issue 39 are
``bench_speed.py --only threads`` and ``bench_coldstart.py --only fresh``.
"""
from __future__ import annotations

import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from _common import DATA, main, quiet, repeat, rounds, runs, synthetic, target, timed

DEFAULT = dict(C="auto", features="auto", prior="best", selection="auto", first_stage=None)


def _fit(raw, labels, offsets, race=True, **params):
    """A default fit (with ``params``), racing or not (``Protocol.auto``'s ``race``)."""
    import pyterrier_svmmap.selection.engine as engine
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    auto = engine.Protocol.auto
    engine.Protocol.auto = classmethod(lambda cls, *a, **k: auto.__func__(cls, *a, **dict(k, race=race)))
    try:
        return quiet(StructSVMRanker(**DEFAULT, **params).fit, raw, labels, offsets)
    finally:
        engine.Protocol.auto = auto


def default(args):
    """SVMMap()'s learner against LightGBM's LGBMRanker(), and against its own search without racing"""
    import lightgbm as lgb
    raw, labels, offsets = synthetic(50_000 if args.quick else 200_000, seed=5)
    filled, sizes = np.nan_to_num(raw, nan=-1e9), np.diff(offsets)
    models = {}

    def svm(race, **params):
        def run():
            models[race if not params else "plain"] = _fit(raw, labels, offsets, race, **params)
        return run
    t = rounds({"SVMMap()": svm(True), "SVMMap() without racing": svm(False),
                "SVMMap(share_cuts=False)": svm(True, share_cuts=False),
                "LGBMRanker()": lambda: lgb.LGBMRanker(verbose=-1).fit(filled, labels, group=sizes)},
               repeat(args, 2, 3))
    print(f"{len(sizes)} queries × 1,000 × 16 functions, default threads")
    for name, seconds in t.items():
        print(f"{name:<26} {runs(seconds)}")
    kept = models[True]
    print(f"kept: features={kept.features_} C={kept.C_:.4g} fallback={kept.choice_['fallback']}; settings that lost "
          f"the race: {sorted({p['features'] for p in kept.path_ if np.isnan(p['validation'])})}")
    ratio = np.median(t["SVMMap()"]) / np.median(t["LGBMRanker()"])
    target(f"SVMMap() ≤ 0.5× LGBMRanker() (100 trees): {ratio:.2f}×", ratio <= 0.5)
    same = np.array_equal(models[True].coef_, models[False].coef_) and models[True].C_ == models[False].C_
    target(f"racing keeps the model of the full search bit for bit "
           f"({np.median(t['SVMMap() without racing']) / np.median(t['SVMMap()']):.2f}× its time)", same)
    print(f"shared cuts: {_shared(models['plain'], kept, t['SVMMap(share_cuts=False)'], t['SVMMap()'])}")


def _shared(plain, shared, plain_seconds, shared_seconds) -> str:
    """The shared cuts' speed-up over the plain search, and whether they chose the same."""
    same = [(m.features_, m.C_, m.choice_["fallback"]) for m in (plain, shared)]
    return f"{np.median(plain_seconds) / np.median(shared_seconds):.2f}× faster, the same choice: {same[0] == same[1]}"


def profile(args):
    """where one default fit spends its time"""
    import pyterrier_svmmap.selection.engine as engine
    from pyterrier_svmmap.selection.grids import features_name
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    raw, labels, offsets = synthetic(50_000 if args.quick else 200_000, seed=5)
    _fit(raw[:20_000], labels[:20_000], offsets[:21])                      # kernels loaded
    spent = defaultdict(float)
    train_path, scoring = StructSVMRanker.train_path, engine.HeldOutRanking.ap

    def timed_path(self, queries, grid, setting, fold=None, shards=None, encoded=None, **shared):
        out, seconds = timed(train_path, self, queries, grid, setting, fold, shards, encoded, **shared)
        key = "refit" if fold is None else f"cv paths, {features_name(setting[0])}"
        spent[key] += seconds
        spent[key + " (C values)"] += len(grid)
        return out

    def timed_scoring(self, scores):
        out, seconds = timed(scoring, self, scores)
        spent["held-out scoring"] += seconds
        return out
    StructSVMRanker.train_path, engine.HeldOutRanking.ap = timed_path, timed_scoring
    try:
        total = timed(_fit, raw, labels, offsets)[1]
    finally:
        StructSVMRanker.train_path, engine.HeldOutRanking.ap = train_path, scoring
    print(f"one default fit: {total:.2f} s wall; seconds summed over the threads that run the paths side by side:")
    for key in sorted(k for k in spent if not k.endswith("(C values)")):
        n = spent.get(key + " (C values)")
        print(f"  {key:<28} {spent[key]:7.2f} s" + (f"  ({int(n)} C values)" if n else ""))


def _reproduce(collection: str, args) -> float:
    """The median fit seconds of svm-map in ``svmmap reproduce`` on ``collection`` (fresh fits)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_quality import run_trec, trec_protocols
    folder = DATA / collection
    protocol = trec_protocols(folder, 10 if args.quick else 50, 5, 1)[0]
    cache = Path(args.cache) / collection
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / collection
        out.mkdir()
        for part in ("runs", "indices"):
            if (cache / part).is_dir():
                (out / part).symlink_to((cache / part).resolve())
        block = run_trec(folder, out, protocol, ["svm-map"], jobs=1)
    row = next(r for r in block["rows"] if r["system"] == "svm-map")
    print(f"{collection}, {protocol['name']}: svm-map MAP {row['map']:.4f}, median fit {row['fit']:.2f} s "
          f"(one trial at a time)")
    return row["fit"]


def mainjob(args):
    """the main job's fits of svm-map (Vaswani, 50 trials of 10/5 queries)"""
    fit = _reproduce("vaswani", args)
    target(f"the main job's median fit of svm-map ≤ 0.6 s: {fit:.2f} s", fit <= 0.6)


def scifact(args):
    """SciFact's split: SVMMap() on its 809 training claims, 4 PISA functions"""
    import pickle
    import pandas as pd
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    names = [f"{f}.porter2.terrier" for f in ("bm25", "qld", "dph", "pl2")]
    runs = Path(args.cache) / "scifact" / "runs"
    if not all((runs / f"{n}.pkl").exists() for n in names):
        print(f"(no base runs in {runs}: run bench_quality.py --collections scifact first)")
        return
    train = set((DATA / "scifact" / "split.train").read_text().split())
    frames = []
    for j, name in enumerate(names):
        with open(runs / f"{name}.pkl", "rb") as f:
            run = pickle.load(f)["run"]
        frames.append(run[run["qid"].astype(str).isin(train)][["qid", "docno", "score"]].assign(function=j))
    wide = pd.concat(frames).pivot_table(index=["qid", "docno"], columns="function", values="score").sort_index()
    qrels = pd.read_csv(DATA / "scifact" / "qrels", sep=r"\s+", header=None, usecols=[0, 2], dtype=str)
    relevant = set(zip(qrels[0], qrels[2]))
    qids = wide.index.get_level_values(0).astype(str)
    labels = np.array([(q, d) in relevant for q, d in zip(qids, wide.index.get_level_values(1).astype(str))], float)
    offsets = np.r_[np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]), len(qids)].astype(np.int64)
    raw = wide.to_numpy(dtype=float)
    params = dict(DEFAULT, first_stage=0)                                   # BM25, the first stage
    quiet(StructSVMRanker(**params).fit, raw[:offsets[40]], labels[:offsets[40]], offsets[:41])      # kernels loaded
    model, fit = timed(quiet, StructSVMRanker(**params).fit, raw, labels, offsets)
    print(f"{len(offsets) - 1} training claims × {len(names)} functions, {len(raw):,} candidates: {fit:.2f} s "
          f"(kept {'the first stage' if model.choice_['fallback'] else model.features_})")
    plain, seconds = timed(quiet, StructSVMRanker(**params, share_cuts=False).fit, raw, labels, offsets)
    print(f"share_cuts=False: {seconds:.2f} s; shared cuts {_shared(plain, model, [seconds], [fit])}")
    target(f"SciFact's split: SVMMap()'s fit ≤ 6 s: {fit:.2f} s", fit <= 6)


if __name__ == "__main__":
    main(__doc__, dict(default=default, profile=profile, mainjob=mainjob, scifact=scifact),
         repeat="rounds of the timed comparisons",
         options=[(("--cache",), dict(default="runs/quality", help="bench_quality.py's output: indices and runs"))])
