"""Training on several processes or machines with Dask (``pip install pyterrier-svmmap[dask]``).

The 1-slack cutting-plane loop is data-parallel over queries: the training queries are cut into shards (a shard
never splits a query) that stay on the workers as φ with labels and offsets (:func:`~.shards.shard_problem`).
Every oracle call is one direct call per worker, to a :class:`~.shards.ShardHolder` actor holding its shards
(:class:`Placement`), and the driver sums the answers in shard order
(:func:`~pyterrier_svmmap.svm.cutting_plane.reduce_shard_sums`), so that the model is a one-process fit's
whatever the number of workers. The quantile thresholds (an exact search over order statistics), the column
statistics, the prior's span and the tie-break function are computed over all shards the same way. The QP,
the validation scores and the choice of C stay on the driver; ``selection="auto"`` runs its search on the
driver and its independent fits as tasks (:meth:`DaskExecutor.fit_map`).

A lost worker's shards are recomputed by Dask, the grouping is read again and the same question is asked
again from the same w; when they cannot be recomputed, :class:`DistributedTrainingError`.
"""
from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.matrices import spread_of
from pyterrier_svmmap.features.scales import ColumnStatistics, power_of_two_scale, statistics_from_sums
from pyterrier_svmmap.features.layout import FeatureLayout, default_base_names
from pyterrier_svmmap.scale.client import close_client, dask_client, is_dask_client
from pyterrier_svmmap.scale.shards import (InProcessExecutor, ShardHolder, concatenate_sources, is_path,
                                           quantile_thresholds_from_counts, read_valid, sample_extent,
                                           shard_column_top, shard_from_arrays, shard_from_svmlight,
                                           shard_function_aps, shard_problem, shard_sample, shard_score_extent,
                                           shard_spread_sums, shard_summary, usable_shard, worker_counts,
                                           worker_query_sumsq, worker_threads, worker_violation)
from pyterrier_svmmap.svm.cutting_plane import reduce_shard_sums
from pyterrier_svmmap.selection import best_row, c_grid, features_name, is_auto_c, resolve_c_grid
from pyterrier_svmmap.svm.ranker import warn_skipped

log = logging.getLogger(__name__)


class DistributedTrainingError(RuntimeError):
    """Distributed training could not finish (a shard could not be recomputed, a worker failed)."""


#: failures on the workers that are the data's (raised as they are), not the cluster's (retried)
DATA_ERRORS = (ValueError, FileNotFoundError)


def _training_error(e: BaseException) -> DistributedTrainingError:
    return DistributedTrainingError(f"distributed training failed: {type(e).__name__}: {e}")


def executor_for(executor: Any):
    """The shard executor (:mod:`~pyterrier_svmmap.svm.executors`) of the estimators' ``executor``:
    :class:`~.shards.InProcessExecutor` for None, :class:`DaskExecutor` for ``"local"``, an address or a Client,
    a shard executor as it is."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    if executor is None:
        return InProcessExecutor()
    if isinstance(executor, str) or is_dask_client(executor):
        return DaskExecutor(executor)
    raise ValueError(f"executor must be None, 'local', a scheduler address or a dask.distributed.Client, got "
                     f"{executor!r}")


class DaskExecutor:
    """The shard executor of a Dask cluster (a Client, a scheduler address or ``"local"``,
    :func:`~.client.dask_client`): a client made here is closed after the fit."""

    def __init__(self, executor):
        self.executor = executor

    @contextlib.contextmanager
    def fit_map(self) -> Iterator[Callable[[Callable[[int], Any], int], list]]:
        """The cluster's :data:`~pyterrier_svmmap.selection.FitMap` (:func:`map_fits`) for the block."""
        client, owned = dask_client(self.executor)
        try:
            yield lambda job, n: map_fits(client, job, n)
        finally:
            if owned:
                close_client(client)

    def fit_shards(self, ranker, sources: Sequence, valid, base_names: Optional[Sequence[str]]):
        """Fit ``ranker`` on the shards (module docstring); with ``selection="auto"`` the shards are gathered
        and :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` runs its search here, its fits on the
        workers (:meth:`fit_map`)."""
        if ranker.selects_auto():
            train, sizes = concatenate_sources([_resolved(s) for s in sources])
            return ranker.fit(train.raw, train.labels, train.offsets, valid=read_valid(valid, train.n_functions),
                              base_names=base_names, shard_queries=sizes)
        grid = c_grid(ranker.C)                          # C="auto": relative, resolved per feature block
        options = ranker.feature_options()
        if valid is None and len(grid) * len(options) > 1:
            raise ValueError(f"{len(grid) * len(options)} (features, C) settings but no validation data: on a cluster "
                             "C (and features='auto') is chosen on validation queries; give valid=(raw, labels, "
                             "offsets) or a single C")
        client, owned = dask_client(self.executor)
        t0 = time.perf_counter()
        try:
            data = ShardedData(client, sources, rel=ranker.rel)
            warn_skipped(data.n_queries_given - data.n_queries, data.n_queries_given)
            if data.n_queries == 0:
                raise ValueError("no training query has both a relevant and a non-relevant candidate")
            ranker.n_functions_ = data.n_functions
            if base_names is not None and len(base_names) != ranker.n_functions_:
                raise ValueError(f"{len(base_names)} base names for {ranker.n_functions_} base functions")
            ranker.base_names_ = default_base_names(ranker.n_functions_) if base_names is None else list(base_names)
            valid = read_valid(valid, ranker.n_functions_)
            reference = ranker.reference_column()
            ranker.tie_function_ = data.best_function() if reference is None else reference
            trained, grids = zip(*[_train_sharded(ranker, data, option) for option in options])
            ranker.select_paths(list(grids), list(trained), valid)
            ranker.training_summary_ = dict(n_queries=data.n_queries, n_candidates=data.n_candidates,
                                            skipped_queries=data.n_queries_given - data.n_queries,
                                            skipped_candidates=data.n_candidates_given - data.n_candidates,
                                            shards=len(sources), traffic=data.traffic,
                                            seconds=time.perf_counter() - t0)
            data.close()
        finally:
            if owned:
                close_client(client)
        return ranker


