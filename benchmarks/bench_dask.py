"""Scale-out benchmark of pyterrier-svmmap's distributed training (issue "Scale-out"), one run, ratios.

Usage::

    python benchmarks/bench_dask.py [--quick] [--repeat R] [--tmp DIR]
    python benchmarks/bench_dask.py --overhead      # the per-iteration overhead case only (about 2 minutes)
    python benchmarks/bench_dask.py --targets       # the default on Dask's targets only, with ✓/✗

The targets (:func:`targets`, first in every full run): the package's default (``selection="auto"``) with
``executor=client`` on a plain 2-worker LocalCluster gives one process's model (C_, features_, coef_ within
relative 1e-8), with cross-validation only and with a validation set; and the overhead case below on a plain
user ``LocalCluster(n_workers=2, threads_per_worker=1)`` (without and with the package's worker plugin) and on
``executor="local"``, each as its median ratio to one process in interleaved rounds (target ≤ 1.5).

First, the per-iteration overhead (:func:`overhead`): 1,000 queries × 300 candidates × 16 functions,
``StructSVMRanker(C=100, features="bins", queries_per_shard=100)`` (10 shards, about 70 iterations and 210
oracle calls), fitted in one process and on a 2-worker LocalCluster in turn, in this process, at least 3
times: the ratio of the fit times (medians), the tasks per oracle call, and per oracle call the busiest
worker's argmax time, the rest (overhead), and where an empty task's round trip goes (driver → scheduler →
worker → scheduler → driver). With ``--overhead`` this case runs alone, on the cluster ``executor="local"``
makes and on a LocalCluster with Dask's defaults.

Then, for each size (10⁶ and 10⁷ candidates; 10⁵ and 10⁶ with ``--quick``) of the synthetic data of
``benchmarks/bench.py`` part c (1,000 candidates per query, 16 base functions, 5 % relevant, 10 % not
retrieved), ``StructSVMRanker(C=1.0, features="bins", n_bins=50)`` is fitted

* **one process**: no Dask; the shards are built here (generated, or read from their files) and
  concatenated (``read`` in the table, timed apart), then ``fit``;
* **Dask, 1 worker** and **Dask, 2 workers**: a ``LocalCluster`` of single-threaded worker processes
  (``processes=True``), the scheduler in the driver process, ``fit_shards(sources)``; every shard is built
  on a worker, so the training set never passes through the driver.

Where the data comes from (``--source``). ``fit_shards`` takes svmlight file paths or ``(raw, labels,
offsets)`` tuples. Arrays built on the driver would put all 10⁷ × 16 values through it and into the task
graph. So:

* ``workers`` (default): shard s is generated *on a worker* by ``bench.synthetic`` with seed 1000 + s, and
  the source given to ``fit_shards`` is a tuple of three Dask futures (raw, labels, offsets of that
  shard). ``client.submit`` resolves futures in a task's arguments, so ``fit_shards``'s array path takes them
  unchanged — a use the ``fit_shards`` docstring does not mention. Generating is in the Dask fit times
  (task kind ``gen_shard``) and in the one-process ``read`` column. The synthetic data keep their NaNs.
  The original arrays stay referenced by these futures for the whole fit, next to ``usable_shard``'s copy,
  so a worker holds the raw scores twice (a file shard is held once);
* ``files``: the shards are written once as svmlight files into a temp folder (timed apart, in no fit; 4
  decimals, fixed-width lines built by numpy arithmetic: ``"+1.2345"``) and every configuration reads the
  same files (the workers themselves in ``fit_shards``). svmlight cannot say "not retrieved" (an absent
  feature is 0), so the NaNs become 0. At 10⁷ the reading (30 µs per candidate measured on the loaded machine)
  takes longer than the fit, which is why it is not the default. In both modes the paper estimate uses the
  measured parse cost of one 100,000-line file for "load".

Shards hold 100,000 candidates (100 queries), at least 4 per size, so that two workers share them.

Every configuration runs in its own subprocess (so ``ru_maxrss`` is that fit's peak) with one BLAS/numba
thread, after a warm-up fit on 4,000 candidates in the driver and in every worker (so numba's cached
kernels are loaded before timing). Reported: fit seconds (``fit_shards`` wall time, reading included, and the
cutting-plane part, ``path_[0]["seconds"]``), iterations, seconds per iteration, worker-seconds per task kind
(Dask's task stream: read, thresholds, φ, argmax), the speed-up of 2 vs 1 worker, peak RSS of the driver
(with the scheduler) and of each worker, bytes sent per iteration (``training_summary_["traffic"]``), and
whether the models are equal (iterations, max relative weight difference vs the one-process fit).

The machine may be shared: every configuration is repeated ``--repeat`` times and the fastest kept. At the
end, an estimate on paper for 10⁸ and 10⁹ candidates from the measured per-candidate cost and memory.
Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import synthetic  # noqa: E402  (the data generator of bench.py part c)

PER_QUERY = 1000
N_FUNCS = 16
#: candidates per shard file (100 queries): ≥ 10 shards at 10⁶, so both workers get work; see shards_for
SHARD_CANDIDATES = 100_000
PARAMS = dict(C=1.0, features="bins", n_bins=50)
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                "NUMBA_NUM_THREADS")}


def rss_gb() -> float:
    """This process's peak resident set size so far (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def hdr(title):
    print(f"\n=== {title} ===", flush=True)


