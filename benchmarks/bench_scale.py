"""Memory and time as the data grow: in memory up to 10⁷ candidates, from a memory map of 10⁸, and an svmlight
file of 10⁸ lines larger than memory would hold densely, every size in its own process (its own peak RSS).

Usage::

    python benchmarks/bench_scale.py [--quick] [--only memory,memmap,svmlight]

Sections (synthetic data: 1,000 candidates per query, 16 functions, 5 % relevant; 50 bins, C = 1; results in
docs/performance.md):

* ``memory``: 10⁴ … 10⁷ candidates in memory: encoding and fit seconds, iterations, peak RSS (targets: 10× the
  data ≤ 12× the time; the encoding ≤ the fit at the largest size);
* ``memmap``: training from a float32 ``.npy`` memory map of 10⁷ and 10⁸ candidates (targets at 10⁸: peak RSS
  ≤ 8 GB; total time ≤ 12× the 10⁷ run's);
* ``svmlight``: ``svmmap learn --bins 50 -c 1`` on a generated svmlight file of 10⁸ lines (about 16 GB of
  text): seconds and peak RSS (target ≤ 8 GB).

About 20 minutes on 2 cores with 24 GB of memory and 25 GB of free disk (``--quick``: 10⁴–10⁵, 10⁵ and 10⁶
candidates, 10⁶ lines; about a minute, the targets judged on these sizes).
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile

import numpy as np

from _common import child, main, peak_rss_gb, synthetic, target, timed, write_svmlight

PEAK_GB = 8.0
TIME_RATIO = 12.0


def warm_kernels():
    """A tiny fit, so that the kernels load from numba's cache outside the measurement."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    raw, labels, offsets = synthetic(4000, seed=1)
    StructSVMRanker(features="bins", C=1.0).fit(raw.astype(np.float32), labels, offsets)


def in_memory(n):
    """Child: encode and fit ``n`` synthetic candidates held as float64."""
    from pyterrier_svmmap.features.encoder import FeatureEncoder
    from pyterrier_svmmap.svm.cutting_plane import train_structural_svm
    from pyterrier_svmmap.svm.slack import make_slack_groups
    raw, labels, offsets = synthetic(int(n))
    warm_kernels()
    X, t_enc = timed(lambda r: FeatureEncoder("bins", 50).fit(r, offsets).transform(r, offsets), raw)
    del raw
    res, t_fit = timed(train_structural_svm, X, labels, offsets, make_slack_groups("map", 1.0), epsilon=1e-3)
    return dict(n=len(labels), encode=t_enc, fit=t_fit, iters=res.n_iter, rss_gb=peak_rss_gb())


def memory(args):
    """in memory: encoding and fit time, peak RSS, 10⁴ … 10⁷ candidates"""
    print(f"{'candidates':>11} {'encode s':>9} {'fit s':>8} {'iters':>6} {'s/iter':>8} {'peak RSS':>9}")
    got = []
    for n in [10 ** k for k in range(4, 6 if args.quick else 8)]:
        r = child(__file__, "in_memory", n)
        if r:
            got.append(r)
            print(f"{r['n']:>11,} {r['encode']:>9.2f} {r['fit']:>8.2f} {r['iters']:>6} {r['fit'] / r['iters']:>8.3f} "
                  f"{r['rss_gb']:>7.2f} GB", flush=True)
    if len(got) >= 2:
        big = [r for r in got if r["n"] >= 10 ** 5] if len(got) > 2 else got
        slope = np.polyfit(np.log10([r["n"] for r in big]), np.log10([r["fit"] for r in big]), 1)[0]
        last = got[-1]
        print(f"slope of log fit time against log size from {big[0]['n']:,}: {slope:.2f}")
        target(f"10× the data ≤ 12× the fit time: {10 ** slope:.1f}×", 10 ** slope <= TIME_RATIO)
        target(f"encoding ≤ the fit at {last['n']:,}: {last['encode'] / last['fit']:.2f}×",
               last["encode"] <= last["fit"])


def write_memmap(path, n, n_funcs=16, per_query=1000):
    """Synthetic scores as a float32 ``.npy`` memory map of ``n`` candidates and int8 labels beside it
    (``path.labels.npy``), 1,000 queries at a time."""
    n = max(1, n // per_query) * per_query
    raw = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, n_funcs))
    labels = np.lib.format.open_memmap(path + ".labels.npy", mode="w+", dtype=np.int8, shape=(n,))
    for b, lo in enumerate(range(0, n, 1000 * per_query)):
        r, y, _ = synthetic(min(n - lo, 1000 * per_query), n_funcs, per_query, seed=b)
        raw[lo:lo + len(y)], labels[lo:lo + len(y)] = r, y
    raw.flush()
    labels.flush()