def map_fits(client, job: Callable[[int], Any], n: int) -> list:
    """``[job(0), …, job(n − 1)]`` on the workers of ``client``: ``job`` (picklable) sent once to every
    worker, one task per index, each on its worker's threads; the answers in index order."""
    if n == 0:
        return []
    [shared] = client.scatter([job], broadcast=True, hash=False)
    futures = client.map(run_fit, range(n), job=shared, pure=False, retries=3)
    try:
        return client.gather(futures)
    finally:
        for f in futures + [shared]:
            f.release()


def run_fit(j: int, job: Callable[[int], Any]) -> Any:
    with threads.using(worker_threads()):
        return job(j)


def _resolved(source):
    """A source with any Dask futures among its arrays replaced by their values (gathered to the driver)."""
    return source if is_path(source) else tuple(x.result() if hasattr(x, "result") and hasattr(x, "key") else x
                                                 for x in source)


def _train_sharded(ranker, data: "ShardedData", features):
    """((layout, results, the prior's base function or None), the C values) of ``features``, fitted on the shards."""
    encoder = FeatureEncoder(features, ranker.n_bins, ranker.binning, ranker.threshold_depth, ranker.normalise)
    thresholds = data.thresholds(ranker.n_bins, ranker.threshold_depth) if encoder.fits_thresholds else None
    encoder.fit_statistics(data.column_statistics(), thresholds, ranker.base_names_)
    layout = FeatureLayout(encoder, ranker.needs_bias, ranker.base_names_)
    f = ranker.tie_function_ if ranker.uses_prior() else None          # the best function on all shards
    w0 = None if f is None else ranker.prior_weights(layout, f, span=data.score_span(layout, f))
    data.set_layout(layout)
    grid = resolve_c_grid(ranker.C, data.spread() if is_auto_c(ranker.C) else 0.0)
    oracle = ShardOracle(data, [g.loss for g in ranker.slack_groups(1.0)], layout.dim)
    results = ranker._solve(oracle, grid, w0)
    data.traffic[features_name(features)] = dict(
        iterations=oracle.calls, bytes_per_iteration=oracle.bytes_per_iteration, tasks=oracle.tasks,
        oracle_seconds=oracle.seconds, busiest_worker_seconds=oracle.busiest_seconds,
        worker_seconds=oracle.worker_seconds)
    return (layout, results, f), grid


