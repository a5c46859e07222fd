"""Threads, single-query argmax, start-up, the C path, the command-line workflow and the LightGBM comparison:
every ratio of the speed targets in one run.

Usage::

    python benchmarks/bench_speed.py [--quick] [--repeat N] [--parts taslpcd]

Parts (each a ratio of medians over ``--repeat`` runs, reference and candidate interleaved in one process,
or, for start-up, in fresh processes started alternately):

t. threads: ``StructSVMRanker(C=1, n_jobs=2).fit`` ÷ ``n_jobs=1`` on 500 queries × 1,000 candidates × 16
   functions (50 bins), and the weights of n_jobs = 1, 2, 3 compared bit for bit (target ≥ 1.5×, same bits);
a. argmax: every loss's public ``most_violated`` on 300 queries × 1,000 candidates (5 % relevant), one query
   per call, ÷ MAP's (target ≤ 3×);
s. start-up: ``svmmap learn`` and ``svmmap classify`` on a 40-line file (fresh processes, kernels already in
   numba's cache), their ratio, and what numba itself costs (its import and one cached kernel's load);
l. ``SVMMap(C=1)``'s learner (``StructSVMRanker(C=1)``, 50 bins) ÷ LightGBM lambdarank (100 trees, its default
   threads) on 200 queries × 1,000 candidates × 16 functions (target ≤ 1/3);
p. the C path on LETOR MQ2008 Fold 1 (``../shared/data/letor/MQ2008``): ``StructSVMRanker`` with the 6-value
   grid 0.01 … 1000 and validation on ``vali``, 50 bins, ÷ one cold fit at C = 1000 alone (target ≤ 1.3×), and
   the 50-bin grid ÷ the raw grid (target ≤ 3×), with each C's iterations;
c. the command-line workflow on the 5 MQ2008 folds: one ``svmmap learn -c 0.01,…,1000 --valid vali.txt`` and
   one ``svmmap classify`` per fold, processes and parsing included, against svm_rank's per-C workflow
   (``svm_rank_learn`` once per C, ``svm_rank_classify`` of vali per C and of test once), 21.3 s on this
   machine's kind when it was measured (svm_rank is not installed here): target ≤ 0.3×, mean test MAP within
   0.005 of svm_rank's 0.4719;
d. Dask: ``benchmarks/bench_dask.py``'s overhead case (1,000 queries × 300 candidates × 16 functions, bins,
   C = 100, shards of 100 queries) on a 2-worker LocalCluster ÷ one process (target ≤ 1.2×), with the
   overhead per oracle call.

The machine's load average is printed at the start and the end: on a shared machine the thread ratio is
bounded by the cores actually free, which part t measures alongside (a trivially parallel loop on 1 and 2
threads), together with the calling thread's CPU time per fit (what stays on the critical path when a second
core is free).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pyterrier_svmmap.svm.ranker import StructSVMRanker  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import synthetic  # noqa: E402  (the synthetic base scores of the scaling benchmark)


def interleaved(fns: dict, repeat: int) -> dict:
    """name → list of seconds: every function once per round, ``repeat`` rounds (after one warm-up round)."""
    for f in fns.values():
        f()
    out = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append(time.perf_counter() - t)
    return out


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def part_threads(repeat: int, quick: bool):
    n = 100_000 if quick else 500_000
    print(f"\n=== t. threads: StructSVMRanker(C=1, 50 bins) on {n // 1000} queries × 1,000 × 16 ===", flush=True)
    raw, labels, offsets = synthetic(n)
    fits, cpu = {}, {1: [], 2: []}

    def fit(j):
        def run():
            t = time.thread_time()
            fits[j] = StructSVMRanker(C=1.0, n_jobs=j).fit(raw, labels, offsets)
            cpu.setdefault(j, []).append(time.thread_time() - t)
        return run
    spin = spinner()
    times = interleaved({1: fit(1), 2: fit(2), "spin1": lambda: spin(1), "spin2": lambda: spin(2)}, repeat)
    fit(3)()
    same = all(np.array_equal(fits[1].coef_, fits[j].coef_) and
               [h["primal"] for h in fits[1].history_] == [h["primal"] for h in fits[j].history_] for j in (2, 3))
    m1, m2 = np.median(times[1]), np.median(times[2])
    print(f"n_jobs=1: {m1:.3f} s (runs {np.round(times[1], 3).tolist()})")
    print(f"n_jobs=2: {m2:.3f} s (runs {np.round(times[2], 3).tolist()})")
    free = np.median(times["spin1"]) / np.median(times["spin2"])
    print(f"cores free for a second thread meanwhile: a trivially parallel loop ran {free:.2f}× faster on 2 "
          f"threads (2.0 on an idle machine; runs {np.round(np.array(times['spin1']) / times['spin2'], 2).tolist()})")
    free_rounds = [i for i in range(repeat) if times["spin1"][i] / times["spin2"][i] >= 1.8]
    if free_rounds:
        paired = [times[1][i] / times[2][i] for i in free_rounds]
        print(f"in the {len(free_rounds)} of {repeat} rounds with a second core free (loop ≥ 1.8×): "
              f"n_jobs=1 / n_jobs=2 = {np.median(paired):.2f}× (rounds {np.round(paired, 2).tolist()})")
    c1, c2 = np.median(cpu[1]), np.median(cpu[2])
    print(f"CPU time of the calling thread: n_jobs=1 {c1:.3f} s, n_jobs=2 {c2:.3f} s: the work left on the critical "
          f"path bounds the speed-up with a free second core at {c1 / c2:.2f}× (independent of the load)")
    print(f"ratio n_jobs=1 / n_jobs=2: {m1 / m2:.2f}×  (target ≥ 1.5×); {fits[1].n_iter_} iterations; "
          f"weights and objectives of n_jobs=1, 2, 3 {'identical bit for bit' if same else 'DIFFER'}")


def spinner():
    """``spin(k)``: the same fixed work (~0.1 s on one core) cut into k pieces on k threads, nogil: how much a
    second thread can run alongside on this machine at the moment."""
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
    n = 100_000_000

    def spin(k):
        return list(pool.map(loop, [n // k] * k))
    return spin


ARGMAX = [("map", {}), ("roc", {}), ("ndcg", {}), ("ndcg@10", {}), ("mrr@10", {}), ("dorm@10", dict(window=20)),
          ("combo", dict(losses=["map", "ndcg@10", "mrr@10"])), ("acc", {}), ("acc2", {})]


def part_argmax(repeat: int, quick: bool):
    from pyterrier_svmmap.svm.losses import most_violated
    n_q, n = (100 if quick else 300), 1000
    print(f"\n=== a. most_violated, one query per call: {n_q} queries × {n:,} candidates, 5 % relevant ===",
          flush=True)
    rng = np.random.default_rng(11)
    S = rng.standard_normal((n_q, n))
    Z = (rng.random((n_q, n)) < 0.05).astype(int)
    Z[:, 0] = 1

    def all_queries(name, kw):
        return lambda: [most_violated(S[q], Z[q], loss=name, **kw) for q in range(n_q)]
    times = interleaved({name: all_queries(name, kw) for name, kw in ARGMAX}, repeat)
    base = np.median(times["map"])
    print(f"{'loss':<12} {'ms':>8} {'µs/query':>9} {'÷ map':>7}")
    for name, _ in ARGMAX:
        t = np.median(times[name])
        print(f"{name:<12} {t * 1e3:>8.1f} {t / n_q * 1e6:>9.1f} {t / base:>7.2f}")
    worst = max((k for k, _ in ARGMAX), key=lambda k: np.median(times[k]))
    print(f"target: every loss ≤ 3× map's — worst {worst} {np.median(times[worst]) / base:.2f}×")


CLI = "import sys; from pyterrier_svmmap.cli import main; sys.exit(main(sys.argv[1:]))"
NUMBA_ONLY = ("import time; t = time.perf_counter(); import numpy as np; t1 = time.perf_counter(); import numba; "
              "t2 = time.perf_counter(); import pyterrier_svmmap.features._kernels as k; "
              "k.cumulative_table(np.zeros(4), 2, 2); t3 = time.perf_counter(); "
              "print(t2 - t1, t3 - t2)")


def part_startup(repeat: int, quick: bool):
    print("\n=== s. start-up: svmmap learn / classify on a 40-line file (fresh processes) ===", flush=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        train = Path(tmp) / "train.txt"
        with open(train, "w") as f:
            for q in range(4):
                for d in range(10):
                    label = 1 if d == 0 else int(rng.random() < 0.3) if d > 1 else 0
                    f.write(f"{label} qid:{q + 1} " + " ".join(f"{i + 1}:{rng.random():.4f}" for i in range(5)) + "\n")
        model = Path(tmp) / "model"
        learn = [sys.executable, "-c", CLI, "learn", "-c", "1", str(train), str(model)]
        classify = [sys.executable, "-c", CLI, "classify", str(train), str(model), str(Path(tmp) / "pred")]
        subprocess.run(learn, env=env, check=True, capture_output=True)        # kernels into numba's cache

        def proc(cmd):
            return lambda: subprocess.run(cmd, env=env, check=True, capture_output=True)
        times = interleaved({"learn": proc(learn), "classify": proc(classify)}, repeat)
        numba_parts = [subprocess.run([sys.executable, "-c", NUMBA_ONLY], env=env, check=True, capture_output=True,
                                      text=True).stdout.split() for _ in range(repeat)]
    ml, mc = np.median(times["learn"]), np.median(times["classify"])
    imp, first = np.median([float(a) for a, _ in numba_parts]), np.median([float(b) for _, b in numba_parts])
    print(f"svmmap learn:    {ml:.3f} s (runs {np.round(times['learn'], 3).tolist()})")
    print(f"svmmap classify: {mc:.3f} s (runs {np.round(times['classify'], 3).tolist()})")
    print(f"ratio learn / classify: {ml / mc:.2f}×; difference {ml - mc:.3f} s, of which numba's own cost: "
          f"import numba {imp:.3f} s + first cached kernel (numba's CPU target and cache load) {first:.3f} s")


def part_lightgbm(repeat: int, quick: bool):
    import lightgbm as lgb
    n = 50_000 if quick else 200_000
    print(f"\n=== l. SVMMap(C=1)'s learner vs LightGBM lambdarank (100 trees, default threads), "
          f"{n // 1000} queries × 1,000 × 16 ===", flush=True)
    raw, labels, offsets = synthetic(n, seed=5)

    def ours():
        StructSVMRanker(C=1.0).fit(raw, labels, offsets)

    def theirs():
        lgb.LGBMRanker(objective="lambdarank", n_estimators=100, verbose=-1).fit(
            np.nan_to_num(raw, nan=-1e9), labels, group=np.diff(offsets))
    times = interleaved({"svmmap": ours, "lightgbm": theirs}, repeat)
    a, b = np.median(times["svmmap"]), np.median(times["lightgbm"])
    print(f"StructSVMRanker(C=1): {a:.3f} s (runs {np.round(times['svmmap'], 3).tolist()})")
    print(f"LightGBM lambdarank:  {b:.3f} s (runs {np.round(times['lightgbm'], 3).tolist()})")
    print(f"ratio ours / LightGBM: {a / b:.2f}  (target ≤ 0.33)")


def part_c_path(repeat: int, quick: bool):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import warnings
    from mq2008 import C_GRID, DATA, EPSILON, N_BINS, load_folds
    print(f"\n=== p. the C path on MQ2008 Fold 1 ({DATA}), grid {C_GRID}, validation on vali ===", flush=True)
    folds, _ = load_folds((1,))
    tr, va = folds[1]["train"], folds[1]["vali"]
    paths = {}

    def fit(C, features):
        def run():
            r = StructSVMRanker(C=C, features=features, n_bins=N_BINS, epsilon=EPSILON)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r.fit(tr.raw, tr.labels, tr.offsets, valid=(va.raw, va.labels, va.offsets))
            paths[(str(C), features)] = r.path_
        return run
    times = interleaved({"bins C=1000": fit(1000.0, "bins"), "bins grid": fit(list(C_GRID), "bins"),
                         "raw grid": fit(list(C_GRID), "raw"), "raw C=1000": fit(1000.0, "raw")},
                        max(1, repeat // 2 if quick else repeat))
    med = {k: float(np.median(v)) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:<12} {med[k]:.3f} s (runs {np.round(v, 3).tolist()})")
    for features in ("bins", "raw"):
        its = " ".join(f"{p['C']:g}:{p['n_iter']}" for p in paths[(str(list(C_GRID)), features)])
        print(f"iterations per C, {features}: {its}; cold C=1000: {paths[('1000.0', features)][0]['n_iter']}")
    print(f"ratio bins grid / cold bins C=1000: {med['bins grid'] / med['bins C=1000']:.2f}×  (target ≤ 1.3×)")
    print(f"ratio bins grid / raw grid: {med['bins grid'] / med['raw grid']:.1f}×  (target ≤ 3×)")


#: svm_rank's per-C workflow on the 5 MQ2008 folds (learn per C, classify vali per C and test once), measured
#: with svm_rank built from source on this machine's kind: seconds, mean test MAP
SVM_RANK_WORKFLOW = (21.3, 0.4719)


def part_cli(repeat: int, quick: bool):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from mq2008 import C_GRID, DATA, Split, letor_map, load_split
    print("\n=== c. the command line on the 5 MQ2008 folds: svmmap learn (grid, --valid) + classify per fold ===",
          flush=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    grid = ",".join(f"{c:g}" for c in C_GRID)
    runs, maps = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(max(1, 1 if quick else repeat // 2)):
            t = time.perf_counter()
            for k in range(1, 6):
                fold = DATA / f"Fold{k}"
                model, pred = Path(tmp) / f"m{k}", Path(tmp) / f"p{k}"
                subprocess.run([sys.executable, "-c", CLI, "learn", "-c", grid, "--valid", str(fold / "vali.txt"),
                                "--force", str(fold / "train.txt"), str(model)], env=env, check=True, capture_output=True)
                subprocess.run([sys.executable, "-c", CLI, "classify", str(fold / "test.txt"), str(model), str(pred)],
                               env=env, check=True, capture_output=True)
            runs.append(time.perf_counter() - t)
        for k in range(1, 6):
            test: Split = load_split(DATA / f"Fold{k}" / "test.txt")
            maps.append(letor_map(np.loadtxt(Path(tmp) / f"p{k}"), test))
    ours = float(np.median(runs))
    print(f"svmmap, 5 folds: {ours:.2f} s (runs {np.round(runs, 2).tolist()}), mean test MAP {np.mean(maps):.4f}")
    fold_breakdown(env, grid, 1 if quick else max(1, repeat // 2))
    print(f"svm_rank's per-C workflow (recorded): {SVM_RANK_WORKFLOW[0]:.1f} s, mean test MAP {SVM_RANK_WORKFLOW[1]:.4f}")
    ratio, gap = ours / SVM_RANK_WORKFLOW[0], np.mean(maps) - SVM_RANK_WORKFLOW[1]
    print(f"ratio ours / svm_rank (recorded): {ratio:.2f}× (target ≤ 0.3×) {'✓' if ratio <= 0.3 else '✗'}; MAP "
          f"difference {gap:+.4f} (target within 0.005) {'✓' if abs(gap) <= 0.005 else '✗'}")


#: one ``svmmap learn`` or ``classify`` in a fresh process, its phases timed: the interpreter and the command's
#: imports (to ``main``), parsing (``read_svmlight``), numba (its import and its first cached kernel's load,
#: done ahead of the fit), the fit, and what follows (scoring, writing); printed as JSON on stdout
PHASES = """
import json, sys, time
t0 = time.perf_counter()
import pyterrier_svmmap.io.svmlight as svmlight
from pyterrier_svmmap.cli import main
spent = dict(parse=0.0, numba=0.0, fit=0.0)
read = svmlight.read_svmlight
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
total = time.perf_counter() - t0
spent["imports"] = t1 - t0
spent["rest"] = total - sum(spent.values())
print(json.dumps(spent))
"""


def fold_breakdown(env: dict, grid: str, repeat: int) -> None:
    """Where one fold's ``svmmap learn`` and ``classify`` spend their time (Fold 1, medians of ``repeat``),
    the interpreter's start (``python -c pass``) apart."""
    import json
    fold = Path(__file__).resolve().parents[2] / "shared" / "data" / "letor" / "MQ2008" / "Fold1"
    rows = {"learn": [], "classify": [], "start": []}
    with tempfile.TemporaryDirectory() as tmp:
        model, pred = Path(tmp) / "m", Path(tmp) / "p"
        learn = ["learn", "-c", grid, "--valid", str(fold / "vali.txt"), "--force", str(fold / "train.txt"), str(model)]
        classify = ["classify", str(fold / "test.txt"), str(model), str(pred)]
        for _ in range(repeat):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            rows["start"].append(time.perf_counter() - t)
            for name, argv in (("learn", learn), ("classify", classify)):
                t = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", PHASES, *argv], env=env, check=True, capture_output=True,
                                   text=True)
                phases = json.loads(p.stdout.strip().splitlines()[-1])
                phases["process"] = time.perf_counter() - t
                rows[name].append(phases)
    start = float(np.median(rows["start"]))
    print(f"per fold (Fold 1, medians of {repeat}): interpreter start {start:.2f} s")
    for name in ("learn", "classify"):
        med = {k: float(np.median([r[k] for r in rows[name]])) for k in rows[name][0]}
        print(f"  svmmap {name:8s} {med['process']:.2f} s: imports {med['imports']:.2f}, parse {med['parse']:.2f}, "
              f"numba {med['numba']:.2f}, fit {med['fit']:.2f}, rest {med['rest']:.2f} (+ start and exit "
              f"{med['process'] - sum(v for k, v in med.items() if k != 'process'):.2f})")


