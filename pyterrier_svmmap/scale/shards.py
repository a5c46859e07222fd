"""Shards (:class:`~pyterrier_svmmap.queries.Queries` of whole queries, from svmlight files or arrays): the shard
executor of one process (:class:`InProcessExecutor`), which concatenates them in order and trains with
:meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` taking its sums shard by shard, as a cluster's; what a Dask
worker computes on its shards, functions of module level, so that Dask ships them by reference
(:mod:`~pyterrier_svmmap.scale.dask`); and the exact order statistics over all shards that the quantile thresholds
need. The ``worker_*`` functions answer for each shard a worker holds, in the order given, so that the driver
combines the answers in shard order.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.features.scales import column_top, query_spread_sums
from pyterrier_svmmap.features.thresholds import pad_thresholds, top_of_queries
from pyterrier_svmmap.io.svmlight import read_svmlight
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.selection import function_aps
from pyterrier_svmmap.svm.cutting_plane import many_shard_sums
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.ties import float_to_ordered, ordered_to_float


def shard_from_arrays(raw, labels, offsets, query_ids=None) -> Queries:
    return Queries.from_arrays(raw, labels, offsets, query_ids)


def shard_from_svmlight(path: str) -> Queries:
    return dataclasses.replace(read_svmlight(path).queries(), docnos=None)


def is_path(source) -> bool:
    return isinstance(source, (str, bytes)) or hasattr(source, "__fspath__")


def read_valid(valid, n_functions: int):
    """``valid`` as the ranker takes it: a path read as :class:`~pyterrier_svmmap.queries.Queries`,
    ``n_functions`` wide; anything else as it is."""
    return read_svmlight(valid, n_features=n_functions).queries() if is_path(valid) else valid


def concatenate_sources(sources) -> Tuple[Queries, np.ndarray]:
    """Shards (svmlight paths or (raw, labels, offsets) tuples) as one set of queries, in order, and the
    number of queries of each shard."""
    shards = [shard_from_svmlight(str(s)) if is_path(s) else shard_from_arrays(*s) for s in sources]
    if not shards:
        raise ValueError("no training shards given")
    return Queries.concatenate(shards), np.array([sh.n_queries for sh in shards], dtype=np.int64)


class InProcessExecutor:
    """The shard executor of this process (``executor_for(None)``, :mod:`~pyterrier_svmmap.svm.executors`)."""

    def fit_map(self):
        """No fit map: the search of ``selection="auto"`` runs its fits here."""
        return contextlib.nullcontext(None)

    def fit_shards(self, ranker, sources: Sequence, valid, base_names: Optional[Sequence[str]]):
        train, sizes = concatenate_sources(sources)
        executor, ranker.executor = ranker.executor, None          # fit() trains here, not through self again
        try:
            return ranker.fit(train.raw, train.labels, train.offsets, valid=read_valid(valid, train.n_functions),
                              base_names=base_names, shard_queries=sizes)
        finally:
            ranker.executor = executor


def shard_summary(shard: Queries) -> dict:
    return dict(n_queries=shard.n_queries, n_candidates=len(shard.raw), n_functions=shard.n_functions,
                query_ids=[str(q) for q in shard.qids])


def usable_shard(shard: Queries, n_functions: int, rel: float = 1.0) -> Queries:
    """The shard padded to ``n_functions`` columns (svmlight: an absent feature is 0), labels binarised at
    ``rel`` (label ≥ rel is relevant), with only the queries that can form constraints (a relevant and a
    non-relevant candidate)."""
    shard = dataclasses.replace(shard.widened(n_functions), labels=(shard.labels >= rel).astype(float))
    ok = shard.usable()
    return shard if ok.all() else shard.subset(ok)         # no copy of the scores when every query is usable


def shard_sample(shard: Queries, depth: Optional[int]) -> List[np.ndarray]:
    """Per base function, the sorted retrieved scores the thresholds are quantiles of (each query's top
    ``depth``, or all)."""
    sample = shard.raw if depth is None else top_of_queries(shard.raw, shard.offsets, depth)
    return [np.sort(col[~np.isnan(col)]) for col in sample.T]


def sample_extent(sample: List[np.ndarray]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per function: number of values, min and max (inf/−inf when none)."""
    return (np.array([len(c) for c in sample]), np.array([c[0] if len(c) else np.inf for c in sample]),
            np.array([c[-1] if len(c) else -np.inf for c in sample]))


def sample_counts(sample: List[np.ndarray], pivots: np.ndarray) -> np.ndarray:
    """Per function f and pivot t, how many of the shard's values are ≤ pivots[f, t]."""
    return np.stack([np.searchsorted(col, pivots[f], side="right") for f, col in enumerate(sample)])


def shard_column_top(shard: Queries) -> np.ndarray:
    return column_top(shard.raw)


