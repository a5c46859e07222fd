"""Dask: a cluster gives one process's model, and what its calls cost against one process on the same machine.

Usage::

    python benchmarks/bench_dask.py [--quick] [--only default,overhead,sizes] [--repeat N]

Sections (setups and results in docs/performance.md):

* ``default``: the package's default (``selection="auto"``) on 200 queries × 50 × 16, with cross-validation
  only and with a validation set, in one process and on a plain 2-worker ``LocalCluster``: C_, features_ and
  coef_ (target: relative difference ≤ 1e-8), and the time ratio;
* ``overhead``: ``StructSVMRanker(C=100, features="bins", queries_per_shard=100)`` on 1,000 queries × 300 × 16,
  one process against 2 single-threaded workers (a plain user LocalCluster, and ``executor="local"``'s: target
  ≤ 1.2×), in ``--repeat`` interleaved rounds; per oracle call, the busiest worker's argmax and the overhead;
* ``sizes``: 10⁶ and 10⁷ synthetic candidates fitted in one process and on 1 and 2 workers, each configuration
  in its own process with one BLAS/numba thread, the fastest of ``--repeat``: seconds, iterations, peak RSS,
  bytes per iteration, worker-seconds per task kind, the models' difference; then an estimate on paper for 10⁸
  and 10⁹ candidates.

About 20 minutes on 2 cores (``--quick``: sizes 10⁵ and 10⁶, 2 rounds, about 3 minutes). The workers share the
machine's cores with the driver: measure speed-ups on more cores than workers.
"""
from __future__ import annotations

import math
import os
import statistics
import time
import warnings

import numpy as np

from _common import ENV, child, main, peak_rss_gb, quiet, repeat, synthetic, target, timed, write_svmlight

from pyterrier_svmmap.scale.dask import executor_for       # StructSVMRanker's executor for a Dask client

PARAMS = dict(C=1.0, features="bins", n_bins=50)
SHARD = 100_000
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
#: task kinds (Dask's task stream) that make a shard; the others but the oracle's set a fit up (thresholds, φ, APs)
MAKE = ("gen_shard", "shard_piece", "shard_from_arrays", "shard_summary")


def warm_up():
    """A tiny fit, so that numba's kernels are loaded before anything is timed (run in the workers too)."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    quiet(StructSVMRanker(**PARAMS).fit, *synthetic(4000, seed=1))


def plain_cluster():
    """``Client(LocalCluster(n_workers=2, threads_per_worker=1))`` as a user makes it (no dashboard)."""
    from dask.distributed import Client, LocalCluster
    return Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))


def default(args):
    """the default (selection="auto") on a 2-worker LocalCluster gives one process's model"""
    from pyterrier_svmmap.scale.client import close_client
    from pyterrier_svmmap.svm.params import ESTIMATOR_PARAMS
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: ESTIMATOR_PARAMS.defaults[k] for k in ("C", "features", "prior", "selection")}
    raw, labels, offsets = synthetic(200 * 50, per_query=50, seed=11)
    cut = offsets[50]
    cases = {"cross-validation only": ((raw, labels, offsets), None),
             "with a validation set": ((raw[cut:], labels[cut:], offsets[50:] - cut),
                                       (raw[:cut], labels[:cut], offsets[:51]))}
    print(f"StructSVMRanker({', '.join(f'{k}={v!r}' for k, v in params.items())}), 200 queries × 50 × 16")
    client = plain_cluster()
    try:
        for name, (data, valid) in cases.items():
            one, t_one = timed(quiet, StructSVMRanker(**params).fit, *data, valid=valid)
            dist, t_dist = timed(quiet, StructSVMRanker(**params, executor=executor_for(client)).fit, *data,
                                 valid=valid)
            rel = max(float(np.max(np.abs(dist.coef_ - one.coef_)) / max(np.max(np.abs(one.coef_)), 1e-300)),
                      abs(dist.C_ - one.C_) / max(abs(one.C_), 1e-300))
            print(f"{name}: C_ {one.C_:.6g} / {dist.C_:.6g}, features_ {one.features_} / {dist.features_}, "
                  f"{'fallback' if one.choice_ and one.choice_['fallback'] else 'learned'}; coef_ "
                  f"{'bit for bit' if np.array_equal(one.coef_, dist.coef_) else 'not bit for bit'}; time "
                  f"cluster ÷ one process {t_dist / t_one:.2f}", flush=True)
            target(f"the default on a cluster, {name}: C_ and coef_ within 1e-8 of one process's, the same "
                   f"features_: {rel:.1e}", rel <= 1e-8 and one.features_ == dist.features_)
    finally:
        close_client(client)


