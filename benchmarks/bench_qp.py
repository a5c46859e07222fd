"""The dual QP on its real call distribution: numpy reference against the compiled fast path.

Runs StructSVMRanker fits on LETOR MQ2008 Fold1 (train, C chosen on vali) — SVM-map with raw and with
binned features, and SVM-COMBO (map, ndcg@10, mrr@10, separate slacks, C_weights 1, 1, 1e-8) — over
the C grid 0.01..1000, recording every call of ``solve_dual`` the cutting-plane solver makes (its size)
and keeping a reservoir sample of the calls' arguments in memory (nothing is written). Then replays the
sample through the tests' numpy reference implementation (``tests/oracles/qp_reference.py``) and the compiled
solver and prints per-call time ratios, totals and the largest relative difference of the dual objectives; with
``--fits`` it also times whole fits with the compiled solver and with the numpy one (swapping
``solver.solve_dual``) and compares their weights.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_qp.py [--sample 300] [--fits]
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "tests"):                                 # the package, and the tests' oracles
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import pyterrier_svmmap.svm.qp as qp  # noqa: E402
from oracles.qp_reference import solve_dual_reference  # noqa: E402

import pyterrier_svmmap.svm.cutting_plane as solver
from pyterrier_svmmap.experiments.letor import discover_folds, load_folds  # noqa: E402
from pyterrier_svmmap.svm.ranker import StructSVMRanker  # noqa: E402

log = logging.getLogger("bench_qp")
DATA = REPO.parent / "shared" / "data" / "letor" / "MQ2008"
C_GRID = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
FITS = {
    "map-raw": dict(loss="map", features="raw"),
    "map-bins": dict(loss="map", features="bins"),
    "combo-raw": dict(loss="combo", features="raw",
                      loss_params=dict(losses=["map", "ndcg@10", "mrr@10"], slack="separate", C_weights=[1, 1, 1e-8])),
}


class Recorder:
    """A stand-in for ``solver.solve_dual`` that calls ``solve``, times it and keeps a reservoir
    sample of ``size`` argument tuples (copies: the working set's arrays are reused)."""

    def __init__(self, solve, size: int, seed: int = 0):
        self.solve, self.size, self.rng = solve, size, np.random.default_rng(seed)
        self.sample, self.n, self.seconds, self.sizes = [], 0, 0.0, []

    def __call__(self, G, b, grp, C, alpha=None, **kw):
        args = (np.array(G), np.array(b), np.array(grp), np.array(C, dtype=float),
                None if alpha is None else np.array(alpha), kw.get("max_steps", qp.QP_MAX_STEPS))
        t = time.perf_counter()
        out = self.solve(G, b, grp, C, alpha, **kw)
        self.seconds += time.perf_counter() - t
        self.n += 1
        self.sizes.append(len(b))
        if len(self.sample) < self.size:
            self.sample.append(args)
        else:
            j = int(self.rng.integers(0, self.n))
            if j < self.size:
                self.sample[j] = args
        return out


def fit(split, vali, params: dict, solve, sample: int = 0):
    """(ranker, seconds, recorder) of one path fit with ``solve`` as the solver's QP."""
    rec = Recorder(solve, sample)
    saved = solver.solve_dual
    solver.solve_dual = rec
    try:
        r = StructSVMRanker(C=C_GRID, **params)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r.fit(split.raw, split.binary(1), split.offsets,
                  valid=(vali.raw, vali.binary(1), vali.offsets, None, vali.docids))
        return r, time.perf_counter() - t0, rec
    finally:
        solver.solve_dual = saved


def replay(sample) -> dict:
    """Per-call seconds of the reference and the fast path over recorded calls, and the objectives'
    largest relative difference."""
    t_ref, t_fast, worst = [], [], 0.0
    for G, b, grp, C, alpha, max_steps in sample:
        t = time.perf_counter()
        a_ref, _ = solve_dual_reference(G, b, grp, C, alpha, max_steps=max_steps)
        t_ref.append(time.perf_counter() - t)
        t = time.perf_counter()
        a_fast, _ = qp.solve_dual(G, b, grp, C, alpha, max_steps=max_steps)
        t_fast.append(time.perf_counter() - t)
        f_ref, f_fast = b @ a_ref - 0.5 * a_ref @ G @ a_ref, b @ a_fast - 0.5 * a_fast @ G @ a_fast
        worst = max(worst, abs(f_fast - f_ref) / max(abs(f_ref), 1e-300))
    t_ref, t_fast = np.array(t_ref), np.array(t_fast)
    return dict(n=len(t_ref), ref=t_ref.sum(), fast=t_fast.sum(), total_ratio=t_ref.sum() / t_fast.sum(),
                median_ratio=float(np.median(t_ref / t_fast)), worst_objective=worst)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=300, help="recorded calls kept per fit")
    ap.add_argument("--fits", action="store_true", help="also time whole fits, fast path vs numpy")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    t = time.perf_counter()
    qp.solve_dual(np.eye(2), np.ones(2), np.zeros(2, dtype=int), np.ones(1))
    log.info("first compiled call (numba import + compile or cache load): %.2f s", time.perf_counter() - t)
    fold = load_folds(discover_folds(DATA, [1]))[1]
    for name, params in FITS.items():
        _, seconds, rec = fit(fold.train, fold.vali, params, solve_dual_reference, args.sample)
        sizes = np.array(rec.sizes)
        r = replay(rec.sample)
        log.info("%-9s %4d QP calls, m median %d max %d; numpy fit %.2f s of which QP %.2f s", name, rec.n,
                 np.median(sizes), sizes.max(), seconds, rec.seconds)
        log.info("%-9s replay of %d calls: reference %.3f s, fast %.3f s: total ratio %.1fx, median per-call "
                 "ratio %.1fx, max rel. objective difference %.1e", name, r["n"], r["ref"], r["fast"],
                 r["total_ratio"], r["median_ratio"], r["worst_objective"])
        if args.fits:
            r_np, s_np, rec_np = fit(fold.train, fold.vali, params, solve_dual_reference)
            r_jit, s_jit, rec_jit = fit(fold.train, fold.vali, params, qp.solve_dual)
            W_np, W_jit = np.array(r_np.coefs_), np.array(r_jit.coefs_)
            rel = np.abs(W_jit - W_np).max() / np.abs(W_np).max()
            iters = [(p["n_iter"], q["n_iter"]) for p, q in zip(r_np.path_, r_jit.path_)]
            log.info("%-9s fit numpy %.2f s (QP %.2f s) -> fast %.2f s (QP %.2f s); max rel. weight difference "
                     "%.1e; iterations per C (numpy, fast) %s", name, s_np, rec_np.seconds, s_jit, rec_jit.seconds,
                     rel, iters)


if __name__ == "__main__":
    main()