class ShardedData:
    """The training shards on the workers (``sources``: svmlight paths, each read by a worker, or
    ``(raw, labels, offsets)`` tuples), and the questions the driver asks of all of them."""

    def __init__(self, client, sources: Sequence[Union[str, Tuple]], retries: int = 3, rel: float = 1.0):
        self.client = client
        self.retries = retries
        # arrays travel inside the task, so that a lost shard is rebuilt from the graph
        futures = [client.submit(shard_from_svmlight, str(s), pure=False, retries=retries) if is_path(s)
                   else client.submit(shard_from_arrays, *s, pure=False, retries=retries) for s in sources]
        summaries = self._gather([client.submit(shard_summary, f, retries=retries) for f in futures])
        self.n_functions = max(s["n_functions"] for s in summaries)
        seen: Dict[str, int] = {}
        for i, s in enumerate(summaries):
            for q in s["query_ids"]:
                if q in seen and len(sources) > 1 and is_path(sources[i]):
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
        self._statistics: Optional[ColumnStatistics] = None
        self.feature_placement: Optional[Placement] = None
        #: per feature option: the oracle's calls, bytes and seconds (``training_summary_["traffic"]``)
        self.traffic: Dict[str, dict] = {}

    def _gather(self, futures):
        try:
            return self.client.gather(futures)
        except DATA_ERRORS:
            raise
        except Exception as e:                               # noqa: BLE001 - any worker failure
            raise _training_error(e) from e

    def _each(self, func, *args) -> list:
        """``func(shard, *args)`` of every shard, on the workers, in shard order."""
        return self._gather([self.client.submit(func, s, *args, retries=self.retries) for s in self.shards])

    def thresholds(self, n_bins: int, depth: Optional[int]) -> np.ndarray:
        samples = [self.client.submit(shard_sample, s, depth, retries=self.retries) for s in self.shards]
        n, lo, hi = zip(*self._gather([self.client.submit(sample_extent, s) for s in samples]))
        placement = Placement(self.client, samples, self.retries)
        try:
            return quantile_thresholds_from_counts(lambda pivots: sum(placement.run(worker_counts, (pivots,))), sum(n),
                                                   np.min(lo, axis=0), np.max(hi, axis=0), n_bins)
        finally:
            placement.close()

    def column_statistics(self) -> ColumnStatistics:
        """The base functions' :class:`~pyterrier_svmmap.features.scales.ColumnStatistics` over all shards: the
        largest |score|, then every shard's per-query sums at that scale, stacked in shard order."""
        if self._statistics is None:
            top = np.max(self._each(shard_column_top), axis=0)
            parts = self._each(shard_spread_sums, power_of_two_scale(top))
            self._statistics = statistics_from_sums(top, *(np.concatenate(p) for p in zip(*parts)))
        return self._statistics

    def score_span(self, layout, function: int) -> float:
        """The range of ``function``'s score column of ``layout`` over all shards (the prior's ``span``)."""
        extents = self._each(shard_score_extent, layout, function)
        return max(hi for _, hi in extents) - min(lo for lo, _ in extents)

    def best_function(self) -> int:
        """The base function with the highest MAP over all shards (per-query APs in shard order)."""
        return best_row(np.hstack(self._each(shard_function_aps)))

    def set_layout(self, layout) -> None:
        """φ of every shard, with its labels and offsets, computed and kept on the workers."""
        if self.feature_placement is not None:
            self.feature_placement.close()
        self.features = [self.client.submit(shard_problem, s, layout, retries=self.retries) for s in self.shards]
        self.feature_placement = Placement(self.client, self.features, self.retries)

    def spread(self) -> float:
        """φ's R² over every shard (:func:`~pyterrier_svmmap.features.matrices.spread_of`, sums in shard order)."""
        parts = self.feature_placement.run(worker_query_sumsq, ())
        return spread_of(np.concatenate(parts), self.n_candidates)

    def close(self) -> None:
        if self.feature_placement is not None:
            self.feature_placement.close()
        for f in self.shards + (self.features or []):
            f.release()