def noop(x):
    return x


def holder_round_trip(client, n: int = 50) -> float:
    """Median ms of one empty call of a shard holder on every worker, the calls in flight together."""
    from pyterrier_svmmap.scale.shards import ShardHolder
    futures = [client.submit(ShardHolder, actor=True, pure=False, workers=[w])
               for w in sorted(client.scheduler_info()["workers"])]
    holders, times = [f.result() for f in futures], []
    for _ in range(n):
        t = time.perf_counter()
        [c.result() for c in [h.run(noop, (0,)) for h in holders]]
        times.append(time.perf_counter() - t)
    for f in futures:
        f.release()
    return statistics.median(times) * 1e3


def overhead(args):
    """the per-iteration overhead: 2 workers against one process, on a user's cluster and executor="local"'s"""
    from pyterrier_svmmap.scale.client import close_client, dask_client
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    raw, labels, offsets = synthetic(1000 * 300, per_query=300, seed=7)
    params = dict(C=100.0, features="bins", queries_per_shard=100)
    kinds = {"a plain LocalCluster": (plain_cluster, None),
             'executor="local"': (lambda: dask_client("local", workers=2)[0], 1.2)}
    warnings.simplefilter("ignore")
    warm_up()
    one = StructSVMRanker(**params).fit(raw, labels, offsets)
    for name, (start, limit) in kinds.items():
        client = start()
        try:
            client.run(warm_up)
            on = executor_for(client)
            StructSVMRanker(**params, executor=on).fit(raw, labels, offsets)
            rows = []
            for _ in range(repeat(args)):
                alone, t_one = timed(StructSVMRanker(**params).fit, raw, labels, offsets)
                dist, t_dist = timed(StructSVMRanker(**params, executor=on).fit, raw, labels, offsets)
                tr = dist.training_summary_["traffic"]["bins"]
                rows.append(dict(ratio=t_dist / t_one, one=t_one,
                                 call_one=alone.path_[0]["seconds"] / tr["iterations"],
                                 call=tr["oracle_seconds"] / tr["iterations"],
                                 busiest=tr["busiest_worker_seconds"] / tr["iterations"], calls=tr["iterations"],
                                 same=bool(np.array_equal(dist.coef_, one.coef_))))
            trip = holder_round_trip(client)
        finally:
            close_client(client)
        m = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        each = " ".join(f"{r['ratio']:.2f}" for r in rows)
        print(f"{name}: cluster ÷ one process {m['ratio']:.2f}× (rounds {each}; "
              f"one process {m['one']:.2f} s); per oracle call ({m['calls']:.0f} calls): one process "
              f"{m['call_one'] * 1e3:.1f} ms, cluster {m['call'] * 1e3:.1f} ms = busiest worker's argmax "
              f"{m['busiest'] * 1e3:.1f} + overhead {(m['call'] - m['busiest']) * 1e3:.1f} ms (empty calls of both "
              f"shard holders {trip:.1f} ms); models equal to one process's: {all(r['same'] for r in rows)}",
              flush=True)
        if limit:
            target(f"the overhead case on {name} ≤ {limit}× one process: {m['ratio']:.2f}×", m["ratio"] <= limit)


def gen_shard(s: int, per_shard: int):
    """Shard ``s`` of the synthetic data (seed 1000 + s): (raw, labels, offsets)."""
    return synthetic(per_shard, seed=1000 + s)


def shard_piece(shard, i):
    return shard[i]


