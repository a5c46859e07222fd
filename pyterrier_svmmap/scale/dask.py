"""Training on several processes or machines with Dask (``pip install pyterrier-svmmap[dask]``).

The 1-slack cutting-plane loop (Joachims, Finley & Yu 2009, Algorithm 4) is data-parallel: in every
iteration each query's scores, its loss-augmented argmax (Yue et al. 2007, Algorithm 2) and its Ψ
contribution are independent of the other queries', and the new constraint is their sum. So the training
queries are cut into *shards* (a shard never splits a query), the shards are loaded once onto Dask workers
and stay there, and each iteration sends w to every shard and receives, per shard and slack group, one
vector of the model's dimension (Σ_q Ψ contributions) and one number (Σ_q Δ). The small dual QP stays on the
driver (:mod:`~pyterrier_svmmap.svm.cutting_plane`). Sums are combined in shard order, so the model does not depend on
how many workers there are or which worker computed what.

What else needs all the data is done the same way, exactly:

* quantile thresholds (the paper's K_f, §4.2): every shard keeps its per-query top-``threshold_depth``
  scores, sorted per function; the driver finds each global order statistic by bisection over the
  float64 values in their total order — at most 64 rounds in which every shard answers how many of its
  values lie at or below each of the F × |K_f| pivots — so the thresholds equal ``numpy.quantile(...,
  method="lower")`` over all shards' values, as one process computes them;
* ``prior="best"``: every shard returns the sum of AP per base function.

Validation queries are scored on the driver. Choosing C by cross-validation is not distributed: give
validation data (or a single C) when training on a cluster.

Failure: shards are Dask tasks (loading a file, or building the shard from arrays held in the task
graph), so when a worker is lost Dask recomputes its shards on another worker and the iteration is
repeated from the same w: the model is the same. If they cannot be recomputed (no worker left, retries
exhausted), training stops with :class:`DistributedTrainingError`.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.features.encoder import top_of_queries
from pyterrier_svmmap.svm.cutting_plane import reduce_shard_sums, shard_sums
from pyterrier_svmmap.ties import float_to_ordered, ordered_to_float

log = logging.getLogger(__name__)

DASK_HINT = "training on a Dask cluster needs dask.distributed: pip install 'pyterrier-svmmap[dask]'"


class DistributedTrainingError(RuntimeError):
    """Distributed training could not finish (a shard could not be recomputed, a worker failed)."""


# ---------------------------------------------------------------------------------------------
# shards (worker side): plain functions of module level, so that Dask ships them by reference
# ---------------------------------------------------------------------------------------------
@dataclass
class Shard:
    """The candidates of some whole queries: ``raw`` (n × F, NaN = not retrieved), ``labels``, ``offsets``
    and the queries' ids (for the check that no query is split across shards)."""
    raw: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    query_ids: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1


