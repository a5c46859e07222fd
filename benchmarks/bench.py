"""Speed benchmark of pyterrier-svmmap's training (issue #6), all numbers from one process run.

Usage::

    python benchmarks/bench.py [--quick] [--collection DIR] [--cache DIR] [--parts abcefghms]

Parts (each prints a table; ratios are against reference runs made in the same process):

a. MAP argmax per query ÷ np.argsort of the same scores, for queries of 100 / 1,000 / 10,000
   candidates with 1 % / 10 % / 50 % relevant; the fast exact argmax is checked against the O(|P||N|)
   reference (equal H to 1e-12, ties included) — the one thing this script asserts;
b. Vaswani (16 PISA base functions, union of their top 1000, 50 quantile bins): SVM-map fit time (one
   fixed C, and the C grid) vs LightGBM LambdaMART on the raw scores, and the test MAP of each
   (train on half of the queries, test on the other half). The PISA indices and runs are cached under
   ``--cache`` (default: a folder in the temp directory);
c. scaling on synthetic data (1,000 candidates per query, 16 functions, 50 bins), 10⁴ … 10⁷ candidates
   (10⁶ with --quick): encode and fit time and peak RSS, each size in its own subprocess; slope of log time
   vs log size; the encoding's time ÷ the fit's at the largest size (target ≤ 1, printed with ✓/✗);
d. cutting-plane iterations and final duality gap, reported next to every fit above;
e. an svmlight file of 2,000 queries × 500 documents × 50 dense features: parse time (our reader) and
   SVM-map training time (features="raw", fixed C) separately, and the test MAP on held-out queries;
f. the LETOR 4.0 MQ2008 protocol (benchmarks/mq2008.py): 5 folds, hyper-parameters chosen on vali by MAP,
   test MAP / NDCG@10 with Eval-Score-4.0.pl's semantics and training seconds for ours (SVM-map raw,
   50 bins, SVM-roc raw, C grid of 6), the previous release (commit 9f3a7af, same process; its 50-bin
   learner on Fold1 only, and every previous learner on Fold1 only with --quick), LightGBM lambdarank
   and XGBoost gblinear rank:map / rank:pairwise; per-fold MAP of ours raw;
g. C path: seconds of StructSVMRanker(C=6-value grid, validation) ÷ one fit at C = 1, on MQ2008 Fold1
   (raw, 50 bins) and a synthetic set, with the iterations per C;
h. each loss's batch argmax (get_loss(name).batch_violation) on 300 queries × 1,000 candidates (5 %
   relevant), µs and ratio to MAP's;
m. bounded memory: StructSVMRanker(features="bins", C=1) trained from a float32 memory map (an .npy file
   written in a temporary directory and removed after) of 10⁷ and 10⁸ candidates (1,000 per query, 16
   functions; 10⁶ and 10⁷ with --quick), each in its own subprocess: seconds preparing the data (checks,
   thresholds, bin codes) and in the solver, and the subprocess's peak RSS (VmHWM); the targets (peak ≤ 8 GB,
   total time ≤ 12× the smaller size's) printed as ratios with ✓/✗;
s. ``svmmap learn --bins 50 -c 1`` on a generated svmlight file of 10⁸ lines (10⁵ queries × 1,000 × 16
   features, about 17 GB; 10⁷ with --quick; written in a temporary directory and removed after), in its own
   process as a user runs it: the seconds (reading into memory maps included) and the peak RSS (target
   ≤ 8 GB, printed with ✓/✗).

Wall-clock targets are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))          # benchmarks/mq2008.py
sys.path.insert(0, str(REPO / "tests"))                            # the tests' oracles

from pyterrier_svmmap.features.encoder import FeatureEncoder  # noqa: E402
from pyterrier_svmmap.svm.losses import MAPLoss
from pyterrier_svmmap.svm.slack import make_slack_groups  # noqa: E402
from pyterrier_svmmap.svm.losses.map import interleave, sort_by_score  # noqa: E402
from oracles.losses_reference import map_slots_reference  # noqa: E402
from pyterrier_svmmap.measures import average_precision  # noqa: E402
from pyterrier_svmmap.svm.cutting_plane import train_structural_svm  # noqa: E402

C_FIXED = 1.0
EPSILON = 1e-3


def timed(f, repeat=1):
    f()                                       # warm-up (numba compilation, caches)
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def hdr(title):
    print(f"\n=== {title} ===", flush=True)


# -------------------------------------------------------------------------------------------------
# a. argmax vs argsort
# -------------------------------------------------------------------------------------------------
def random_queries(rng, n_q, n, frac):
    scores = rng.normal(size=n_q * n)
    labels = (rng.random(n_q * n) < frac).astype(int)
    labels[::n] = 1                                   # every query has a relevant ...
    labels[n - 1::n] = 0                              # ... and a non-relevant candidate
    return scores, labels, np.arange(n_q + 1) * n


def check_against_reference(loss, scores, labels, offsets, queries):
    """Fast vs reference argmax: equal H (to 1e-12) on the given queries. Returns the max difference."""
    deltas, coef = loss.batch_violation(scores, labels, offsets)
    worst = 0.0
    for q in queries:
        lo, hi = offsets[q], offsets[q + 1]
        s, y = scores[lo:hi], labels[lo:hi]
        idx = np.arange(hi - lo)
        pos, neg = sort_by_score(idx[y > 0], s), sort_by_score(idx[y == 0], s)
        h_ref = loss.objective(interleave(pos, neg, map_slots_reference(s[pos], s[neg])), s, y)
        h_fast = deltas[q] - coef[lo:hi] @ s + loss.ideal_psi_coef(y) @ s
        worst = max(worst, abs(h_fast - h_ref))
    assert worst <= 1e-12, f"fast and reference MAP argmax disagree: |ΔH| = {worst:.3g}"
    return worst


def part_a(quick):
    hdr("a. MAP argmax per query vs np.argsort of the same scores")
    print("batch = all queries in one batch_violation call (sort + slots + Δ + Ψ coefficients)")
    print(f"{'n':>6} {'rel':>4} {'queries':>7} | {'argsort µs':>10} {'batch µs':>9} {'ratio':>6} | "
          f"{'1-query µs':>10} {'ratio':>6} | {'reference µs':>12} {'speed-up':>8} | {'|ΔH| max':>8}")
    rng = np.random.default_rng(0)
    loss = MAPLoss()
    rows = []
    for n in (100, 1000, 10_000):
        for frac in (0.01, 0.1, 0.5):
            n_q = max(2, (200_000 if quick else 1_000_000) // n)
            scores, labels, offsets = random_queries(rng, n_q, n, frac)
            # ties: a quarter of the checked queries get rounded scores
            tied = scores.copy()
            tied[: n * max(1, n_q // 4)] = np.round(tied[: n * max(1, n_q // 4)], 1)
            mat = scores.reshape(n_q, n)
            t_sort = timed(lambda: np.argsort(mat, axis=1), 3) / n_q
            t_batch = timed(lambda: loss.batch_violation(scores, labels, offsets), 3) / n_q
            k1 = min(n_q, 200 if n <= 1000 else 20)
            t_one = timed(lambda: [loss.violation(scores[offsets[q]:offsets[q + 1]],
                                                  labels[offsets[q]:offsets[q + 1]]) for q in range(k1)], 1) / k1
            k_ref = 1 if (n == 10_000 and frac >= 0.1) else 3
            t_ref = timed(lambda: [map_slots_reference(np.sort(scores[offsets[q]:offsets[q + 1]][labels[offsets[q]:offsets[q + 1]] > 0])[::-1],
                                                       np.sort(scores[offsets[q]:offsets[q + 1]][labels[offsets[q]:offsets[q + 1]] == 0])[::-1])
                                   for q in range(k_ref)], 1) / k_ref
            n_check = 3 if n == 10_000 else 20
            worst = max(check_against_reference(loss, scores, labels, offsets, range(min(n_check, n_q))),
                        check_against_reference(loss, tied, labels, offsets, range(min(n_check, n_q))))
            rows.append(t_batch / t_sort)
            print(f"{n:>6} {frac:>4.0%} {n_q:>7} | {t_sort * 1e6:>10.1f} {t_batch * 1e6:>9.1f} "
                  f"{t_batch / t_sort:>6.2f} | {t_one * 1e6:>10.1f} {t_one / t_sort:>6.1f} | "
                  f"{t_ref * 1e6:>12.0f} {t_ref / t_batch:>8.0f} | {worst:>8.1e}", flush=True)
    print(f"target: batch ratio ≤ 2 — worst {max(rows):.2f}, median {np.median(rows):.2f}; "
          "fast == reference (|ΔH| ≤ 1e-12) asserted")


# -------------------------------------------------------------------------------------------------
# b. Vaswani: SVM-map vs LightGBM
# -------------------------------------------------------------------------------------------------
def vaswani_candidates(collection_dir, cache):
    from pyterrier_svmmap.experiments.reproduce.base_runs import base_runs
    from pyterrier_svmmap import RunFeatures
    from pyterrier_svmmap.experiments.reproduce.collection import load_directory
    coll = load_directory(collection_dir)
    topics = coll.judged_topics()
    t = time.perf_counter()
    runs, timings = base_runs(coll, cache, topics=topics)
    t_runs = time.perf_counter() - t
    frame = RunFeatures(runs).transform(topics[["qid", "query"]])
    return coll, topics, frame, t_runs, timings


def fit_report(name, seconds, n_iter, gap, test_map, extra=""):
    print(f"{name:<34} {seconds:>8.2f} s {n_iter:>6} {gap:>10.2e} {test_map:>8.4f} {extra}", flush=True)


def part_b(collection_dir, cache):
    hdr("b. Vaswani: SVM-map vs LightGBM LambdaMART (train on half the queries, test on the other half)")
    import pandas as pd
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.frames import candidates_from_frame
    import lightgbm as lgb
    coll, topics, frame, t_runs, timings = vaswani_candidates(collection_dir, cache)
    qids = list(topics["qid"])
    rng = np.random.default_rng(42)
    perm = rng.permutation(len(qids))
    train_q = {qids[i] for i in perm[: len(qids) // 2]}
    test_q = {qids[i] for i in perm[len(qids) // 2:]}
    train_res = frame[frame["qid"].isin(train_q)].reset_index(drop=True)
    test_res = frame[frame["qid"].isin(test_q)].reset_index(drop=True)
    qrels = coll.qrels
    train = candidates_from_frame(train_res, qrels)
    test = candidates_from_frame(test_res, qrels)
    print(f"{len(topics)} judged topics, {len(frame)} candidates × {train.raw.shape[1]} base functions "
          f"(train {len(train_res)}, test {len(test_res)}); runs {t_runs:.1f}s "
          f"(index {timings['index_seconds']:.1f}s, retrieval {timings['runs_seconds']:.1f}s, 0 = cached)")

    def test_map(scores):
        return float(average_precision(scores, test.labels, test.offsets, test.n_relevant).mean())

    print(f"{'model':<34} {'fit':>10} {'iters':>6} {'gap':>10} {'test MAP':>8}")
    out = {}
    # SVM-map, one C (through the estimator: frames → arrays → bins → cutting planes)
    import warnings
    warnings.simplefilter("ignore")
    SVMMap(C=C_FIXED).fit(train_res.head(5000), qrels)                   # warm-up (numba, imports)
    t = time.perf_counter()
    m = SVMMap(C=C_FIXED, epsilon=EPSILON).fit(train_res, qrels)
    out["svm"] = time.perf_counter() - t
    fit_report(f"SVM-map C={C_FIXED:g} (fit, from the frame)", out["svm"], m.n_iter_, m.history_[-1]["gap"],
               test_map(m.decision_function(test.raw, test.offsets)))
    # the same fit on the arrays, as LightGBM is timed below (no DataFrame → array conversion)
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    t = time.perf_counter()
    a = StructSVMRanker(C=C_FIXED, epsilon=EPSILON).fit(train.raw, train.labels, train.offsets)
    out["svm_arrays"] = time.perf_counter() - t
    fit_report(f"SVM-map C={C_FIXED:g} (fit, from arrays)", out["svm_arrays"], a.n_iter_, a.history_[-1]["gap"],
               test_map(a.decision_function(test.raw, test.offsets)))
    # C grid, validation = a quarter of the training queries
    tr_q = sorted(train_q)
    rng.shuffle(tr_q)
    va = set(tr_q[: len(tr_q) // 4])
    t = time.perf_counter()
    g = SVMMap(epsilon=EPSILON).fit(train_res[~train_res["qid"].isin(va)], qrels,
                                    train_res[train_res["qid"].isin(va)], qrels)
    out["grid"] = time.perf_counter() - t
    fit_report(f"SVM-map C grid (fit, 6 C)", out["grid"], g.n_iter_, g.history_[-1]["gap"],
               test_map(g.decision_function(test.raw, test.offsets)), f"chose C={g.C_:g}")
    # LightGBM LambdaMART on the raw base scores (NaN = not retrieved)
    sizes = np.diff(train.offsets)
    t = time.perf_counter()
    ranker = lgb.LGBMRanker(objective="lambdarank", verbose=-1, n_jobs=os.cpu_count())
    ranker.fit(train.raw, (train.labels > 0).astype(int), group=sizes)
    out["lgb"] = time.perf_counter() - t
    fit_report("LightGBM lambdarank (100 trees)", out["lgb"], 0, float("nan"), test_map(ranker.predict(test.raw)))
    print(f"target: SVM-map fit ≤ ⅓ of LightGBM's (both from arrays) — ratio {out['svm_arrays'] / out['lgb']:.3f} "
          f"(from the frame: {out['svm'] / out['lgb']:.3f}; C grid from the frame: {out['grid'] / out['lgb']:.3f})")


# -------------------------------------------------------------------------------------------------
# c. scaling on synthetic data (one subprocess per size)
# -------------------------------------------------------------------------------------------------
def synthetic(n, n_funcs=16, per_query=1000, seed=0, rel_rate=0.05):
    """Scores of 16 noisy base functions of a hidden relevance (5 % relevant), 10 % missing."""
    rng = np.random.default_rng(seed)
    n_q = max(1, n // per_query)
    n = n_q * per_query
    labels = (rng.random(n) < rel_rate).astype(np.int8)
    raw = np.empty((n, n_funcs))
    for f in range(n_funcs):
        col = rng.standard_normal(n)
        col += (0.3 + 0.1 * (f % 4)) * labels
        col[rng.random(n) < 0.1] = np.nan
        raw[:, f] = col
    return raw, labels, np.arange(n_q + 1, dtype=np.int64) * per_query


def scale_one(n):
    """Child process: build, encode and fit one synthetic size; prints one JSON line."""
    raw, labels, offsets = synthetic(n)
    # warm the kernels on a tiny problem so compile time is not in the measurement
    r0, l0, o0 = synthetic(4000, seed=1)
    e0 = FeatureEncoder("bins", 50).fit(r0, o0)
    train_structural_svm(e0.transform(r0, o0), l0, o0, make_slack_groups("map", C_FIXED), epsilon=EPSILON)
    t = time.perf_counter()
    enc = FeatureEncoder("bins", 50).fit(raw, offsets)
    X = enc.transform(raw, offsets)
    t_enc = time.perf_counter() - t
    del raw
    t = time.perf_counter()
    res = train_structural_svm(X, labels, offsets, make_slack_groups("map", C_FIXED), epsilon=EPSILON)
    t_fit = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2      # KiB → GiB
    print(json.dumps(dict(n=len(labels), encode=t_enc, fit=t_fit, iters=res.n_iter,
                          gap=res.history[-1]["gap"], rss_gb=rss,
                          per_iter=t_fit / res.n_iter)), flush=True)


def part_c(quick):
    hdr("c. scaling: synthetic, 1,000 candidates/query, 16 functions, 50 bins, C=%g" % C_FIXED)
    sizes = [10 ** k for k in range(4, 7 if quick else 8)]
    print(f"{'candidates':>11} {'encode s':>9} {'fit s':>8} {'iters':>6} {'s/iter':>8} {'gap':>10} {'peak RSS':>9}")
    got = []
    for n in sizes:
        p = subprocess.run([sys.executable, __file__, "--_scale-one", str(n)], capture_output=True, text=True)
        if p.returncode:
            print(f"{n:>11} failed: {p.stderr.strip().splitlines()[-1] if p.stderr else p.returncode}")
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        got.append(r)
        print(f"{r['n']:>11,} {r['encode']:>9.2f} {r['fit']:>8.2f} {r['iters']:>6} {r['per_iter']:>8.3f} "
              f"{r['gap']:>10.2e} {r['rss_gb']:>7.2f} GB", flush=True)
    if len(got) >= 2:
        x = np.log10([r["n"] for r in got])
        y = np.log10([r["fit"] for r in got])
        yi = np.log10([r["per_iter"] for r in got])
        slope = np.polyfit(x, y, 1)[0]
        slope_i = np.polyfit(x, yi, 1)[0]
        big = [r for r in got if r["n"] >= 10 ** 5]
        slope_big = np.polyfit(np.log10([r["n"] for r in big]), np.log10([r["fit"] for r in big]), 1)[0] \
            if len(big) >= 2 else float("nan")
        last = got[-1]
        print(f"encoding at {last['n']:,}: {last['encode'] / last['fit']:.2f}× the fit (target ≤ 1×) "
              f"{'✓' if last['encode'] <= last['fit'] else '✗'}")
        print(f"slope of log fit time vs log size: {slope:.3f} overall, {slope_big:.3f} from 10^5 "
              f"(10× data → {10 ** slope:.1f}× / {10 ** slope_big:.1f}× time); per iteration {slope_i:.3f} "
              f"(10× → {10 ** slope_i:.1f}×). target: 10× data ≤ 12× time, 10^7 within 24 GB")


# -------------------------------------------------------------------------------------------------
# m. bounded memory: training from a float32 memory map (one subprocess per size)
# -------------------------------------------------------------------------------------------------
MEMMAP_PEAK_GB = 8.0
MEMMAP_TIME_RATIO = 12.0


def write_memmap(path, n, n_funcs=16, per_query=1000, seed=0, rel_rate=0.05):
    """The synthetic scores of :func:`synthetic` (same model, other draws) written as a float32 .npy memory map of
    ``n`` candidates, 1,000 queries at a time, and their labels as int8 beside it (``path``.labels.npy)."""
    n_q = max(1, n // per_query)
    n = n_q * per_query
    raw = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, n_funcs))
    labels = np.lib.format.open_memmap(str(path) + ".labels.npy", mode="w+", dtype=np.int8, shape=(n,))
    rng = np.random.default_rng(seed)
    step = 1000 * per_query
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        lab = (rng.random(hi - lo) < rel_rate).astype(np.int8)
        block = rng.standard_normal((hi - lo, n_funcs)).astype(np.float32)
        block += ((0.3 + 0.1 * (np.arange(n_funcs) % 4)) * lab[:, None]).astype(np.float32)
        block[rng.random(block.shape) < 0.1] = np.nan
        raw[lo:hi] = block
        labels[lo:hi] = lab
    raw.flush()
    labels.flush()
    del raw, labels


def peak_rss_gb():
    """This process's peak resident set (VmHWM), GB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024 ** 2
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def memmap_one(path):
    """Child process: StructSVMRanker(features="bins", C=1) on the memory map at ``path``; one JSON line."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    raw = np.load(path, mmap_mode="r")
    labels = np.load(str(path) + ".labels.npy", mmap_mode="r")
    offsets = np.arange(0, len(raw) + 1, 1000, dtype=np.int64)
    r0, l0, o0 = synthetic(4000, seed=1)          # compile the kernels outside the measurement
    StructSVMRanker(features="bins", C=C_FIXED, epsilon=EPSILON).fit(r0.astype(np.float32), l0, o0)
    t = time.perf_counter()
    ranker = StructSVMRanker(features="bins", C=C_FIXED, epsilon=EPSILON).fit(raw, labels, offsets)
    total = time.perf_counter() - t
    solver = float(ranker.path_[0]["seconds"])
    print(json.dumps(dict(n=len(raw), prepare=total - solver, solver=solver, total=total, iters=int(ranker.n_iter_),
                          rss_gb=peak_rss_gb(), file_gb=os.path.getsize(path) / 1024 ** 3)), flush=True)


def part_m(quick):
    hdr("m. bounded memory: float32 memory map, 1,000 candidates/query, 16 functions, bins, C=%g" % C_FIXED)
    sizes = [10 ** 6, 10 ** 7] if quick else [10 ** 7, 10 ** 8]
    print(f"{'candidates':>12} {'file':>8} {'prepare s':>10} {'solver s':>9} {'total s':>8} {'iters':>6} "
          f"{'peak RSS':>9} {'bytes/cand':>10}")
    got = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "scores.npy")
            gen = subprocess.run([sys.executable, __file__, "--_write-memmap", path, str(n)], capture_output=True,
                                 text=True)
            if gen.returncode:
                print(f"{n:>12,} could not write the memory map: {gen.stderr.strip()[-300:]}")
                continue
            p = subprocess.run([sys.executable, __file__, "--_memmap-one", path], capture_output=True, text=True)
        if p.returncode:
            print(f"{n:>12,} failed: {p.stderr.strip()[-500:] if p.stderr else p.returncode}")
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        got.append(r)
        print(f"{r['n']:>12,} {r['file_gb']:>6.2f}GB {r['prepare']:>10.1f} {r['solver']:>9.1f} {r['total']:>8.1f} "
              f"{r['iters']:>6} {r['rss_gb']:>7.2f}GB {r['rss_gb'] * 1024 ** 3 / r['n']:>10.1f}", flush=True)
    if len(got) == 2:
        small, big = got
        ratio = big["total"] / small["total"]
        ok_t, ok_m = ratio <= MEMMAP_TIME_RATIO, big["rss_gb"] <= MEMMAP_PEAK_GB
        print(f"{big['n']:,} vs {small['n']:,}: total time ×{ratio:.2f} (target ≤ ×{MEMMAP_TIME_RATIO:g}) "
              f"{'✓' if ok_t else '✗'}; prepare ×{big['prepare'] / small['prepare']:.2f}, solver "
              f"×{big['solver'] / small['solver']:.2f}; peak RSS {big['rss_gb']:.2f} GB (target ≤ {MEMMAP_PEAK_GB:g} GB) "
              f"{'✓' if ok_m else '✗'}, {big['rss_gb'] / big['file_gb']:.2f}× the file")


# -------------------------------------------------------------------------------------------------
# s. svmmap learn on an svmlight file larger than memory would hold densely (generated, removed after)
# -------------------------------------------------------------------------------------------------
SVMLIGHT_PEAK_GB = 8.0


def svmlight_template(n_queries, per_query=1000, n_funcs=16, seed=0):
    """Fixed-width svmlight lines of ``n_queries`` queries as a uint8 (lines, width) array: label 0/1 (5 %
    relevant), ``qid:`` of 9 digits (filled in by the caller), features 1 … ``n_funcs`` as ``0.dddd`` drawn
    from the synthetic model (relevant lines score higher); and the column of the qid's last digit."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    labels = rng.random(n) < 0.05
    scores = rng.standard_normal((n, n_funcs)) + (0.3 + 0.1 * (np.arange(n_funcs) % 4)) * labels[:, None]
    digits = np.clip(np.round((scores + 4.0) / 8.0 * 9999), 0, 9999).astype(np.int64)
    head = b"0 qid:000000000"
    template = head + b"".join(b" %d:0.0000" % (j + 1) for j in range(n_funcs)) + b"\n"
    lines = np.tile(np.frombuffer(template, np.uint8), (n, 1))
    lines[:, 0] = 48 + labels
    pos = len(head)
    for j in range(n_funcs):
        pos += len(b" %d:0." % (j + 1))
        for k in range(4):
            lines[:, pos + 3 - k] = 48 + (digits[:, j] // 10 ** k) % 10
        pos += 4
    return lines, len(head) - 1


def write_svmlight(path, n, per_query=1000, block_queries=1000):
    """An svmlight file of ``n`` lines (``n / per_query`` queries): blocks of ``block_queries`` queries, ten
    different blocks of lines repeated, each with its own qids."""
    n_q = max(1, n // per_query)
    templates = [svmlight_template(min(block_queries, n_q), per_query, seed=s) for s in range(min(10, -(-n_q // block_queries)))]
    with open(path, "wb") as f:
        for b, q0 in enumerate(range(0, n_q, block_queries)):
            lines, last = templates[b % len(templates)]
            k = min(block_queries, n_q - q0)
            rows = lines[:k * per_query]
            qid = np.repeat(np.arange(q0 + 1, q0 + k + 1), per_query)
            for d in range(9):
                rows[:, last - d] = 48 + (qid // 10 ** d) % 10
            f.write(rows.tobytes())


def svmlight_one(path, model):
    """Child process: ``svmmap learn --bins 50 -c 1`` on the file at ``path``, as a user runs it; one JSON line
    with the seconds and the process's peak RSS."""
    import logging
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from pyterrier_svmmap.cli import main as svmmap
    t = time.perf_counter()
    rc = svmmap(["learn", "--bins", "50", "-c", str(C_FIXED), "-e", str(EPSILON), path, model])
    print(json.dumps(dict(rc=rc, seconds=time.perf_counter() - t, rss_gb=peak_rss_gb())), flush=True)


def part_s(quick):
    n = 10 ** 7 if quick else 10 ** 8
    hdr(f"s. svmmap learn --bins 50 -c {C_FIXED:g} on an svmlight file of {n:,} lines (1,000 per query, 16 features)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.txt")
        t = time.perf_counter()
        write_svmlight(path, n)
        size = os.path.getsize(path)
        print(f"file {size / 1024 ** 3:.2f} GB written in {time.perf_counter() - t:.0f}s; dense float64 matrix "
              f"{8 * n * 16 / 1024 ** 3:.1f} GB; disk free {shutil.disk_usage(tmp).free / 1024 ** 3:.0f} GB", flush=True)
        p = subprocess.run([sys.executable, __file__, "--_svmlight-one", path, os.path.join(tmp, "model")],
                           capture_output=True, text=True)
    if p.returncode:
        print(f"failed: {p.stderr.strip()[-800:]}")
        return
    r = json.loads(p.stdout.strip().splitlines()[-1])
    for line in p.stderr.strip().splitlines():
        print("  " + line)
    ok = r["rc"] == 0 and r["rss_gb"] <= SVMLIGHT_PEAK_GB
    print(f"svmmap learn: exit {r['rc']}, {r['seconds']:.0f}s, peak RSS {r['rss_gb']:.2f} GB "
          f"({r['rss_gb'] * 1024 ** 3 / n:.0f} B a line; target ≤ {SVMLIGHT_PEAK_GB:g} GB) {'✓' if ok else '✗'}")


# -------------------------------------------------------------------------------------------------
# e. the svmlight case
# -------------------------------------------------------------------------------------------------
def part_e(tmp):
    hdr("e. svmlight: 2,000 queries × 500 docs × 50 dense features (1 M lines)")
    from sklearn.datasets import dump_svmlight_file     # only to write the file
    rng = np.random.default_rng(7)
    n_q, per_q, d = 2000, 500, 50
    n = n_q * per_q
    X = np.round(rng.standard_normal((n, d)), 4)
    w_true = rng.standard_normal(d)
    z = X @ w_true / np.sqrt(d) + 0.5 * rng.standard_normal(n)
    y = (z > np.quantile(z, 0.95)).astype(int)                   # ~5 % relevant
    qid = np.repeat(np.arange(1, n_q + 1), per_q)
    path = Path(tmp) / "train.svmlight"
    t = time.perf_counter()
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)   # svmlight indices start at 1
    t_gen = time.perf_counter() - t
    del X
    t = time.perf_counter()
    from pyterrier_svmmap.io.svmlight import read_svmlight       # the reader of `svmmap learn`
    data = read_svmlight(str(path))
    Xd, ys = data.features[data.order], data.labels[data.order]
    offsets = data.offsets
    t_parse = time.perf_counter() - t
    reader = "pyterrier_svmmap.io.svmlight.read_svmlight"
    n_train_q = int(0.8 * n_q)
    cut = offsets[n_train_q]
    tr_off, te_off = offsets[: n_train_q + 1], offsets[n_train_q:] - cut
    t = time.perf_counter()
    enc = FeatureEncoder("raw").fit(Xd[:cut], tr_off)
    Xtr = enc.transform(Xd[:cut], tr_off)
    res = train_structural_svm(Xtr, ys[:cut], tr_off, make_slack_groups("map", C_FIXED), epsilon=EPSILON)
    t_train = time.perf_counter() - t
    scores = enc.transform(Xd[cut:], te_off).dot(res.w)
    test_map = float(average_precision(scores, ys[cut:], te_off).mean())
    oracle = float(average_precision(Xd[cut:] @ w_true, ys[cut:], te_off).mean())
    print(f"file {path.stat().st_size / 1e6:.0f} MB written in {t_gen:.1f}s; parse ({reader}) "
          f"{t_parse:.2f}s; SVM-map train on {n_train_q} queries {t_train:.2f}s "
          f"({res.n_iter} iterations, gap {res.history[-1]['gap']:.2e}); end to end {t_parse + t_train:.2f}s")
    print(f"test MAP on {n_q - n_train_q} held-out queries: {test_map:.4f} (hidden model's own: {oracle:.4f})")
    print("reference on this machine: svm_map_learn 397 s, svm_rank_learn 65 s (~12 s parsing), svm_perf 14 s. "
          f"target: ≤ 2 s training ({t_train:.2f}), ≤ 20 s end to end ({t_parse + t_train:.2f})")


# -------------------------------------------------------------------------------------------------
# h. argmax of every loss vs MAP's
# -------------------------------------------------------------------------------------------------
ARGMAX_LOSSES = [("map", {}), ("roc", {}), ("ndcg@10", {}), ("ndcg", {}), ("mrr@10", {}),
                 ("dorm@10", dict(window=20)), ("combo", dict(losses=["map", "ndcg@10", "mrr@10"]))]


def part_h(quick):
    """µs of get_loss(name).batch_violation on 300 × 1,000 candidates (5 % relevant), ratio to map's."""
    from pyterrier_svmmap.svm.losses import get_loss
    n_q, n = 300, 1000
    hdr(f"h. loss argmax (batch_violation) on {n_q} queries × {n:,} candidates, 5 % relevant")
    scores, labels, offsets = random_queries(np.random.default_rng(11), n_q, n, 0.05)
    repeat = 3 if quick else 7
    times = {}
    print(f"{'loss':<50} {'batch ms':>9} {'µs/query':>9} {'÷ map':>7}")
    for name, kw in ARGMAX_LOSSES:
        loss = get_loss(name, **kw)
        times[name] = timed(lambda: loss.batch_violation(scores, labels, offsets), repeat)   # warmed first
        label = name + (f" {kw}" if kw else "")
        print(f"{label:<50} {times[name] * 1e3:>9.2f} {times[name] / n_q * 1e6:>9.1f} "
              f"{times[name] / times['map']:>7.2f}", flush=True)
    worst = max(times, key=lambda k: times[k] / times["map"])
    print(f"target: every loss ≤ 3× map's — worst {worst} {times[worst] / times['map']:.2f}×")


def part_f(quick):
    hdr("f. MQ2008 (LETOR 4.0) protocol: 5 folds, selection on vali, test MAP / NDCG@10")
    import mq2008
    mq2008.protocol(quick=quick)


def part_g(quick):
    hdr("g. C path: StructSVMRanker(C=grid of 6, validation) ÷ one fit at C = 1")
    import mq2008
    mq2008.part_g(quick, synthetic)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller part a, scaling up to 10^6 only")
    ap.add_argument("--collection", default=str(REPO.parent / "shared" / "data" / "vaswani"))
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "pyterrier-svmmap-bench"))
    ap.add_argument("--parts", default="abcefghms", help="letters of the parts to run (default: all)")
    ap.add_argument("--_scale-one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--_write-memmap", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--_memmap-one", help=argparse.SUPPRESS)
    ap.add_argument("--_svmlight-one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._svmlight_one:
        svmlight_one(*args._svmlight_one)
        return
    if args._scale_one:
        scale_one(args._scale_one)
        return
    if args._write_memmap:
        write_memmap(args._write_memmap[0], int(args._write_memmap[1]))
        return
    if args._memmap_one:
        memmap_one(args._memmap_one)
        return
    print(f"pyterrier-svmmap speed benchmark; numpy {np.__version__}, {os.cpu_count()} cores, "
          f"numba {numba.__version__}{' (quick)' if args.quick else ''}")
    t0 = time.perf_counter()
    if "a" in args.parts:
        part_a(args.quick)
    if "b" in args.parts:
        if Path(args.collection).exists():
            part_b(args.collection, Path(args.cache))
        else:
            print(f"\n(b skipped: no collection at {args.collection}; pass --collection DIR)")
    if "c" in args.parts:
        part_c(args.quick)
    if "e" in args.parts:
        with tempfile.TemporaryDirectory() as tmp:
            part_e(tmp)
    mq_here = (REPO.parent / "shared" / "data" / "letor" / "MQ2008").exists()
    for letter, part in (("f", part_f), ("g", part_g)):
        if letter in args.parts:
            if mq_here:
                part(args.quick)
            else:
                print(f"\n({letter} skipped: no MQ2008 at {REPO.parent / 'shared/data/letor/MQ2008'})")
    if "h" in args.parts:
        part_h(args.quick)
    if "m" in args.parts:
        part_m(args.quick)
    if "s" in args.parts:
        part_s(args.quick)
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