def one_process(shards, per_shard):
    """Child: generate the shards here, concatenate, fit (no Dask)."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    warm_up()
    t = time.perf_counter()
    parts = [gen_shard(s, int(per_shard)) for s in range(int(shards))]
    raw, labels = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    offsets = np.concatenate([[0], np.cumsum(np.concatenate([np.diff(p[2]) for p in parts]))])
    del parts
    t_read = time.perf_counter() - t
    r, t_fit = timed(StructSVMRanker(**PARAMS).fit, raw, labels, offsets)
    return dict(read=t_read, fit=t_fit, cp=r.path_[0]["seconds"], iters=int(r.n_iter_),
                coef=r.coef_.tolist(), driver_rss=peak_rss_gb(), workers_rss=[])


def on_dask(workers, shards, per_shard):
    """Child: ``fit_shards`` on a LocalCluster of ``workers`` single-threaded processes, every shard made by a
    worker (the sources are futures of its arrays: ``client.submit`` resolves them, so the driver never holds
    the data); the worker-seconds per task kind from Dask's task stream."""
    from dask.distributed import Client, LocalCluster, get_task_stream
    from pyterrier_svmmap.scale.client import local_worker_environ
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    with local_worker_environ():
        cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, dashboard_address=None, memory_limit=0)
    client = Client(cluster)
    try:
        warm_up()
        client.run(warm_up)
        before = client.run(peak_rss_gb)
        with get_task_stream(client) as ts:
            t = time.perf_counter()
            made = [client.submit(gen_shard, s, int(per_shard), pure=False) for s in range(int(shards))]
            r = StructSVMRanker(**PARAMS, executor=executor_for(client)).fit_shards(
                [tuple(client.submit(shard_piece, m, i) for i in range(3)) for m in made])
            t_fit = time.perf_counter() - t
        work = {}
        for task in ts.data:
            kind = str(task["key"][0] if isinstance(task["key"], tuple) else task["key"]).split("-", 1)[0]
            work[kind] = work.get(kind, 0.0) + sum(s["stop"] - s["start"] for s in task["startstops"]
                                                   if s["action"] == "compute")
        tr = r.training_summary_["traffic"]["bins"]
        work["argmax"] = tr["worker_seconds"]
        return dict(read=float("nan"), fit=t_fit, cp=r.path_[0]["seconds"], iters=int(r.n_iter_), coef=r.coef_.tolist(),
                    driver_rss=peak_rss_gb(), workers_rss=sorted(client.run(peak_rss_gb).values()),
                    workers_before=max(before.values()), bytes=int(tr["bytes_per_iteration"]),
                    calls=int(tr["iterations"]),
                    work=work)
    finally:
        client.close()
        cluster.close()