def shard_from_arrays(raw, labels, offsets, query_ids=None) -> Shard:
    raw = np.asarray(raw, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    qids = np.arange(len(offsets) - 1) if query_ids is None else np.asarray(query_ids)
    return Shard(raw, np.asarray(labels, dtype=float), offsets, qids)


def shard_from_svmlight(path: str) -> Shard:
    """A shard read from one svmlight/LETOR file on the worker (the driver never reads it)."""
    from pyterrier_svmmap.io.svmlight import read_svmlight
    data = read_svmlight(path)
    return Shard(data.grouped(data.features), data.grouped(data.labels).astype(float), data.offsets,
                 data.query_ids.astype(str))


def shard_summary(shard: Shard) -> dict:
    return dict(n_queries=shard.n_queries, n_candidates=len(shard.raw), n_functions=shard.raw.shape[1],
                query_ids=[str(q) for q in shard.query_ids])


def usable_shard(shard: Shard, n_functions: int, rel: float = 1.0) -> Shard:
    """The shard padded to ``n_functions`` columns (svmlight: an absent feature is 0), labels binarised at
    ``rel`` (label ≥ rel is relevant), with only the queries that can form constraints (a relevant and a
    non-relevant candidate)."""
    from pyterrier_svmmap.svm.ranker import subset_queries, usable_queries
    shard = Shard(shard.raw, (shard.labels >= rel).astype(float), shard.offsets, shard.query_ids)
    raw = shard.raw
    if raw.shape[1] < n_functions:
        raw = np.hstack([raw, np.zeros((len(raw), n_functions - raw.shape[1]))])
    ok = usable_queries(shard.labels, shard.offsets)
    if ok.all():                                            # no copy of the scores when every query is usable
        return Shard(raw, shard.labels, shard.offsets, shard.query_ids)
    raw, labels, offsets, _ = subset_queries(raw, shard.labels, shard.offsets, ok)
    return Shard(raw, labels, offsets, shard.query_ids[ok])


def shard_sample(shard: Shard, depth: Optional[int]) -> List[np.ndarray]:
    """Per base function, the sorted retrieved scores that quantile thresholds are taken over (each query's
    top ``depth``, or all)."""
    sample = shard.raw if depth is None else top_of_queries(shard.raw, shard.offsets, depth)
    return [np.sort(col[~np.isnan(col)]) for col in sample.T]


def sample_extent(sample: List[np.ndarray]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per function: number of values, min and max (inf/−inf when none)."""
    n = np.array([len(c) for c in sample])
    lo = np.array([c[0] if len(c) else np.inf for c in sample])
    hi = np.array([c[-1] if len(c) else -np.inf for c in sample])
    return n, lo, hi


def sample_counts(sample: List[np.ndarray], pivots: np.ndarray) -> np.ndarray:
    """Per function f and pivot t, how many of the shard's values are ≤ pivots[f, t]."""
    return np.stack([np.searchsorted(col, pivots[f], side="right") for f, col in enumerate(sample)])


def shard_features(shard: Shard, layout):
    """φ of the shard (held on the worker for the whole fit)."""
    return layout.transform(shard.raw, shard.offsets)


def shard_map_sums(shard: Shard) -> np.ndarray:
    """Σ over the shard's queries of each base function's AP (for ``prior="best"``)."""
    from pyterrier_svmmap.measures import average_precision
    filled = np.where(np.isnan(shard.raw), -np.inf, shard.raw)
    return np.array([average_precision(filled[:, f], shard.labels, shard.offsets).sum()
                     for f in range(shard.raw.shape[1])])


def shard_violation(shard: Shard, X, w: np.ndarray, losses) -> List[Tuple[np.ndarray, float]]:
    """Per slack group: (Σ_q Ψ coefficients as a vector, Σ_q Δ) of the most violated constraints at w
    (:func:`~pyterrier_svmmap.svm.cutting_plane.shard_sums`, the same function a one-process fit runs per shard)."""
    return shard_sums(X, shard.labels, shard.offsets, w, losses)


# ---------------------------------------------------------------------------------------------
# exact order statistics over all shards
# ---------------------------------------------------------------------------------------------
def select_order_statistics(count_le, ranks: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The value of 0-based rank ``ranks[f, t]`` among all shards' values of function f.

    ``count_le(pivots)`` returns, for an (F, T) array of pivots, how many values (over all shards) are ≤
    each pivot; ``lo``/``hi`` (F,) are the smallest and largest value per function. Bisection over the
    float64 total order (:func:`float_to_ordered`): the answer is the smallest x with count(≤ x) > rank,
    which is a data value; at most 64 calls of ``count_le``.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    shape = ranks.shape
    a = np.broadcast_to(float_to_ordered(lo)[:, None], shape).copy() - 1     # count(≤ a) ≤ rank
    b = np.broadcast_to(float_to_ordered(hi)[:, None], shape).copy()         # count(≤ b) > rank
    for _ in range(66):
        open_ = b - 1 > a                               # (b − a overflows int64)
        if not open_.any():
            break
        mid = (a >> 1) + (b >> 1) + (a & b & 1)
        mid = np.where(open_, mid, b)
        above = count_le(ordered_to_float(mid)) > ranks
        b = np.where(open_ & above, mid, b)
        a = np.where(open_ & ~above, mid, a)
    return ordered_to_float(b)


def quantile_thresholds_from_counts(count_le, n: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                                    n_bins: int) -> np.ndarray:
    """(F, n_bins) thresholds as :func:`~pyterrier_svmmap.features.encoder.quantile_thresholds` computes them over
    the union of all shards' values (−inf first, quantiles 1/n_bins … of method "lower", duplicates
    removed, +inf padding), from distributed counts."""
    from pyterrier_svmmap.features.encoder import pad_thresholds
    F = len(n)
    q = np.arange(1, n_bins) / n_bins
    ranks = np.floor(q[None, :] * (np.maximum(n, 1) - 1)[:, None]).astype(np.int64)
    values = select_order_statistics(count_le, ranks, np.where(n > 0, lo, 0.0), np.where(n > 0, hi, 0.0)) \
        if n_bins > 1 else np.zeros((F, 0))
    return np.stack([pad_thresholds(values[f] if n[f] > 0 else np.zeros(0), n_bins) for f in range(F)])


# ---------------------------------------------------------------------------------------------
# the driver side
# ---------------------------------------------------------------------------------------------
def get_client(executor):
    """A ``dask.distributed.Client`` from an executor choice: a Client, a scheduler address, or
    ``"local"`` (a LocalCluster with one single-threaded worker per core). Returns (client, owned)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        raise ImportError(DASK_HINT) from e
    if isinstance(executor, Client):
        return executor, False
    if executor == "local":
        import os
        cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True)
        return Client(cluster), True
    if isinstance(executor, str):
        return Client(executor), True
    raise ValueError(f"executor must be None, 'local', a scheduler address or a dask.distributed.Client, "
                     f"got {executor!r}")


class ShardedData:
    """The training shards on the workers, and the aggregate questions the driver asks them.

    ``sources`` are svmlight file paths (each read by a worker) or ``(raw, labels, offsets)`` tuples.
    """

    def __init__(self, client, sources: Sequence[Union[str, Tuple]], retries: int = 3, rel: float = 1.0):
        self.client = client
        self.retries = retries
        futures = []
        for s in sources:
            if isinstance(s, (str, bytes)) or hasattr(s, "__fspath__"):
                futures.append(client.submit(shard_from_svmlight, str(s), pure=False, retries=retries))
            else:
                # the arrays travel inside the task, so a lost shard can be rebuilt from the graph
                futures.append(client.submit(shard_from_arrays, *s, pure=False, retries=retries))
        summaries = self._gather([client.submit(shard_summary, f, retries=retries) for f in futures])
        self.n_functions = max(s["n_functions"] for s in summaries)
        seen: Dict[str, int] = {}
        for i, s in enumerate(summaries):
            for q in s["query_ids"]:
                if q in seen and len(sources) > 1 and not _arrays(sources[i]):
                    raise ValueError(f"query {q} is in shard {seen[q]} and shard {i}: a query's candidates must "
                                     "all be in one training file")
                seen.setdefault(q, i)
        self.n_queries_given = sum(s["n_queries"] for s in summaries)
        self.n_candidates_given = sum(s["n_candidates"] for s in summaries)
        self.shards = [client.submit(usable_shard, f, self.n_functions, rel, retries=retries) for f in futures]
        usable = self._gather([client.submit(shard_summary, f, retries=retries) for f in self.shards])
        self.n_queries = sum(s["n_queries"] for s in usable)
        self.n_candidates = sum(s["n_candidates"] for s in usable)
        self.features = None
        #: per feature option: cutting-plane iterations and bytes sent per iteration (see ShardOracle)
        self.traffic: Dict[str, dict] = {}

    def _gather(self, futures):
        try:
            return self.client.gather(futures)
        except Exception as e:                               # noqa: BLE001 - any worker failure
            if isinstance(e, (ValueError, FileNotFoundError)):
                raise
            raise DistributedTrainingError(f"distributed training failed: {type(e).__name__}: {e}") from e

    # -- what needs every shard ------------------------------------------------------------------
    def thresholds(self, n_bins: int, depth: Optional[int]) -> np.ndarray:
        samples = [self.client.submit(shard_sample, s, depth, retries=self.retries) for s in self.shards]
        extents = self._gather([self.client.submit(sample_extent, s) for s in samples])
        n = sum(e[0] for e in extents)
        lo = np.min([e[1] for e in extents], axis=0)
        hi = np.max([e[2] for e in extents], axis=0)

        def count_le(pivots):
            parts = self._gather([self.client.submit(sample_counts, s, pivots, pure=False) for s in samples])
            return sum(parts)
        return quantile_thresholds_from_counts(count_le, n, lo, hi, n_bins)

    def map_per_function(self) -> np.ndarray:
        sums = self._gather([self.client.submit(shard_map_sums, s, retries=self.retries) for s in self.shards])
        return np.sum(sums, axis=0) / self.n_queries

    def set_layout(self, layout) -> None:
        """φ of every shard, computed and kept on the workers."""
        self.features = [self.client.submit(shard_features, s, layout, retries=self.retries) for s in self.shards]

    def oracle(self, groups, dim: int) -> "ShardOracle":
        """The solver's separation oracle (:class:`~pyterrier_svmmap.svm.cutting_plane.Oracle`) over the shards."""
        return ShardOracle(self, [g.loss for g in groups], dim)

    def close(self) -> None:
        for f in self.shards + (self.features or []):
            f.release()


class ShardOracle:
    """w ↦ per slack group (a, b) = (1/n Σ_shards Σ Ψ contributions, 1/n Σ_shards Σ Δ), summed in shard order.

    Each call sends w once to every worker (``scatter(broadcast=True)``) and gets back, per shard, one vector
    of φ's dimension and one number per group; :attr:`bytes_per_iteration` counts what travels.
    """

    def __init__(self, data: ShardedData, losses, dim: int):
        self.data = data
        self.losses = list(losses)
        self.n_groups = len(self.losses)
        self.dim = int(dim)
        self.calls = 0

    @property
    def bytes_per_iteration(self) -> int:
        """w to every shard's task plus (vector, number) per group back from every shard."""
        n_shards = len(self.data.shards)
        return 8 * self.dim * n_shards + n_shards * self.n_groups * 8 * (self.dim + 1)

    def __call__(self, w: np.ndarray):
        data, client = self.data, self.data.client
        self.calls += 1
        w_future = _broadcast(client, np.asarray(w, dtype=float), data.retries)
        parts = data._gather([client.submit(shard_violation, s, X, w_future, self.losses, pure=False,
                                            retries=data.retries)
                              for s, X in zip(data.shards, data.features)])
        return reduce_shard_sums(parts, data.n_queries)                 # fixed order: shard 0, 1, 2, ...


def _broadcast(client, value, retries: int):
    """``client.scatter(value, broadcast=True)``, tried again (up to ``retries`` times) when a worker is lost
    during the broadcast: distributed then raises a CommClosedError (an OSError) until the scheduler has
    removed the worker, and the shards it held are recomputed from the task graph as for any lost worker."""
    for attempt in range(retries + 1):
        try:
            return client.scatter(value, broadcast=True, hash=False)
        except OSError as e:
            if attempt == retries:
                raise
            log.warning("a worker was lost while w was sent to the cluster (%s); sending it again", e)
            time.sleep(0.5 * (attempt + 1))


def _arrays(source) -> bool:
    return not (isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"))


def split_into_shards(raw, labels, offsets, queries_per_shard: int) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Arrays cut into shards of ``queries_per_shard`` whole queries (the last may be smaller)."""
    from pyterrier_svmmap.svm.ranker import shard_sizes, split_queries
    return split_queries(raw, labels, offsets, shard_sizes(len(offsets) - 1, queries_per_shard))