def shard_spread_sums(shard: Queries, prescale: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The per-query sums of :func:`~pyterrier_svmmap.features.scales.query_spread_sums` and the candidate
    counts, which the driver stacks in shard order."""
    return (*query_spread_sums(shard.raw, shard.offsets, prescale), np.diff(shard.offsets))


def shard_score_extent(shard: Queries, layout, function: int) -> Tuple[float, float]:
    return layout.score_extent(shard.raw, shard.offsets, function)


class ShardProblem(NamedTuple):
    """What a cutting-plane iteration needs of one shard, held on its worker for the whole fit."""
    X: object
    labels: np.ndarray
    offsets: np.ndarray


def shard_problem(shard: Queries, layout) -> ShardProblem:
    return ShardProblem(layout.transform(shard.raw, shard.offsets), shard.labels, shard.offsets)


def shard_function_aps(shard: Queries) -> np.ndarray:
    """Every base function's AP on every query of the shard, (F, Q)."""
    return function_aps(shard.raw, shard.labels, shard.offsets)


def worker_address() -> Optional[str]:
    """The address of the Dask worker running the calling task (None outside a worker)."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return None


def worker_threads() -> int:
    """The threads of the Dask worker running the calling task (1 outside a worker)."""
    try:
        from distributed import get_worker
        return int(get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return 1


class ShardHolder:
    """A Dask actor holding the worker's own copies of the shards (or samples) it answers for, called directly by
    the driver without the scheduler (:class:`~.dask.Placement`)."""

    calls = 0          # calls of run() (a class attribute too: Dask's actor proxy reads only what the class declares)

    def __init__(self, *shards):
        self.shards = shards
        self.calls = 0

    def run(self, func, args: tuple):
        """``(func(*args, *shards), seconds it took)``: the seconds tell the work from a call's overhead."""
        self.calls += 1
        t = time.perf_counter()
        return func(*args, *self.shards), time.perf_counter() - t


def worker_violation(w: np.ndarray, losses, *problems: ShardProblem
                     ) -> Tuple[Optional[str], List[List[Tuple[np.ndarray, float]]]]:
    """The worker's address and, per shard it holds, the argmax's sums at w (per slack group, Σ_q Ψ and Σ_q Δ,
    :func:`~pyterrier_svmmap.svm.cutting_plane.many_shard_sums`), on the worker's threads; the driver sums
    the shards in shard order."""
    with threads.using(worker_threads()):
        parts = many_shard_sums([(p.X, p.labels, p.offsets) for p in problems], w, losses)
    return worker_address(), parts


def worker_query_sumsq(*problems: ShardProblem) -> Tuple[Optional[str], List[np.ndarray]]:
    """The worker's address and, per shard, every query's Σ_d ‖φ(d) − φ̄_q‖² (φ's spread, ``C="auto"``)."""
    with threads.using(worker_threads()):
        parts = [p.X.query_sumsq(p.offsets) for p in problems]
    return worker_address(), parts


def worker_counts(pivots: np.ndarray, *samples: List[np.ndarray]) -> Tuple[Optional[str], List[np.ndarray]]:
    """The worker's address and :func:`sample_counts` of each of its samples."""
    return worker_address(), [sample_counts(s, pivots) for s in samples]


#: pivots per target and round of :func:`select_order_statistics` (each round narrows the search 31-fold)
SEARCH_PIVOTS = 31


def select_order_statistics(count_le, ranks: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                            pivots: int = SEARCH_PIVOTS) -> np.ndarray:
    """The value of 0-based rank ``ranks[f, t]`` among all shards' values of function f (``lo``/``hi``: extremes),
    ``count_le(p)`` counting the values ≤ each pivot of (F, T, k) ``p``: the smallest x with count(≤ x) > rank, found
    over the float64 total order (:func:`float_to_ordered`) narrowing 2⁶⁴ points ``pivots``-fold a round (31 pivots:
    at most 13 round trips to the workers, bisection 64)."""
    ranks = np.asarray(ranks, dtype=np.int64)
    shape = ranks.shape
    a = np.broadcast_to(float_to_ordered(lo)[:, None], shape).copy() - 1     # count(≤ a) ≤ rank
    b = np.broadcast_to(float_to_ordered(hi)[:, None], shape).copy()         # count(≤ b) > rank
    j = np.arange(pivots, dtype=np.uint64)
    k = np.uint64(pivots)
    for _ in range(130):                                # 64 rounds at pivots=2, 13 at 31
        # the open interval (a, b) holds m = b − a − 1 points; the pivots a + 1 + ⌊m·j/k⌋, j < k, lie in it
        m = b.view(np.uint64) - a.view(np.uint64) - np.uint64(1)        # (b − a overflows int64)
        open_ = m > 0
        if not open_.any():
            break
        m = m[..., None]
        step = m // k * j + (m % k) * j // k
        p = (a.view(np.uint64)[..., None] + np.uint64(1) + step).view(np.int64)
        p = np.where(open_[..., None], p, b[..., None])
        below = (count_le(ordered_to_float(p)) <= ranks[..., None]).sum(axis=-1)   # pivots not above the rank
        first_above = np.take_along_axis(p, np.minimum(below, pivots - 1)[..., None], axis=-1)[..., 0]
        last_below = np.take_along_axis(p, np.maximum(below - 1, 0)[..., None], axis=-1)[..., 0]
        b = np.where(open_ & (below < pivots), first_above, b)
        a = np.where(open_ & (below > 0), last_below, a)
    else:
        raise RuntimeError("the order-statistic search did not converge (count_le is not monotone)")
    return ordered_to_float(b)


def quantile_thresholds_from_counts(count_le, n: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                                    n_bins: int) -> np.ndarray:
    """(F, n_bins) thresholds as :func:`~pyterrier_svmmap.features.thresholds.function_thresholds` computes them over
    the union of all shards' values (−inf first, quantiles 1/n_bins … of method "lower", duplicates
    removed, +inf padding), from distributed counts."""
    F = len(n)
    q = np.arange(1, n_bins) / n_bins
    ranks = np.floor(q[None, :] * (np.maximum(n, 1) - 1)[:, None]).astype(np.int64)
    values = select_order_statistics(count_le, ranks, np.where(n > 0, lo, 0.0), np.where(n > 0, hi, 0.0)) \
        if n_bins > 1 else np.zeros((F, 0))
    return np.stack([pad_thresholds(values[f] if n[f] > 0 else np.zeros(0), n_bins) for f in range(F)])