def from_memmap(path):
    """Child: StructSVMRanker(features="bins", C=1) on the memory map at ``path``."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    raw, labels = np.load(path, mmap_mode="r"), np.load(path + ".labels.npy", mmap_mode="r")
    warm_kernels()
    ranker, total = timed(StructSVMRanker(features="bins", C=1.0).fit, raw, labels, np.arange(0, len(raw) + 1, 1000))
    solver = float(ranker.path_[0]["seconds"])
    return dict(n=len(raw), prepare=total - solver, solver=solver, total=total, iters=int(ranker.n_iter_),
                rss_gb=peak_rss_gb(), file_gb=os.path.getsize(path) / 1024 ** 3)


def memmap(args):
    """bounded memory: training from a float32 memory map of 10⁷ and 10⁸ candidates"""
    print(f"{'candidates':>12} {'file':>8} {'prepare s':>10} {'solver s':>9} {'total s':>8} {'iters':>6} "
          f"{'peak RSS':>9} {'B/cand':>7}")
    got = []
    for n in [10 ** 5, 10 ** 6] if args.quick else [10 ** 7, 10 ** 8]:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "scores.npy")
            write_memmap(path, n)
            r = child(__file__, "from_memmap", path)
        if r:
            got.append(r)
            print(f"{r['n']:>12,} {r['file_gb']:>6.2f}GB {r['prepare']:>10.1f} {r['solver']:>9.1f} {r['total']:>8.1f} "
                  f"{r['iters']:>6} {r['rss_gb']:>7.2f}GB {r['rss_gb'] * 1024 ** 3 / r['n']:>7.0f}", flush=True)
    if len(got) == 2:
        small, big = got
        ratio = big["total"] / small["total"]
        print(f"{big['n']:,} ÷ {small['n']:,}: prepare ×{big['prepare'] / small['prepare']:.2f}, solver "
              f"×{big['solver'] / small['solver']:.2f}; peak RSS {big['rss_gb'] / big['file_gb']:.2f}× the file")
        target(f"{big['n']:,} from a memory map: total time ≤ {TIME_RATIO:g}× {small['n']:,}'s: ×{ratio:.2f}",
               ratio <= TIME_RATIO)
        target(f"{big['n']:,} from a memory map: peak RSS ≤ {PEAK_GB:g} GB: {big['rss_gb']:.2f} GB",
               big["rss_gb"] <= PEAK_GB)


def learn(path, model):
    """Child: ``svmmap learn --bins 50 -c 1`` on ``path``, as a user runs it."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from pyterrier_svmmap.cli import main as svmmap
    rc, seconds = timed(svmmap, ["learn", "--bins", "50", "-c", "1", "-e", "1e-3", path, model])
    return dict(rc=rc, seconds=seconds, rss_gb=peak_rss_gb())


def svmlight(args):
    """svmmap learn on an svmlight file of 10⁸ lines (1,000 per query, 16 features)"""
    n = 10 ** 6 if args.quick else 10 ** 8
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.txt")
        seconds = timed(write_svmlight, path, n)[1]
        print(f"{n:,} lines, {os.path.getsize(path) / 1024 ** 3:.2f} GB written in {seconds:.0f} s; "
              f"as dense float64 {8 * n * 16 / 1024 ** 3:.1f} GB; disk free "
              f"{shutil.disk_usage(tmp).free / 1024 ** 3:.0f} GB", flush=True)
        r = child(__file__, "learn", path, os.path.join(tmp, "model"), echo=True)
    if r:
        print(f"svmmap learn: exit {r['rc']}, {r['seconds']:.0f} s, peak RSS {r['rss_gb']:.2f} GB "
              f"({r['rss_gb'] * 1024 ** 3 / n:.0f} B a line)")
        target(f"svmmap learn on {n:,} svmlight lines: peak RSS ≤ {PEAK_GB:g} GB: {r['rss_gb']:.2f} GB",
               r["rc"] == 0 and r["rss_gb"] <= PEAK_GB)


if __name__ == "__main__":
    main(__doc__, dict(memory=memory, memmap=memmap, svmlight=svmlight),
         children=dict(in_memory=in_memory, from_memmap=from_memmap, learn=learn))
