"""Speed of one fit: the searches, threads, the C path and the dual QP, against reference runs in the same
process and against the peers (LightGBM, XGBoost when installed, svm_rank's recorded times).

Usage::

    python benchmarks/bench_speed.py [--quick] [--only argmax,threads,lightgbm,svmlight,letor,cpath,cli,qp] [--repeat N]

Sections (ratios of medians over ``--repeat`` interleaved rounds, or of one run where a run takes minutes; the
setups and results are in docs/performance.md):

* ``argmax``: MAP's batch search ÷ ``np.argsort`` of the same scores (target ≤ 2×; equal to the numpy reference
  to 1e-12, asserted); every loss's search, batched and one query per call, ÷ MAP's (target ≤ 3×);
* ``threads``: ``StructSVMRanker(C=1, n_jobs=2)`` ÷ ``n_jobs=1``, 50 bins, without and with the prior (target
  ≥ 1.5× each; the same weights for n_jobs = 1, 2, 3), beside what the machine's load leaves;
* ``lightgbm``: ``SVMMap(C=1)``'s learner ÷ LightGBM lambdarank, 100 trees (target ≤ 1/3), and XGBoost;
* ``svmlight``: a 1 M-line file: parse and training seconds, test MAP, against svm_map_learn / svm_rank /
  svm_perf's recorded seconds (target ≤ 2 s training, ≤ 20 s in all);
* ``letor``: MQ2008's 5 folds as ``svmmap letor`` runs them, and the peers: MAP, NDCG@10, training seconds
  (targets: raw ≤ 30 s, 50 bins ≤ 60 s);
* ``cpath``: the 6-value C grid with validation ÷ one fit at C = 1 and at C = 1000, on MQ2008 Fold 1 and
  synthetic data (target: 50 bins ≤ 1.3× C = 1000; 50-bin grid ≤ 3× raw grid);
* ``cli``: ``svmmap learn -c grid --valid`` and ``classify`` on the 5 MQ2008 folds ÷ svm_rank's per-C workflow
  as recorded (target ≤ 0.3×, test MAP within 0.005), and where a fold's time goes;
* ``qp``: a sample of the dual QPs of MQ2008 Fold 1 fits replayed through the numpy reference
  (``tests/oracles``) and the compiled solver: time ratio and objectives.

MQ2008 is read from ``../shared/data/letor/MQ2008``. About 8 minutes on an idle 2-core machine (``--quick``: 3
to 4 minutes).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import CLI, ENV, MQ2008, load, main, mq2008_folds, quiet, repeat, rounds, runs, synthetic, target, timed

from oracles.losses_reference import map_slots_reference
from pyterrier_svmmap.measures import average_precision, letor_mean_average_precision
from pyterrier_svmmap.svm.ranker import StructSVMRanker

LOSSES = [("map", {}), ("roc", {}), ("ndcg", {}), ("ndcg@10", {}), ("mrr@10", {}), ("dorm@10", dict(window=20)),
          ("combo", dict(losses=["map", "ndcg@10", "mrr@10"])), ("acc", {}), ("acc2", {})]
C_GRID = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
#: seconds on the svmlight section's 1 M-line file, measured with the original programs built from source on
#: this machine's kind (they are not installed here): svm_map_learn, svm_rank_learn (~12 s of it parsing), svm_perf
SVMLIGHT_PEERS = dict(svm_map_learn=397.0, svm_rank_learn=65.0, svm_perf=14.0)
#: svm_rank's per-C workflow on the 5 MQ2008 folds (svm_rank_learn per C, svm_rank_classify of vali per C and of
#: test once), measured with svm_rank built from source on this machine's kind: seconds, mean test MAP
SVM_RANK_WORKFLOW = (21.3, 0.4719)


def random_queries(rng, n_q, n, frac):
    scores, labels = rng.normal(size=n_q * n), (rng.random(n_q * n) < frac).astype(int)
    labels[::n], labels[n - 1::n] = 1, 0                 # a relevant and a non-relevant candidate in every query
    return scores, labels, np.arange(n_q + 1) * n


def by_class(scores, labels):
    """The relevant and the non-relevant candidates' scores, each in decreasing order."""
    return np.sort(scores[labels > 0])[::-1], np.sort(scores[labels == 0])[::-1]