def sizes(args):
    """one process against 1 and 2 workers as the data grow, and an estimate for 10⁸ and 10⁹ candidates"""
    env = dict(ENV, **ONE_THREAD, PYTHONPATH=f"{ENV['PYTHONPATH']}{os.pathsep}{os.path.dirname(__file__)}")
    res, n_runs = {}, repeat(args, 1, 2)
    for n in [10 ** 5, 10 ** 6] if args.quick else [10 ** 6, 10 ** 7]:
        shards = max(4, n // SHARD)
        res = {}
        for name, argv in (("one process", ("one_process",)), ("Dask, 1 worker", ("on_dask", 1)),
                           ("Dask, 2 workers", ("on_dask", 2))):
            got = [r for r in (child(__file__, *argv, shards, n // shards, env=env) for _ in range(n_runs)) if r]
            if got:
                res[name] = min(got, key=lambda r: r["fit"] + (0 if math.isnan(r["read"]) else r["read"]))
        print(f"\n{n:,} candidates, {shards} shards of {n // shards:,}, the fastest of {n_runs} runs")
        print(f"{'configuration':<16} {'read s':>8} {'fit s':>7} {'cut-pl s':>8} {'iters':>5} {'s/iter':>7} "
              f"{'driver':>7} {'workers (peak RSS)':>19} {'bytes/iter':>10}")
        for name, r in res.items():
            workers = " ".join(f"{x:.2f}" for x in r["workers_rss"]) + " GB" if r["workers_rss"] else "-"
            read = "(in fit)" if math.isnan(r["read"]) else f"{r['read']:.2f}"
            print(f"{name:<16} {read:>8} {r['fit']:>7.2f} {r['cp']:>8.2f} {r['iters']:>5} {r['cp'] / r['iters']:>7.3f} "
                  f"{r['driver_rss']:>5.2f}GB {workers:>19} {r.get('bytes', '-'):>10}")
        one, d1, d2 = (res.get(k) for k in ("one process", "Dask, 1 worker", "Dask, 2 workers"))
        if d1 and d2:
            print(f"speed-up of 2 workers over 1: fit {d1['fit'] / d2['fit']:.2f}×, cutting planes "
                  f"{d1['cp'] / d2['cp']:.2f}×")
        for name, r in res.items():
            if one and r is not one:
                w0, w = np.array(one["coef"]), np.array(r["coef"])
                print(f"{name}: {r['iters']} iterations (one process {one['iters']}), max |Δw| / max |w| "
                      f"{np.max(np.abs(w - w0)) / max(np.max(np.abs(w0)), 1e-300):.1e}; worker-seconds "
                      + ", ".join(f"{k} {v:.2f}" for k, v in r["work"].items()))
    if len(res) == 3:
        estimate(n, shards, res["one process"], res["Dask, 2 workers"])


def estimate(n, shards, one, d2):
    """10⁸ and 10⁹ candidates on paper from the 2-worker run at ``n``: per oracle call the argmax of a worker's
    candidates plus the overhead per worker asked, the measured oracle calls per iteration and iterations; once,
    reading svmlight (a 100,000-line file read here) and the setup per candidate plus the setup's overhead per
    shard; memory per candidate above a warmed-up worker; shards of 10⁶ candidates, one worker per core."""
    from tempfile import TemporaryDirectory
    from pyterrier_svmmap.scale.shards import shard_from_svmlight
    with TemporaryDirectory() as tmp:
        write_svmlight(os.path.join(tmp, "probe.txt"), SHARD)
        parse = timed(shard_from_svmlight, os.path.join(tmp, "probe.txt"))[1] / SHARD
    w = d2["work"]
    argmax = w["argmax"] / (d2["calls"] * n)
    per_call = max(d2["cp"] / d2["calls"] - w["argmax"] / d2["calls"] / 2, 0.0) / 2
    setup = sum(v for k, v in w.items() if k not in MAKE + ("argmax", "ShardHolder")) / n
    make = sum(w.get(k, 0.0) for k in MAKE) / n
    o_setup = max(d2["fit"] - d2["cp"] - (setup + make) * n / 2, 0.0) / shards
    per_cand = (max(d2["workers_rss"]) - d2["workers_before"]) * 1024 ** 3 / (n / 2)
    calls, iters, dim = d2["calls"] / d2["iters"], max(d2["iters"], one["iters"]), len(one["coef"])
    print(f"\nmeasured at {n:,} (2 workers): argmax {argmax * 1e9:.0f} ns per candidate and oracle call, overhead "
          f"{per_call * 1e3:.2f} ms per worker asked, {calls:.1f} oracle calls per iteration, {iters} iterations; "
          f"setup {setup * 1e6:.2f} µs per candidate + {o_setup * 1e3:.1f} ms per shard; svmlight "
          f"{parse * 1e6:.1f} µs per candidate; {per_cand:.0f} B per candidate above a {d2['workers_before']:.2f} GB "
          f"worker; 75 % of a worker's memory for data")
    print(f"{'candidates':>13} {'memory':>7} {'workers':>7} {'s/iter':>7} {'read+setup s':>12} {'fit s':>7} "
          f"{'MB/iter':>8}")
    for N in (10 ** 8, 10 ** 9):
        S = math.ceil(N / 10 ** 6)
        for gb in (4, 16, 64):
            per_worker = int(0.75 * (gb - d2["workers_before"]) * 1024 ** 3 / per_cand)
            if per_worker > 0:
                W = math.ceil(N / per_worker)
                s_iter, once = calls * (argmax * N / W + per_call * W), (parse + setup) * N / W + o_setup * S
                print(f"{N:>13,} {gb:>5} GB {W:>7} {s_iter:>7.2f} {once:>12.0f} {once + iters * s_iter:>7.0f} "
                      f"{(8 * dim * W + S * 8 * (dim + 1)) / 1e6:>8.1f}")


if __name__ == "__main__":
    main(__doc__, dict(default=default, overhead=overhead, sizes=sizes),
         children=dict(one_process=one_process, on_dask=on_dask),
         repeat="rounds of the overhead case (default 5; --quick 2), runs per size (default 2; --quick 1)")