class Placement:
    """Which worker answers for which shard, a :class:`~.shards.ShardHolder` actor on each: one direct call per
    worker and question (1.7 ms for both on a 2-worker LocalCluster, 4.6 ms for one task through the scheduler;
    docs/performance.md, "Dask"). The grouping (:func:`group_by_worker` of ``client.who_has``) is read on first
    use and after a call ran elsewhere than asked or failed; a failed call (a lost worker) is asked again of new
    holders after a pause (0.1 s, doubling) up to ``retries`` times, then :class:`DistributedTrainingError`; an
    error of the data (:data:`DATA_ERRORS`) is raised as it is. Answers come back in the futures' order."""

    def __init__(self, client, futures: Sequence, retries: int = 3):
        self.client = client
        self.futures = list(futures)
        self.retries = retries
        self._groups: Optional[List[Tuple[Optional[str], List[int]]]] = None
        self._holders: Optional[list] = None
        self._holder_futures: list = []
        self.refreshes = 0                     # times the grouping was read from the scheduler
        self.last_tasks = 0                    # holders asked by the last run()
        self.last_seconds: List[float] = []    # per holder asked by the last run(), its worker's seconds

    def invalidate(self) -> None:
        """Forget the grouping and the holders: the next call reads the grouping again and makes new ones."""
        self._groups = None
        self._holders = None
        for f in self._holder_futures:
            f.release()
        self._holder_futures = []

    close = invalidate

    def groups(self) -> List[Tuple[Optional[str], List[int]]]:
        """(worker address or None, shard indices in increasing order) per holder, by address."""
        if self._groups is None:
            from distributed import wait
            wait(self.futures)                                 # computed (or failed: the holders will say so)
            who = self.client.who_has(self.futures)
            self.refreshes += 1
            self._groups = group_by_worker([list(who.get(f.key, ())) for f in self.futures])
        return self._groups

    def holders(self) -> list:
        """One :class:`~.shards.ShardHolder` actor per group of :meth:`groups`, made on first use."""
        if self._holders is None:
            self._holder_futures = [
                self.client.submit(ShardHolder, *[self.futures[i] for i in idx], actor=True, pure=False,
                                   **(dict(workers=[address], allow_other_workers=True) if address else {}))
                for address, idx in self.groups()]
            self._holders = [f.result() for f in self._holder_futures]
        return self._holders

    def run(self, func, args: tuple) -> list:
        """One result per future, in their order: ``func(*args, *a group's shards)`` called once per group on
        its worker (``func`` returns the worker's address and one result per shard, as
        :func:`~.shards.worker_violation`)."""
        for attempt in range(self.retries + 1):
            try:
                holders = self.holders()
                groups = self._groups
                answers = [c.result() for c in [h.run(func, args) for h in holders]]
                break
            except DATA_ERRORS:
                raise
            except Exception as e:                           # noqa: BLE001 - a lost worker, whatever Dask raises
                self.invalidate()
                if attempt == self.retries:
                    raise _training_error(e) from e
                log.info("a worker answering for shards was lost (%s: %s): asking again where the shards are",
                         type(e).__name__, e)
                time.sleep(0.1 * 2 ** attempt)               # let the scheduler notice the loss
        out: list = [None] * len(self.futures)
        self.last_seconds = [seconds for _, seconds in answers]
        for (address, idx), ((ran_on, results), _) in zip(groups, answers):
            if address is None or ran_on != address:
                log.debug("shards %s ran on %s, not %s: reading where the shards are again", idx, ran_on, address)
                self.invalidate()
            for i, r in zip(idx, results):
                out[i] = r
        self.last_tasks = len(holders)
        return out


def group_by_worker(holders: Sequence[Sequence[str]]) -> List[Tuple[Optional[str], List[int]]]:
    """(worker address, shard indices in increasing order) per worker, by address, from the addresses holding
    each shard: a shard held by one worker goes to it, one held by several to the one with the fewest shards so
    far (ties: the smaller address), those held by none to a last group of address None."""
    groups: Dict[Optional[str], List[int]] = {}
    for i, h in sorted(enumerate(holders), key=lambda ih: len(ih[1]) != 1):     # the shards of one holder first
        groups.setdefault(min(sorted(h), key=lambda a: len(groups.get(a, ()))) if h else None, []).append(i)
    orphans = groups.pop(None, [])
    return [(a, sorted(groups[a])) for a in sorted(groups)] + ([(None, orphans)] if orphans else [])


class ShardOracle:
    """The separation oracle over the shards: w ↦ per slack group (1/n Σ Ψ contributions, 1/n Σ Δ), one call
    per worker (:class:`Placement`), summed in shard order. It counts its calls, the workers asked (``tasks``),
    the driver's wall seconds, the busiest worker's seconds per call (summed) and all workers' seconds."""

    def __init__(self, data: ShardedData, losses, dim: int):
        self.data, self.losses, self.dim = data, list(losses), int(dim)
        self.n_groups = len(self.losses)                # the oracle protocol's slack groups
        self.calls = self.tasks = 0
        self.seconds = self.busiest_seconds = self.worker_seconds = 0.0

    @property
    def bytes_per_iteration(self) -> int:
        """w to every worker asked plus (vector, number) per group back from every shard."""
        per_call = self.tasks / self.calls if self.calls else 1
        return int(round(8 * self.dim * per_call)) + len(self.data.shards) * self.n_groups * 8 * (self.dim + 1)

    def __call__(self, w: np.ndarray):
        data = self.data
        self.calls += 1
        t = time.perf_counter()
        parts = data.feature_placement.run(worker_violation, (np.asarray(w, dtype=float), self.losses))
        self.seconds += time.perf_counter() - t
        self.tasks += data.feature_placement.last_tasks
        self.busiest_seconds += max(data.feature_placement.last_seconds, default=0.0)
        self.worker_seconds += sum(data.feature_placement.last_seconds)
        return reduce_shard_sums(parts, data.n_queries)                 # fixed order: shard 0, 1, 2, ...