def reference_gap(loss, scores, labels, offsets, queries) -> float:
    """max |H_fast − H_reference| of MAP's argmax on ``queries``; asserted ≤ 1e-12."""
    from pyterrier_svmmap.svm.losses.map import interleave, sort_by_score
    deltas, coef = loss.batch_violation(scores, labels, offsets)
    worst = 0.0
    for q in queries:
        lo, hi = offsets[q], offsets[q + 1]
        s, y, idx = scores[lo:hi], labels[lo:hi], np.arange(hi - lo)
        pos, neg = sort_by_score(idx[y > 0], s), sort_by_score(idx[y == 0], s)
        h_ref = loss.objective(interleave(pos, neg, map_slots_reference(s[pos], s[neg])), s, y)
        worst = max(worst, abs(deltas[q] - coef[lo:hi] @ s + loss.ideal_psi_coef(y) @ s - h_ref))
    assert worst <= 1e-12, f"fast and reference MAP argmax disagree: |ΔH| = {worst:.3g}"
    return worst


def argmax(args):
    """the most violated ranking: MAP's against a sort and the numpy reference, every loss against MAP's"""
    from pyterrier_svmmap.svm.losses import MAPLoss, get_loss, most_violated
    loss, rng, ratios = MAPLoss(), np.random.default_rng(0), []
    print(f"{'n':>6} {'rel':>4} {'queries':>7} | {'argsort µs':>10} {'batch µs':>9} {'ratio':>6} | "
          f"{'reference µs':>12} {'speed-up':>8} | {'|ΔH| max':>8}")
    for n in (100, 1000, 10_000):
        for frac in (0.01, 0.1, 0.5):
            n_q = max(2, (50_000 if args.quick else 1_000_000) // n)
            scores, labels, offsets = random_queries(rng, n_q, n, frac)
            tied = scores.copy()
            tied[: n * max(1, n_q // 4)] = np.round(tied[: n * max(1, n_q // 4)], 1)       # ties in a quarter
            k = 1 if n == 10_000 else 3
            t = rounds({"sort": lambda: np.argsort(scores.reshape(n_q, n), axis=1),
                        "batch": lambda: loss.batch_violation(scores, labels, offsets),
                        "ref": lambda: [map_slots_reference(*by_class(scores[offsets[q]:offsets[q + 1]],
                                                                      labels[offsets[q]:offsets[q + 1]]))
                                        for q in range(k)]}, 1 if n == 10_000 else 3)
            sort, batch, ref = (min(t[x]) / m for x, m in (("sort", n_q), ("batch", n_q), ("ref", k)))
            gap = max(reference_gap(loss, s, labels, offsets, range(min(3 if n == 10_000 else 20, n_q)))
                      for s in (scores, tied))
            ratios.append(batch / sort)
            print(f"{n:>6} {frac:>4.0%} {n_q:>7} | {sort * 1e6:>10.1f} {batch * 1e6:>9.1f} {batch / sort:>6.2f} | "
                  f"{ref * 1e6:>12.0f} {ref / batch:>8.0f} | {gap:>8.1e}", flush=True)
    target(f"MAP's batch search ≤ 2× argsort: worst {max(ratios):.2f}×, median {np.median(ratios):.2f}× "
           "(fast = reference to 1e-12: asserted)", max(ratios) <= 2)
    n_q, n = (100 if args.quick else 300), 1000
    scores, labels, offsets = random_queries(np.random.default_rng(11), n_q, n, 0.05)
    fns = {}
    for name, kw in LOSSES:
        batch = get_loss(name, **kw)
        fns[name, "batch"] = lambda b=batch: b.batch_violation(scores, labels, offsets)
        fns[name, "one"] = lambda name=name, kw=kw: [most_violated(scores[offsets[q]:offsets[q + 1]], labels[
            offsets[q]:offsets[q + 1]], loss=name, **kw) for q in range(n_q)]
    t = {k: np.median(v) / n_q for k, v in rounds(fns, repeat(args)).items()}
    print(f"\n{n_q} queries × {n:,} candidates, 5 % relevant\n{'loss':<10} {'batch µs/query':>15} {'÷ map':>6} "
          f"{'one call µs/query':>18} {'÷ map':>6}")
    for name, _ in LOSSES:
        print(f"{name:<10} {t[name, 'batch'] * 1e6:>15.1f} {t[name, 'batch'] / t['map', 'batch']:>6.2f} "
              f"{t[name, 'one'] * 1e6:>18.1f} {t[name, 'one'] / t['map', 'one']:>6.2f}")
    worst = max(t, key=lambda k: t[k] / t["map", k[1]])
    target(f"every loss's search ≤ 3× MAP's: worst {worst[0]} ({worst[1]}) {t[worst] / t['map', worst[1]]:.2f}×",
           t[worst] / t["map", worst[1]] <= 3)


def spinner():
    """``spin(k)``: the same fixed work (~0.1 s on a core) cut into k pieces on k threads, without the GIL: how
    much a second thread can run alongside on this machine now."""
    from concurrent.futures import ThreadPoolExecutor
    from numba import njit

    @njit(nogil=True)
    def loop(n):
        s = 0.0
        for i in range(n):
            s += (i % 7) * 1e-9
        return s
    loop(10)
    pool = ThreadPoolExecutor(2)
    return lambda k: list(pool.map(loop, [100_000_000 // k] * k))


def threads(args):
    """StructSVMRanker(C=1, 50 bins) with n_jobs=2 against n_jobs=1, with and without the prior"""
    raw, labels, offsets = synthetic(50_000 if args.quick else 200_000)
    spin, ratios, same = spinner(), {}, True
    print(f"{len(offsets) - 1} queries × 1,000 candidates × 16 functions, C = 1, 50 bins; {load()}")
    for prior in (None, "best"):
        fits, cpu = {}, {1: [], 2: [], 3: []}

        def fit(j, prior=prior):
            def run():
                t = time.thread_time()
                fits[j] = StructSVMRanker(C=1.0, prior=prior, n_jobs=j).fit(raw, labels, offsets)
                cpu[j].append(time.thread_time() - t)
            return run
        t = rounds({1: fit(1), 2: fit(2), "spin1": lambda: spin(1), "spin2": lambda: spin(2)}, repeat(args))
        fit(3)()
        same &= all(np.array_equal(fits[1].coef_, fits[j].coef_) and [h["primal"] for h in fits[1].history_] ==
                    [h["primal"] for h in fits[j].history_] for j in (2, 3))
        ratios[prior] = np.median(t[1]) / np.median(t[2])
        free = [a / b for a, b in zip(t["spin1"], t["spin2"])]
        paired = [t[1][i] / t[2][i] for i in range(len(free)) if free[i] >= 1.8]
        c1, c2 = np.median(cpu[1]), np.median(cpu[2])
        print(f"prior={prior} ({fits[1].n_iter_} iterations): n_jobs=1 {runs(t[1])}; n_jobs=2 {runs(t[2])}: "
              f"{ratios[prior]:.2f}×" + (f", {np.median(paired):.2f}× in the {len(paired)} rounds with a second core "
                                          "free (loop ≥ 1.8×)" if paired else ""))
        print(f"  a trivially parallel loop ran {np.median(free):.2f}× faster on 2 threads meanwhile (2.0 when a core "
              f"is free; rounds {' '.join(f'{x:.2f}' for x in free)}); the calling thread's CPU time: {c1:.3f} s "
              f"with 1 thread, {c2:.3f} s with 2, which bounds the speed-up at {c1 / c2:.2f}× whatever the load")
    target(f"n_jobs=2 ≥ 1.5× n_jobs=1: {ratios[None]:.2f}× without the prior, {ratios['best']:.2f}× with it",
           min(ratios.values()) >= 1.5)
    target("n_jobs = 1, 2, 3 give the same weights and objectives bit for bit", same)


def lightgbm(args):
    """SVMMap(C=1)'s learner (StructSVMRanker, 50 bins) against LightGBM lambdarank and XGBoost, 100 trees"""
    import lightgbm as lgb
    raw, labels, offsets = synthetic(50_000 if args.quick else 200_000, seed=5)
    filled, sizes = np.nan_to_num(raw, nan=-1e9), np.diff(offsets)
    fns = {"StructSVMRanker(C=1)": lambda: StructSVMRanker(C=1.0).fit(raw, labels, offsets),
           "LightGBM lambdarank": lambda: lgb.LGBMRanker(objective="lambdarank", n_estimators=100, verbose=-1).fit(
               filled, labels, group=sizes)}
    try:
        import xgboost as xgb
        qid = np.repeat(np.arange(len(sizes)), sizes)
        fns["XGBoost rank:pairwise"] = lambda: xgb.XGBRanker(objective="rank:pairwise", n_estimators=100).fit(
            filled, labels, qid=qid)
    except ImportError:
        print("(XGBoost is not installed: its row is left out)")
    t = rounds(fns, repeat(args))
    print(f"{len(sizes)} queries × 1,000 × 16 functions, default threads")
    for name, seconds in t.items():
        print(f"{name:<22} {runs(seconds)}")
    ratio = np.median(t["StructSVMRanker(C=1)"]) / np.median(t["LightGBM lambdarank"])
    target(f"SVMMap(C=1)'s learner ≤ 1/3 of LightGBM's time: {ratio:.2f}", ratio <= 1 / 3)


def svmlight(args):
    """an svmlight file of 2,000 queries × 500 documents × 50 dense features: parse, train, test MAP"""
    from sklearn.datasets import dump_svmlight_file                     # only to write the file
    from pyterrier_svmmap.io.svmlight import read_svmlight
    n_q, per_q, d = (400 if args.quick else 2000), 500, 50
    rng = np.random.default_rng(7)
    X = np.round(rng.standard_normal((n_q * per_q, d)), 4)
    w_true = rng.standard_normal(d)
    z = X @ w_true / np.sqrt(d) + 0.5 * rng.standard_normal(len(X))
    y = (z > np.quantile(z, 0.95)).astype(int)                           # about 5 % relevant
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.svmlight"
        dump_svmlight_file(X, y, str(path), query_id=np.repeat(np.arange(1, n_q + 1), per_q), zero_based=False)
        mb = path.stat().st_size / 1e6
        data, t_parse = timed(read_svmlight, str(path))
    Xd, ys, off = data.features[data.order], data.labels[data.order], data.offsets
    cut, k = off[int(0.8 * n_q)], int(0.8 * n_q)
    quiet(StructSVMRanker(C=1.0, features="raw").fit, Xd[:off[10]], ys[:off[10]], off[:11])       # warm-up
    model, t_train = timed(quiet, StructSVMRanker(C=1.0, features="raw").fit, Xd[:cut], ys[:cut], off[:k + 1])
    te = off[k:] - cut
    test_map = float(average_precision(model.decision_function(Xd[cut:], te), ys[cut:], te).mean())
    oracle = float(average_precision(Xd[cut:] @ w_true, ys[cut:], te).mean())
    print(f"{len(X):,} lines, {mb:.0f} MB: parse (read_svmlight) {t_parse:.2f} s; SVM-map (raw, C=1) on {k} queries "
          f"{t_train:.2f} s, {model.n_iter_} iterations; test MAP {test_map:.4f} (the hidden model's {oracle:.4f})")
    print("recorded on this machine's kind for 1 M lines: " + ", ".join(f"{k} {v:g} s"
                                                                      for k, v in SVMLIGHT_PEERS.items()))
    target(f"{len(X):,} lines: SVM-map training ≤ 2 s: {t_train:.2f} s", t_train <= 2)
    target(f"{len(X):,} lines: parse + training ≤ 20 s: {t_parse + t_train:.2f} s", t_parse + t_train <= 20)


def xgboost_rows(folds):
    """XGBoost gblinear (coord_descent, deterministic) ``rank:map`` (labels ≥ 1) and ``rank:pairwise`` (graded):
    eta 0.5 × lambda ∈ {0, 0.01, 0.1, 1}, ≤ 200 rounds, early stopping on vali; the best vali MAP kept."""
    import xgboost as xgb
    from pyterrier_svmmap.experiments.letor import evaluate
    qid = lambda s: np.repeat(np.arange(s.n_queries), np.diff(s.offsets))   # noqa: E731
    for objective in ("rank:map", "rank:pairwise"):
        measures, seconds = [], 0.0
        for fold in folds.values():
            tr, va, te = fold.train, fold.vali, fold.test
            t = time.perf_counter()
            dtr = xgb.DMatrix(tr.raw, label=tr.binary(1) if objective == "rank:map" else tr.labels, qid=qid(tr))
            dva = xgb.DMatrix(va.raw, label=va.binary(1), qid=qid(va))
            best = None
            for lam in (0.0, 0.01, 0.1, 1.0):
                bst = xgb.train(dict(booster="gblinear", updater="coord_descent", objective=objective, nthread=1,
                                     eval_metric="map", seed=0, eta=0.5, reg_lambda=lam), dtr, num_boost_round=200,
                                evals=[(dva, "vali")], early_stopping_rounds=20, verbose_eval=False)
                r = (0, bst.best_iteration + 1)
                v = letor_mean_average_precision(bst.predict(dva, iteration_range=r), va.labels, va.offsets)
                if best is None or v > best[0]:
                    best = (v, bst, r)
            seconds += time.perf_counter() - t
            scores = best[1].predict(xgb.DMatrix(te.raw, qid=qid(te)), iteration_range=best[2])
            measures.append(evaluate(scores, te))
        print(f"XGBoost gblinear {objective:<14} MAP {np.mean([m['MAP'] for m in measures]):.4f}, NDCG@10 "
              f"{np.mean([m['NDCG@10'] for m in measures]):.4f}, train s {seconds:.1f}")


def letor(args):
    """the LETOR 4.0 protocol on MQ2008: test MAP and training seconds of SVM-map and the peers"""
    from pyterrier_svmmap.experiments.letor import run_letor
    folds = [1] if args.quick else [1, 2, 3, 4, 5]
    res = run_letor(MQ2008, "svm-map-raw,svm-map-paper,svm-roc,lambdamart", folds=folds)
    print(res.table())
    try:
        xgboost_rows(mq2008_folds(folds))
    except ImportError:
        print("(XGBoost is not installed: its rows are left out)")
    if len(folds) < 5:
        print("(the targets are of the 5 folds: not judged on one)")
    else:
        raw, bins = res.mean("svm-map-raw")["seconds"], res.mean("svm-map-paper")["seconds"]
        target(f"SVM-map raw, 5 folds with selection ≤ 30 s: {raw:.1f} s", raw <= 30)
        target(f"SVM-map 50 bins, 5 folds with selection ≤ 60 s: {bins:.1f} s", bins <= 60)


def cpath(args):
    """the C path: the 6-value grid with validation against one fit at C = 1 and at C = 1000"""
    fold = mq2008_folds()[1]
    raw, labels, offsets = synthetic(30_000 if args.quick else 100_000, seed=3)
    q = (len(offsets) - 1) * 3 // 4
    synth = ((raw[:offsets[q]], labels[:offsets[q]], offsets[:q + 1]),
             (raw[offsets[q]:], labels[offsets[q]:], offsets[q:] - offsets[q]))
    mq = tuple((s.raw, s.labels, s.offsets) for s in (fold.train, fold.vali))
    cases = {"MQ2008 Fold 1, raw": (mq, "raw"), "MQ2008 Fold 1, 50 bins": (mq, "bins"),
             f"synthetic {offsets[-1]:,}, bins": (synth, "bins")}
    print(f"{'data':<24} {'C=1 s':>7} {'C=1000 s':>9} {'grid s':>7} {'÷ C=1':>6} {'÷ C=1000':>8}  iterations per C")
    med = {}
    for name, ((tr, va), features) in cases.items():
        paths = {}

        def fit(C, tr=tr, va=va, features=features):
            def run():
                paths[str(C)] = quiet(StructSVMRanker(C=C, features=features, n_bins=50).fit, *tr, valid=va).path_
            return run
        t = rounds({1.0: fit(1.0), 1000.0: fit(1000.0), "grid": fit(C_GRID)}, max(1, repeat(args) // 2))
        m = med[name] = {k: float(np.median(v)) for k, v in t.items()}
        its = " ".join(f"{p['C']:g}:{p['n_iter']}" for p in paths[str(C_GRID)])
        print(f"{name:<24} {m[1.0]:>7.2f} {m[1000.0]:>9.2f} {m['grid']:>7.2f} {m['grid'] / m[1.0]:>6.1f} "
              f"{m['grid'] / m[1000.0]:>8.2f}  {its} (C=1000 alone: {paths['1000.0'][0]['n_iter']})", flush=True)
    bins, raw = med["MQ2008 Fold 1, 50 bins"], med["MQ2008 Fold 1, raw"]
    target(f"MQ2008 Fold 1, 50 bins: the grid ≤ 1.3× C = 1000 alone: {bins['grid'] / bins[1000.0]:.2f}×",
           bins["grid"] / bins[1000.0] <= 1.3)
    target(f"MQ2008 Fold 1: the 50-bin grid ≤ 3× the raw grid: {bins['grid'] / raw['grid']:.1f}×",
           bins["grid"] / raw["grid"] <= 3)


#: one ``svmmap`` command in a fresh process with its phases timed: the command's imports, parsing
#: (``read_svmlight``), numba's start (its import and first cached kernel, loaded ahead of the fit), the fit, the
#: rest (scoring, writing); prints them as JSON
PHASES = """
import json, sys, time
t0 = time.perf_counter()
import pyterrier_svmmap.io.svmlight as svmlight
from pyterrier_svmmap.cli import main
spent, read = dict(parse=0.0, numba=0.0, fit=0.0), svmlight.read_svmlight
def timed_read(*a, **k):
    t = time.perf_counter(); out = read(*a, **k); spent["parse"] += time.perf_counter() - t; return out
svmlight.read_svmlight = timed_read
if sys.argv[1] == "learn":
    import pyterrier_svmmap.cli.learn as learn
    fit = learn.fit_ranking_data
    def timed_fit(*a, **k):
        t = time.perf_counter()
        import numpy as np, pyterrier_svmmap._jit as jit
        jit.load("features._kernels").cumulative_table(np.zeros(4), 2, 2)
        t1 = time.perf_counter(); out = fit(*a, **k)
        spent["numba"] += t1 - t; spent["fit"] += time.perf_counter() - t1; return out
    learn.fit_ranking_data = timed_fit
t1 = time.perf_counter()
assert main(sys.argv[1:]) == 0
spent["imports"] = t1 - t0
spent["rest"] = time.perf_counter() - t0 - sum(spent.values())
print(json.dumps(spent))
"""


def cli(args):
    """svmmap learn (C grid, --valid) and classify on the 5 MQ2008 folds against svm_rank's per-C workflow"""
    grid, maps = ",".join(f"{c:g}" for c in C_GRID), []

    def commands(k, tmp):
        fold, model = MQ2008 / f"Fold{k}", Path(tmp) / f"m{k}"
        return (["learn", "-c", grid, "--valid", str(fold / "vali.txt"), "--force", str(fold / "train.txt"),
                 str(model)], ["classify", str(fold / "test.txt"), str(model), str(Path(tmp) / f"p{k}")])
    with tempfile.TemporaryDirectory() as tmp:
        def workflow():
            for k in range(1, 6):
                for argv in commands(k, tmp):
                    subprocess.run([sys.executable, "-c", CLI, *argv], env=ENV, check=True, capture_output=True)
        t = rounds({"5 folds": workflow}, max(1, repeat(args) // 2))["5 folds"]
        folds = mq2008_folds(range(1, 6))
        maps = [letor_mean_average_precision(np.loadtxt(Path(tmp) / f"p{k}"), f.test.labels, f.test.offsets)
                for k, f in folds.items()]
        phases = {}
        for _ in range(max(1, repeat(args) // 2)):
            for argv in commands(1, tmp):
                p, seconds = timed(subprocess.run, [sys.executable, "-c", PHASES, *argv], env=ENV, check=True,
                                   capture_output=True, text=True)
                phases.setdefault(argv[0], []).append(dict(json.loads(p.stdout.splitlines()[-1]), process=seconds))
    print(f"svmmap, 5 folds: {runs(t)}, mean test MAP {np.mean(maps):.4f}")
    for name, rows in phases.items():
        m = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
        print(f"  Fold 1, svmmap {name:<8} {m['process']:.2f} s: imports {m['imports']:.2f}, parse {m['parse']:.2f}, "
              f"numba {m['numba']:.2f}, fit {m['fit']:.2f}, rest {m['rest']:.2f}, start and exit "
              f"{m['process'] - sum(v for k, v in m.items() if k != 'process'):.2f}")
    ratio, gap = float(np.median(t)) / SVM_RANK_WORKFLOW[0], np.mean(maps) - SVM_RANK_WORKFLOW[1]
    print(f"svm_rank's per-C workflow (recorded): {SVM_RANK_WORKFLOW[0]:.1f} s, mean test MAP {SVM_RANK_WORKFLOW[1]}")
    target(f"the 5 folds ≤ 0.3× svm_rank's workflow: {ratio:.2f}×", ratio <= 0.3)
    target(f"mean test MAP within 0.005 of svm_rank's: {gap:+.4f}", abs(gap) <= 0.005)


def qp(args):
    """the dual QP on its real calls: the numpy reference against the compiled solver"""
    import pyterrier_svmmap.svm.cutting_plane as solver
    import pyterrier_svmmap.svm.qp as compiled
    from oracles.qp_reference import solve_dual_reference
    fold, size = mq2008_folds()[1], (50 if args.quick else 300)
    fits = {"map raw": dict(features="raw"), "map bins": dict(features="bins"),
            "combo raw": dict(loss="combo", features="raw", loss_params=dict(
                losses=["map", "ndcg@10", "mrr@10"], slack="separate", C_weights=[1, 1, 1e-8]))}
    quiet(compiled.solve_dual, np.eye(2), np.ones(2), np.zeros(2, dtype=int), np.ones(1))
    for name, params in fits.items():
        calls, seen, rng = [], [0], np.random.default_rng(0)

        def record(*a, **kw):                                      # a reservoir sample of the calls' arguments
            seen[0] += 1
            copy = (tuple(None if x is None else np.array(x) for x in a), kw)
            if len(calls) < size:
                calls.append(copy)
            elif (j := int(rng.integers(0, seen[0]))) < size:
                calls[j] = copy
            return solve_dual_reference(*a, **kw)
        solver.solve_dual = record
        try:
            quiet(StructSVMRanker(C=C_GRID, **params).fit, fold.train.raw, fold.train.binary(1), fold.train.offsets,
                  valid=(fold.vali.raw, fold.vali.binary(1), fold.vali.offsets))
        finally:
            solver.solve_dual = compiled.solve_dual
        t_ref, t_fast, worst = 0.0, 0.0, 0.0
        for a, kw in calls:
            (a_ref, _), seconds = timed(solve_dual_reference, *a, **kw)
            t_ref += seconds
            (a_fast, _), seconds = timed(compiled.solve_dual, *a, **kw)
            t_fast += seconds
            G, b = a[:2]
            f_ref, f_fast = (b @ x - 0.5 * x @ G @ x for x in (a_ref, a_fast))
            worst = max(worst, abs(f_fast - f_ref) / max(abs(f_ref), 1e-300))
        print(f"{name:<9} {seen[0]} QP calls; {len(calls)} replayed: numpy {t_ref:.3f} s, compiled {t_fast:.3f} s "
              f"({t_ref / t_fast:.1f}×), largest relative difference of the dual objectives {worst:.1e}", flush=True)


if __name__ == "__main__":
    main(__doc__, dict(argmax=argmax, threads=threads, lightgbm=lightgbm, svmlight=svmlight, letor=letor,
                       cpath=cpath, cli=cli, qp=qp),
         repeat="rounds per measurement (default 5; --quick 2)")