# -------------------------------------------------------------------------------------------------
# shard files
# -------------------------------------------------------------------------------------------------
def svmlight_bytes(raw: np.ndarray, labels: np.ndarray, first_qid: int, per_query: int) -> bytes:
    """``raw`` (n × F, NaN = absent → written as 0) as fixed-width svmlight lines
    ``L qid:QQQQQQQQ 1:+d.dddd ... F:+d.dddd``, built as a byte matrix by numpy arithmetic (Python string
    formatting of 10⁸ numbers would take minutes). Values are clipped to ±9.9999 (|x| > 9.99 has probability
    ~1e-20 here) and rounded to 4 decimals."""
    n, F = raw.shape
    v = np.clip(np.nan_to_num(raw, nan=0.0), -9.9999, 9.9999)
    a = np.rint(np.abs(v) * 1e4).astype(np.int64)                  # 0 … 99999
    neg = (v < 0) & (a > 0)
    qid = first_qid + np.arange(n) // per_query
    cols = []                                                     # (n, k) uint8 blocks, side by side

    def const(s):
        b = np.frombuffer(s.encode(), dtype=np.uint8)
        cols.append(np.broadcast_to(b, (n, len(b))))

    def digits(x, width):
        cols.append(np.stack([(48 + (x // 10 ** p) % 10).astype(np.uint8) for p in range(width - 1, -1, -1)], 1))

    digits(np.asarray(labels, dtype=np.int64), 1)
    const(" qid:")
    digits(qid, 8)
    for f in range(F):
        const(f" {f + 1}:")
        cols.append(np.where(neg[:, f], np.uint8(45), np.uint8(43))[:, None])       # '-' or '+'
        digits(a[:, f] // 10000, 1)
        const(".")
        digits(a[:, f] % 10000, 4)
    const("\n")
    return np.concatenate(cols, axis=1).tobytes()


def shards_for(n: int) -> int:
    """Shard files for n candidates: SHARD_CANDIDATES each, at least 4 (so that 2 workers can share them)."""
    return max(4, n // SHARD_CANDIDATES)


def write_shards(n: int, folder: Path) -> dict:
    """Synthetic data of n candidates as shard files ``shard-00000.svmlight`` … (shard s generated by
    bench.synthetic with seed s; query ids global and unique). Returns paths, seconds and bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    n_shards = shards_for(n)
    per_shard = n // n_shards
    paths, size, t = [], 0, time.perf_counter()
    for s in range(n_shards):
        raw, labels, _ = synthetic(per_shard, n_funcs=N_FUNCS, per_query=PER_QUERY, seed=1000 + s)
        data = svmlight_bytes(raw, labels, 1 + s * (per_shard // PER_QUERY), PER_QUERY)
        p = folder / f"shard-{s:05d}.svmlight"
        p.write_bytes(data)
        paths.append(str(p))
        size += len(data)
    return dict(paths=paths, seconds=time.perf_counter() - t, bytes=size, n=n_shards * per_shard,
                shards=n_shards)


# -------------------------------------------------------------------------------------------------
# one configuration (child process)
# -------------------------------------------------------------------------------------------------
def warm_up() -> float:
    """A tiny fit in this process, so the numba kernels are loaded and numpy paths touched. Seconds."""
    import warnings
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    t = time.perf_counter()
    raw, labels, offsets = synthetic(4000, n_funcs=N_FUNCS, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        StructSVMRanker(**PARAMS).fit(raw, labels, offsets)
    return time.perf_counter() - t


def gen_shard(s: int, per_shard: int):
    """Shard s of the synthetic data (bench.synthetic with seed 1000 + s): (raw, labels, offsets)."""
    return synthetic(per_shard, n_funcs=N_FUNCS, per_query=PER_QUERY, seed=1000 + s)


def shard_pieces(shard, i):
    return shard[i]


def run_one(spec: dict) -> dict:
    """Build the data here (read the shard files, or generate the shards), concatenate, fit (no Dask)."""
    from pyterrier_svmmap.scale.shards import shard_from_svmlight
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    warm = warm_up()
    t = time.perf_counter()
    if spec["source"] == "files":
        shards = [shard_from_svmlight(p) for p in spec["paths"]]
        parts = [(sh.raw, sh.labels, sh.offsets) for sh in shards]
    else:
        parts = [gen_shard(s, spec["per_shard"]) for s in range(spec["shards"])]
    raw = np.vstack([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    sizes = np.concatenate([np.diff(p[2]) for p in parts])
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    del parts
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    r = StructSVMRanker(**PARAMS).fit(raw, labels, offsets)
    t_fit = time.perf_counter() - t
    return dict(warm=warm, read=t_read, fit=t_fit, total=t_read + t_fit, cp=r.path_[0]["seconds"],
                iters=int(r.n_iter_), gap=r.path_[0]["gap"], coef=r.coef_.tolist(), driver_rss=rss_gb(),
                workers_rss=[], n=int(len(raw)))


def task_kind(key) -> str:
    """A Dask task key's function name (``"worker_violation-<hash>"`` → ``"worker_violation"``)."""
    return str(key[0] if isinstance(key, tuple) else key).split("-", 1)[0]


def run_dask(spec: dict, n_workers: int) -> dict:
    """A LocalCluster of ``n_workers`` single-threaded worker processes (the allocator settings of
    ``executor="local"``, no memory limit); ``fit_shards`` on it, the sources
    being the shard files (each read by a worker) or, with source "workers", tuples of futures of arrays that
    the workers generate (``client.submit`` resolves futures in a task's arguments, so ``fit_shards``'s array
    path takes them; the driver never holds the data)."""
    from dask.distributed import Client, LocalCluster, get_task_stream
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    from pyterrier_svmmap.scale.client import local_worker_environ
    with local_worker_environ():                # the workers' allocator as executor="local" sets it
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit=0)                   # no spilling/pausing: we measure memory
    client = Client(cluster)
    try:
        warm = warm_up()
        t = time.perf_counter()
        client.run(warm_up)
        warm_workers = time.perf_counter() - t
        rss_before = client.run(rss_gb)
        with get_task_stream(client) as ts:
            t = time.perf_counter()
            if spec["source"] == "files":
                sources = spec["paths"]
            else:
                made = [client.submit(gen_shard, s, spec["per_shard"], pure=False) for s in range(spec["shards"])]
                sources = [tuple(client.submit(shard_pieces, m, i) for i in range(3)) for m in made]
                del made
            r = StructSVMRanker(**PARAMS, executor=client).fit_shards(sources)
            t_fit = time.perf_counter() - t
        del sources
        work = {}
        for task in ts.data:                        # the setup's tasks (the oracle calls go to the shard holders)
            kind = task_kind(task["key"])
            for ss in task["startstops"]:
                if ss["action"] == "compute":
                    work[kind] = work.get(kind, 0.0) + ss["stop"] - ss["start"]
        rss = client.run(rss_gb)
        traffic = r.training_summary_["traffic"]["bins"]
        work["argmax"] = traffic["worker_seconds"]
        return dict(warm=warm + warm_workers, read=float("nan"), fit=t_fit, total=t_fit, cp=r.path_[0]["seconds"],
                    iters=int(r.n_iter_), gap=r.path_[0]["gap"], coef=r.coef_.tolist(), driver_rss=rss_gb(),
                    workers_rss=sorted(rss.values()), workers_rss_before=sorted(rss_before.values()),
                    bytes_per_iter=int(traffic["bytes_per_iteration"]), oracle_calls=int(traffic["iterations"]),
                    work=work, workers_per_call=traffic["tasks"] / traffic["iterations"],
                    n=int(r.training_summary_["n_candidates"]))
    finally:
        client.close()
        cluster.close()


def child(mode: str, spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    out = run_one(spec) if mode == "one" else run_dask(spec, int(mode))
    print("RESULT " + json.dumps(out), flush=True)


def run_config(mode: str, spec_path: Path, repeat: int) -> dict:
    """Run one configuration ``repeat`` times in fresh subprocesses; keep the fastest (by total fit)."""
    best, times = None, []
    env = dict(os.environ, **ONE_THREAD)
    for _ in range(repeat):
        p = subprocess.run([sys.executable, __file__, "--_child", mode, str(spec_path)], capture_output=True,
                           text=True, env=env)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode or not lines:
            tail = (p.stderr.strip().splitlines() or [str(p.returncode)])[-1]
            print(f"  {mode}: failed: {tail}", flush=True)
            continue
        r = json.loads(lines[-1][len("RESULT "):])
        print(f"  ({NAMES[mode]}, run {len(times) + 1}: {r['total']:.1f} s, {r['iters']} iterations)", flush=True)
        times.append(r["total"])
        if best is None or r["total"] < best["total"]:
            best = r
    if best is not None:
        best["all_totals"] = times
    return best


# -------------------------------------------------------------------------------------------------
# tables
# -------------------------------------------------------------------------------------------------
NAMES = {"one": "one process", "1": "Dask 1 worker", "2": "Dask 2 workers"}


def report_size(n, res):
    print(f"{'configuration':<15} {'read s':>7} {'fit s':>7} {'cut-pl s':>8} {'iters':>5} {'s/iter':>7} "
          f"{'driver':>8} {'workers (peak RSS)':>20} {'bytes/iter':>10} {'runs (fit s)':>18}")
    for mode in ("one", "1", "2"):
        r = res.get(mode)
        if r is None:
            print(f"{NAMES[mode]:<15} failed")
            continue
        wk = " ".join(f"{x:.2f}" for x in r["workers_rss"]) + " GB" if r["workers_rss"] else "-"
        read = f"{r['read']:>7.2f}" if not math.isnan(r["read"]) else f"{'(in fit)':>7}"
        bpi = f"{r['bytes_per_iter']:>10,}" if "bytes_per_iter" in r else f"{'-':>10}"
        runs = " ".join(f"{x:.1f}" for x in r["all_totals"])
        print(f"{NAMES[mode]:<15} {read} {r['fit']:>7.2f} {r['cp']:>8.2f} {r['iters']:>5} "
              f"{r['cp'] / r['iters']:>7.3f} {r['driver_rss']:>6.2f}GB {wk:>20} {bpi} {runs:>18}")
    one, d1, d2 = res.get("one"), res.get("1"), res.get("2")
    if d1 and d2:
        print(f"speed-up 2 vs 1 worker: fit {d1['fit'] / d2['fit']:.2f}×, cutting planes {d1['cp'] / d2['cp']:.2f}× "
              f"(per iteration {d1['cp'] / d1['iters'] / (d2['cp'] / d2['iters']):.2f}×); peak RSS per worker "
              f"2 vs 1: {max(d2['workers_rss']) / max(d1['workers_rss']):.2f} (above the warmed-up worker: "
              f"{(max(d2['workers_rss']) - max(d2['workers_rss_before'])) / (max(d1['workers_rss']) - max(d1['workers_rss_before'])):.2f})")
    if one and d1:
        print(f"Dask overhead, 1 worker vs one process (read + fit): total {d1['fit'] / one['total']:.2f}×, "
              f"cutting planes {d1['cp'] / one['cp']:.2f}× (per iteration "
              f"{d1['cp'] / d1['iters'] / (one['cp'] / one['iters']):.2f}×)")
    if one and d2:
        print(f"2 workers vs one process: total {one['total'] / d2['fit']:.2f}× faster, cutting planes "
              f"{one['cp'] / d2['cp']:.2f}×")
    for mode in ("1", "2"):
        r = res.get(mode)
        if r and one:
            w0, w = np.array(one["coef"]), np.array(r["coef"])
            diff = float(np.max(np.abs(w - w0)) / max(np.max(np.abs(w0)), 1e-300))
            print(f"model {NAMES[mode]} vs one process: iterations {r['iters']} vs {one['iters']} "
                  f"({'equal' if r['iters'] == one['iters'] else 'DIFFERENT'}), max |Δw| / max |w| = {diff:.1e}")
    for mode in ("1", "2"):
        r = res.get(mode)
        if r:
            w = r["work"]
            order = ["gen_shard", "shard_pieces", "shard_from_arrays", "shard_from_svmlight", "shard_summary",
                     "usable_shard", "shard_sample", "sample_counts", "worker_counts", "shard_function_aps",
                     "shard_features", "shard_problem", "argmax"]
            parts = ", ".join(f"{k} {w[k]:.2f}" for k in order if k in w)
            rest = sum(v for k, v in w.items() if k not in order)
            print(f"worker-seconds ({NAMES[mode]}): {parts}, other {rest:.2f}; workers asked per oracle call "
                  f"{r['workers_per_call']:.2f}; oracle calls {r['oracle_calls']}")


MAKE = ("gen_shard", "shard_pieces", "shard_from_arrays", "shard_from_svmlight", "shard_summary")
SETUP = ("usable_shard", "shard_sample", "sample_extent", "sample_counts", "worker_counts", "shard_function_aps",
         "shard_features", "shard_problem")


def parse_cost(folder: Path, repeat: int = 2) -> float:
    """Seconds per candidate to read one 100,000-line shard file (shard_from_svmlight), best of ``repeat``."""
    from pyterrier_svmmap.scale.shards import shard_from_svmlight
    raw, labels, _ = gen_shard(0, SHARD_CANDIDATES)
    p = folder / "parse-probe.svmlight"
    p.write_bytes(svmlight_bytes(raw, labels, 1, PER_QUERY))
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        shard_from_svmlight(str(p))
        best = min(best, time.perf_counter() - t)
    p.unlink()
    return best / len(raw)


def paper_estimate(n, res, parse_s):
    """10⁸ and 10⁹ candidates on paper, from the largest measured size's 2-worker run.

    Per oracle call: ``c × N/W`` (the argmax's worker-seconds per candidate, measured, on the candidates of
    one worker) plus the Dask/driver overhead (wall time per call not spent in the busiest worker's argmax:
    the calls, gathering, summing, the QP), scaled with the number of workers (each call asks every worker
    holding shards once); per iteration, the measured number of oracle calls per iteration (the line search
    makes about 3). Once: reading the shard files (the measured parse cost) and the setup tasks (usable
    queries, threshold samples and counts, AP per function, φ), on N/W candidates per worker, plus their
    overhead scaled with shards. Memory: peak RSS above the warmed-up
    worker per candidate held."""
    one, d1, d2 = res.get("one"), res.get("1"), res.get("2")
    if not (d1 and d2 and one):
        return
    hdr(f"paper estimate for 10⁸ and 10⁹ candidates (from the {n:,}-candidate runs)")
    S_meas = shards_for(n)
    iters = max(d2["iters"], one["iters"])
    c1 = d1["work"]["argmax"] / (d1["oracle_calls"] * n)
    c2 = d2["work"]["argmax"] / (d2["oracle_calls"] * n)
    calls_per_iter = d2["oracle_calls"] / d2["iters"]
    per_call2 = d2["cp"] / d2["oracle_calls"]
    busiest = d2["work"]["argmax"] / d2["oracle_calls"] / 2
    o_call = max(per_call2 - busiest, 0.0) / 2                    # overhead per worker and oracle call
    setup_c = sum(d2["work"].get(k, 0.0) for k in SETUP) / n
    make_c = sum(d2["work"].get(k, 0.0) for k in MAKE) / n
    o_setup = max((d2["fit"] - d2["cp"]) - (setup_c + make_c) * n / 2, 0.0) / S_meas
    b1 = (max(d1["workers_rss"]) - max(d1["workers_rss_before"])) * 1024 ** 3 / n
    b2 = (max(d2["workers_rss"]) - max(d2["workers_rss_before"])) * 1024 ** 3 / (n / 2)
    b = max(b1, b2)
    base = max(d2["workers_rss_before"])
    dim = len(one["coef"])                                    # φ's dimension
    print(f"measured at {n:,}: argmax {c1 * 1e9:.0f} ns (1 worker) / {c2 * 1e9:.0f} ns (2 workers) per "
          f"candidate and oracle call; overhead {(per_call2 - busiest) * 1e3:.1f} ms per oracle call with {S_meas} "
          f"shards ({o_call * 1e3:.2f} ms per worker asked), {calls_per_iter:.1f} oracle calls per iteration; setup (thresholds, φ, AP per function) {setup_c * 1e6:.2f} µs "
          f"per candidate once, overhead {o_setup * 1e3:.1f} ms per shard; reading svmlight "
          f"{parse_s * 1e6:.1f} µs per candidate (one 100,000-line file, this process); peak worker memory "
          f"{b1:.0f} B (1 worker) / {b2:.0f} B (2 workers) per candidate above a {base:.2f} GB warmed-up worker; "
          f"{iters} iterations")
    print("assumed: one worker per core, each core as fast as here; 1,000,000-candidate shards "
          f"(queries_per_shard=1000 × 1,000 candidates: 100 at 10⁸, 1,000 at 10⁹; measured with {S_meas}), the "
          f"per-call overhead scaled by the number of workers, the setup's by the number of shards; 75 % of a worker's memory for data at {b:.0f} B per candidate; "
          f"{iters} iterations (the count did not grow with size in bench.py part c: 36, 31, 31, 21)")
    print(f"{'candidates':>13} {'mem/worker':>10} {'workers':>7} {'cand/worker':>12} {'s/iter':>7} "
          f"{'load+setup s':>12} {'fit s':>7} {'shards':>6} {'MB/iter':>8}")
    for N in (10 ** 8, 10 ** 9):
        S = math.ceil(N / 1_000_000)
        for mem_gb in (4, 16, 64):
            per_worker = int(0.75 * (mem_gb - base) * 1024 ** 3 / b)
            if per_worker <= 0:
                continue
            W = math.ceil(N / per_worker)
            n_w = N / W
            s_iter = calls_per_iter * (c2 * n_w + o_call * W)
            once = (parse_s + setup_c) * n_w + o_setup * S
            mb = (8 * dim * W + S * 8 * (dim + 1)) / 1e6
            print(f"{N:>13,} {mem_gb:>8} GB {W:>7} {n_w:>12,.0f} {s_iter:>7.2f} {once:>12.0f} "
                  f"{once + iters * s_iter:>7.0f} {S:>6} {mb:>8.1f}")
    print(f"driver: the dual QP has one row per cutting plane ({iters} here; ≤ max_iter) over φ's {dim} "
          f"dimensions — kilobytes to a few MB; per iteration it sends w ({8 * dim / 1e3:.1f} kB) in each worker's call and sums one "
          f"{dim}-vector per shard. Its peak here was {d2['driver_rss']:.2f} GB with the scheduler in it, "
          "independent of the data size (the data never passes through it).")


# -------------------------------------------------------------------------------------------------
# per-iteration overhead: 2-worker LocalCluster against one process on a small case
# -------------------------------------------------------------------------------------------------
#: the case of the overhead measurement: 1,000 queries × 300 candidates × 16 functions, bins, C = 100,
#: shards of 100 queries (10 shards, about 50 cutting-plane iterations): small enough that per-iteration
#: overheads show
OVERHEAD_CASE = dict(n_queries=1000, per_query=300, params=dict(C=100.0, features="bins", queries_per_shard=100))


def overhead_data():
    """The arrays and the ranker's parameters of :data:`OVERHEAD_CASE`."""
    case = OVERHEAD_CASE
    raw, labels, offsets = synthetic(case["n_queries"] * case["per_query"], n_funcs=N_FUNCS,
                                     per_query=case["per_query"], seed=7)
    return raw, labels, offsets, case["params"]


def plain_local_cluster():
    """A client of ``LocalCluster(n_workers=2, threads_per_worker=1)`` as a user makes it (no dashboard)."""
    from dask.distributed import Client, LocalCluster
    return Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))


def noop(x):
    return x


def round_trip_parts(client, worker: str, n: int = 20) -> dict:
    """Where an empty task's round trip goes, medians over ``n`` tasks, in ms, from the scheduler's and the
    worker's transition logs (``story``; one machine, one clock): ``to scheduler`` (submit on the driver
    until the scheduler has the task: serialising the graph, the client's batched stream, ``update_graph``),
    ``to worker`` (until the worker has it), ``run`` (until the worker has the result), ``to scheduler``
    back, ``to client`` (until ``gather`` returns: the scheduler's report and fetching the result)."""
    import statistics
    parts = []
    for i in range(n):
        t0 = time.time()
        f = client.submit(noop, i, pure=False, workers=[worker])
        client.gather(f)
        t_end = time.time()
        key = f.key
        sched = client.run_on_scheduler(lambda dask_scheduler, key=key: [(s[1], s[2], s[-1])
                                                                           for s in dask_scheduler.story(key)])
        wk = client.run(lambda dask_worker, key=key: [(s[1], s[2], s[-1]) for s in dask_worker.state.story(key)],
                        workers=[worker])[worker]
        t_waiting = min(t for a, b, t in sched if b == "waiting")
        t_memory = min(t for a, b, t in sched if b == "memory")
        t_received = min(t for a, b, t in wk if a == "compute-task")
        t_done = min(t for a, b, t in wk if b == "memory")
        parts.append(dict(to_scheduler=t_waiting - t0, to_worker=t_received - t_waiting, run=t_done - t_received,
                          back=t_memory - t_done, to_client=t_end - t_memory, total=t_end - t0))
        time.sleep(0.02)
    return {k: statistics.median(p[k] for p in parts) * 1e3 for k in parts[0]}


def actor_round_trip(client, n: int = 50) -> float:
    """Median ms of one empty call of a :class:`~pyterrier_svmmap.scale.shards.ShardHolder` on every worker,
    the calls in flight together (as an oracle call makes them)."""
    import statistics
    from pyterrier_svmmap.scale.shards import ShardHolder
    workers = sorted(client.scheduler_info()["workers"])
    futures = [client.submit(ShardHolder, actor=True, pure=False, workers=[w]) for w in workers]
    holders = [f.result() for f in futures]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        [c.result() for c in [h.run(noop, (0,)) for h in holders]]
        times.append(time.perf_counter() - t)
    for f in futures:
        f.release()
    return statistics.median(times) * 1e3


def overhead(repeat: int, plain: bool = False) -> dict:
    """One process (``n_jobs`` = all cores) against a 2-worker LocalCluster (single-threaded workers, the
    scheduler in this process), interleaved ``repeat`` times in this process; medians.

    The cluster is the one ``executor="local"`` makes (:func:`~pyterrier_svmmap.scale.client.dask_client`),
    or with ``plain`` a LocalCluster with Dask's defaults (its workers' ``MALLOC_TRIM_THRESHOLD_`` turns
    glibc's dynamic mmap threshold off). Per oracle call of the Dask fit (the cutting-plane loop calls the
    oracle one to three times an iteration, line search included): its wall time on the driver, the
    workers asked and the busiest worker's compute time (both from ``training_summary_["traffic"]``), an
    empty call of both workers' shard holders, and an empty task's round trip through the scheduler (submit
    + gather of ``noop`` on one worker). Overhead = oracle wall − busiest worker's compute."""
    import statistics
    import warnings
    from pyterrier_svmmap.scale.client import close_client, dask_client
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    case = OVERHEAD_CASE
    raw, labels, offsets, params = overhead_data()
    hdr(f"per-iteration overhead: {case['n_queries']:,} queries × {case['per_query']} candidates × {N_FUNCS} "
        f"functions, StructSVMRanker({', '.join(f'{k}={v!r}' for k, v in params.items())}); 2 workers: "
        + ("a LocalCluster with Dask's defaults" if plain else 'the LocalCluster of executor="local"'))
    if plain:
        import dask
        dask.config.set({"svmmap.worker-settings": False})          # Dask's defaults: no worker plugin
        client = plain_local_cluster()
    else:
        client, _ = dask_client("local", workers=2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warm_up()
            client.run(warm_up)
            StructSVMRanker(**params).fit(raw, labels, offsets)
            StructSVMRanker(**params, executor=client).fit(raw, labels, offsets)
        workers = sorted(client.scheduler_info()["workers"])
        rows = []
        for _ in range(repeat):
            t = time.perf_counter()
            one = StructSVMRanker(**params).fit(raw, labels, offsets)
            t_one = time.perf_counter() - t
            t = time.perf_counter()
            dist = StructSVMRanker(**params, executor=client).fit(raw, labels, offsets)
            t_dist = time.perf_counter() - t
            traffic = dist.training_summary_["traffic"][params["features"]]
            n_calls = traffic["iterations"]
            trip = round_trip_parts(client, workers[0])
            wall = traffic["oracle_seconds"] / n_calls
            busiest = traffic["busiest_worker_seconds"] / n_calls
            rows.append(dict(one=t_one, dist=t_dist, ratio=t_dist / t_one, cp_one=one.path_[0]["seconds"],
                             cp_dist=dist.path_[0]["seconds"], iters=dist.n_iter_, calls=n_calls,
                             tasks=traffic["tasks"] / max(n_calls, 1), wall=wall, busiest=busiest,
                             overhead=wall - busiest, actor_trip=actor_round_trip(client),
                             trip=trip["total"], trip_parts=trip,
                             same=bool(np.array_equal(one.coef_, dist.coef_) and one.n_iter_ == dist.n_iter_)))
            r = rows[-1]
            print(f"  one process {r['one']:.2f} s, 2 workers {r['dist']:.2f} s, ratio {r['ratio']:.2f}; "
                  f"{r['calls']} oracle calls, {r['tasks']:.2f} workers asked each; same model: {r['same']}",
                  flush=True)
    finally:
        close_client(client)

    def med(k):
        return statistics.median(r[k] for r in rows)
    out = {k: med(k) for k in rows[0] if k not in ("same", "trip_parts")}
    trip = {k: statistics.median(r["trip_parts"][k] for r in rows) for k in rows[0]["trip_parts"]}
    out["cp_ratio"] = statistics.median(r["cp_dist"] / r["cp_one"] for r in rows)
    print(f"median of {repeat}: one process {out['one']:.2f} s (cutting planes {out['cp_one']:.2f} s), 2-worker "
          f"LocalCluster {out['dist']:.2f} s (cutting planes {out['cp_dist']:.2f} s); ratio 2 workers / one "
          f"process {out['ratio']:.2f} (cutting planes {out['cp_ratio']:.2f})")
    print(f"per oracle call ({out['calls']:.0f} calls in {out['iters']:.0f} iterations, {out['tasks']:.2f} workers "
          f"asked each): one process {out['cp_one'] / out['calls'] * 1e3:.1f} ms; 2 workers "
          f"{out['wall'] * 1e3:.1f} ms = busiest worker's argmax {out['busiest'] * 1e3:.1f} ms + overhead "
          f"{out['overhead'] * 1e3:.1f} ms (an empty call of both workers' shard holders {out['actor_trip']:.1f} ms; "
          f"an empty task's round trip through the scheduler {out['trip']:.1f} ms); models equal in "
          f"{sum(r['same'] for r in rows)} of {repeat} runs")
    print(f"an empty task's round trip, {trip['total']:.1f} ms: driver → scheduler {trip['to_scheduler']:.1f}, "
          f"→ worker {trip['to_worker']:.1f}, run {trip['run']:.1f}, → scheduler {trip['back']:.1f}, → driver "
          f"(report + gather) {trip['to_client']:.1f} ms")
    return out

# -------------------------------------------------------------------------------------------------
# the targets of the issue "the default on Dask": equality with one process, overhead on a user's cluster
# -------------------------------------------------------------------------------------------------
#: the default's case: 200 queries × 50 candidates × 16 functions (bench.py part c's generator)
DEFAULT_CASE = dict(n_queries=200, per_query=50)
#: the overhead target: a plain user LocalCluster within this factor of one process
OVERHEAD_TARGET = 1.5
#: the equality target: C_ and coef_ of the cluster's default within this relative difference of one process's
EQUALITY_TARGET = 1e-8


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def default_on_dask(repeat: int = 1) -> dict:
    """The package's default (``selection="auto"``: C, feature blocks and the fallback chosen by 5-fold
    cross-validation, the prior "best") fitted in one process and with ``executor=client`` (a plain 2-worker
    LocalCluster), with cross-validation only and with a validation set (cross-validated over training ∪
    validation): C_, features_, the choice and the relative difference of coef_; the time ratio for
    information (interleaved, medians over ``repeat``)."""
    import statistics
    import warnings
    from dask.distributed import Client, LocalCluster
    from pyterrier_svmmap.svm.params import ESTIMATOR_PARAMS
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    case = DEFAULT_CASE
    default = {k: ESTIMATOR_PARAMS.defaults[k] for k in ("C", "features", "prior", "selection")}
    raw, labels, offsets = synthetic(case["n_queries"] * case["per_query"], n_funcs=N_FUNCS,
                                     per_query=case["per_query"], seed=11)
    cut = offsets[case["n_queries"] // 4]
    valid = (raw[:cut], labels[:cut], offsets[:case["n_queries"] // 4 + 1])
    train = (raw[cut:], labels[cut:], offsets[case["n_queries"] // 4:] - cut)
    hdr(f"the default on Dask: StructSVMRanker({', '.join(f'{k}={v!r}' for k, v in default.items())}), "
        f"{case['n_queries']} queries × {case['per_query']} candidates × {N_FUNCS} functions; one process against "
        "executor=Client(LocalCluster(n_workers=2, threads_per_worker=1))")
    client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))
    out = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, data, v in (("cross-validation only", (raw, labels, offsets), None),
                                  ("with a validation set", train, valid)):
                ratios, rows = [], []
                for _ in range(repeat):
                    t = time.perf_counter()
                    one = StructSVMRanker(**default).fit(*data, valid=v)
                    t_one = time.perf_counter() - t
                    t = time.perf_counter()
                    dist = StructSVMRanker(**default, executor=client).fit(*data, valid=v)
                    ratios.append((time.perf_counter() - t) / t_one)
                    rel = float(np.max(np.abs(dist.coef_ - one.coef_)) / max(np.max(np.abs(one.coef_)), 1e-300))
                    c_rel = abs(dist.C_ - one.C_) / max(abs(one.C_), 1e-300)
                    rows.append(dict(rel=rel, c_rel=c_rel, same_c=one.C_ == dist.C_,
                                     same_features=one.features_ == dist.features_,
                                     bits=bool(np.array_equal(one.coef_, dist.coef_)),
                                     fallback=bool(one.choice_ and one.choice_["fallback"]),
                                     C=one.C_, features=one.features_, selection=one.selection_))
                worst = max(rows, key=lambda r: (r["rel"], r["c_rel"]))
                ok = all(r["same_features"] and r["c_rel"] <= EQUALITY_TARGET and r["rel"] <= EQUALITY_TARGET
                         for r in rows)
                out[name] = dict(ok=ok, ratio=statistics.median(ratios), **worst)
                print(f"  {mark(ok)} {name}: C_ {worst['C']:.6g} ({'equal' if worst['same_c'] else 'differs'}), "
                      f"features_ {worst['features']} ({'equal' if worst['same_features'] else 'differs'}), "
                      f"{'fallback' if worst['fallback'] else 'learned'}, selection {worst['selection']}; coef_ "
                      f"max relative difference {worst['rel']:.1e} "
                      f"({'bit for bit' if worst['bits'] else 'not bit for bit'}; target ≤ {EQUALITY_TARGET:g}); time cluster / one process {out[name]['ratio']:.2f}",
                      flush=True)
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    return out


def overhead_targets(repeat: int) -> dict:
    """The overhead case (:data:`OVERHEAD_CASE`) in one process and on three 2-worker clusters: a plain user
    ``LocalCluster(n_workers=2, threads_per_worker=1)`` without the package's worker plugin (Dask's
    configuration ``svmmap.worker-settings: false``), the same kind of cluster given as ``executor=client`` as a
    user gives it (the plugin registered), and the cluster of ``executor="local"``. One cluster is alive at a
    time (the idle workers of another would share the two cores); with it, ``repeat`` rounds of a one-process
    fit then a cluster fit, each round's cluster time over its one-process time; medians over the rounds."""
    import statistics
    import warnings
    import dask
    from pyterrier_svmmap.scale.client import close_client, dask_client
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    case = OVERHEAD_CASE
    raw, labels, offsets, params = overhead_data()
    hdr(f"Dask overhead: {case['n_queries']:,} queries × {case['per_query']} candidates × {N_FUNCS} functions, "
        f"StructSVMRanker({', '.join(f'{k}={v!r}' for k, v in params.items())}); 2 single-threaded workers against "
        f"one process, one cluster at a time, {repeat} rounds each")
    kinds = {"plain LocalCluster, without the plugin": lambda: plain_local_cluster(),
             "plain LocalCluster (the plugin applied)": lambda: plain_local_cluster(),
             'executor="local"': lambda: dask_client("local", workers=2)[0]}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up()
        one = StructSVMRanker(**params).fit(raw, labels, offsets)
        for name, start in kinds.items():
            plugin = "without" not in name
            with dask.config.set({"svmmap.worker-settings": plugin}):
                client = start()
            try:
                client.run(warm_up)
                ratios, same = [], True
                with dask.config.set({"svmmap.worker-settings": plugin}):
                    StructSVMRanker(**params, executor=client).fit(raw, labels, offsets)        # warm
                    for r in range(repeat):
                        t = time.perf_counter()
                        StructSVMRanker(**params).fit(raw, labels, offsets)
                        alone = time.perf_counter() - t
                        t = time.perf_counter()
                        model = StructSVMRanker(**params, executor=client).fit(raw, labels, offsets)
                        ratios.append((time.perf_counter() - t) / alone)
                        same &= bool(np.array_equal(model.coef_, one.coef_))
                        print(f"  {name}, round {r + 1}: one process {alone:.2f} s, cluster ×{ratios[-1]:.2f}",
                              flush=True)
            finally:
                close_client(client)
            out[name] = ratio = statistics.median(ratios)
            target = f" (target ≤ {OVERHEAD_TARGET})" if plugin else ""
            print(f"  {mark(ratio <= OVERHEAD_TARGET) if target else ' '} {name}: {ratio:.2f}× one process{target}; "
                  f"models equal to one process's: {same}", flush=True)
    return out


def targets(repeat: int) -> dict:
    """Both targets of the default on Dask, with ✓/✗: the default's model equal to one process's, and the
    overhead on a plain user LocalCluster and on ``executor="local"``."""
    return dict(default=default_on_dask(), overhead=overhead_targets(repeat))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10^5 and 10^6 candidates only")
    ap.add_argument("--repeat", type=int, default=2, help="runs per configuration; the fastest is kept")
    ap.add_argument("--tmp", default=None, help="folder for the shard files (default: a temp folder)")
    ap.add_argument("--source", choices=("workers", "files"), default="workers",
                    help="where the shards come from: generated on the workers (default) or svmlight files")
    ap.add_argument("--sizes", default=None, help="comma-separated sizes instead of the defaults")
    ap.add_argument("--overhead", action="store_true",
                    help="only the per-iteration overhead case (2 workers vs one process, small data)")
    ap.add_argument("--targets", action="store_true",
                    help="only the targets of the default on Dask (equality with one process, overhead ratios)")
    ap.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        child(*args._child)
        return
    if args.targets:
        targets(max(args.repeat, 5))
        return
    if args.overhead:
        overhead(max(args.repeat, 3))
        overhead(max(args.repeat, 3), plain=True)
        return
    import dask
    import distributed
    sizes = [int(float(s)) for s in args.sizes.split(",")] if args.sizes else \
        ([10 ** 5, 10 ** 6] if args.quick else [10 ** 6, 10 ** 7])
    print(f"pyterrier-svmmap scale-out benchmark; numpy {np.__version__}, dask {dask.__version__}, "
          f"distributed {distributed.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; best of {args.repeat} runs per configuration{' (quick)' if args.quick else ''}")
    print(f"fit: StructSVMRanker({', '.join(f'{k}={v!r}' for k, v in PARAMS.items())}); synthetic data of "
          f"bench.py part c ({PER_QUERY} candidates/query, {N_FUNCS} functions); shards "
          + ("generated on the workers (NaN kept)" if args.source == "workers" else
             "read from svmlight files (NaN written as 0)"))
    t0 = time.perf_counter()
    targets(max(args.repeat, 5))
    overhead(max(args.repeat, 3))
    root = Path(tempfile.mkdtemp(prefix="svmmap-dask-", dir=args.tmp))
    try:
        res = {}
        for n in sizes:
            hdr(f"{n:,} candidates")
            folder = root / str(n)
            folder.mkdir(parents=True)
            S = shards_for(n)
            spec = dict(source=args.source, shards=S, per_shard=n // S)
            if args.source == "files":
                files = write_shards(n, folder)
                spec["paths"] = files["paths"]
                print(f"{files['n']:,} candidates in {S} shard files ({files['bytes'] / 1e9:.2f} GB), written in "
                      f"{files['seconds']:.1f} s ({files['bytes'] / 1e6 / files['seconds']:.0f} MB/s; not in any "
                      "fit); every fit reads them ('read' below, or in fit_shards on the workers)")
            else:
                print(f"{S * (n // S):,} candidates in {S} shards of {n // S:,}, each generated where it is used: "
                      "by the one process ('read' below) or by a worker (inside fit_shards)")
            spec_path = folder / "spec.json"
            spec_path.write_text(json.dumps(spec))
            res = {mode: run_config(mode, spec_path, args.repeat) for mode in ("one", "1", "2")}
            report_size(n, res)
            shutil.rmtree(folder)
        probe = root / "probe"
        probe.mkdir()
        paper_estimate(sizes[-1], res, parse_cost(probe))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