def part_dask(repeat: int, quick: bool):
    print("\n=== d. Dask: a 2-worker LocalCluster against one process (benchmarks/bench_dask.py's overhead case) ===",
          flush=True)
    from bench_dask import overhead
    out = overhead(max(1, repeat // 2) if quick else repeat)
    print(f"ratio 2-worker LocalCluster / one process: {out['ratio']:.2f}×  (target ≤ 1.2×); overhead per oracle "
          f"call {out['overhead'] * 1e3:.1f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller data (for a smoke run)")
    ap.add_argument("--repeat", type=int, default=5, help="rounds per measurement (default 5)")
    ap.add_argument("--parts", default="taslpcd", help="letters of the parts to run (default: all)")
    args = ap.parse_args()
    print(f"pyterrier-svmmap speed benchmark (threads, argmax, start-up, LightGBM, C path, command line, Dask); "
          f"numpy {np.__version__}; {load()}")
    t0 = time.perf_counter()
    for letter, part in (("t", part_threads), ("a", part_argmax), ("s", part_startup), ("l", part_lightgbm),
                         ("p", part_c_path), ("c", part_cli), ("d", part_dask)):
        if letter in args.parts:
            part(args.repeat, args.quick)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; {load()}")


if __name__ == "__main__":
    main()
