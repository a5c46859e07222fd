"""Training on several processes or machines with Dask (``pip install pyterrier-svmmap[dask]``).

The 1-slack cutting-plane loop (Joachims, Finley & Yu 2009, Algorithm 4) is data-parallel: in every
iteration each query's scores, its loss-augmented argmax (Yue et al. 2007, Algorithm 2) and its Ψ
contribution are independent of the other queries', and the new constraint is their sum. So the training
queries are cut into *shards* (a shard never splits a query); the shards are loaded once onto Dask workers
and stay there, each as φ with its labels and query offsets (:func:`~.shards.shard_problem`).

Every oracle call is **one call per worker** that holds shards, made directly to a
:class:`~.shards.ShardHolder` actor on that worker, without the scheduler (:class:`Placement`):
:func:`~.shards.worker_violation` gets w (a vector of φ's dimension, in the call) and that worker's shards,
runs the argmax of each shard on the worker's threads, and returns, per shard and slack group, one vector of
φ's dimension (Σ_q Ψ contributions) and one number (Σ_q Δ), shard by shard. The driver puts the answers back
in shard order and sums them in that order (:func:`~pyterrier_svmmap.svm.cutting_plane.reduce_shard_sums`,
as a one-process fit does), so the model does not depend on how many workers there are or which worker
computed what. The small dual QP stays on the driver (:mod:`~pyterrier_svmmap.svm.cutting_plane`). Which
worker holds which shard is read from the scheduler (``client.who_has``) before the first call and again
after a call ran on another worker than the one asked or failed. The client's own settings are left as they
are.

What else needs all the data is done the same way, exactly:

* quantile thresholds (the paper's K_f, §4.2): every shard keeps its per-query top-``threshold_depth``
  scores, sorted per function; the driver finds each global order statistic by a search over the float64
  values in their total order — at most 13 rounds in which every worker answers, per shard it holds, how
  many of the shard's values lie at or below each of 31 pivots per threshold — so the thresholds equal
  ``numpy.quantile(..., method="lower")`` over all shards' values, as one process computes them;
* the tie-break function and ``prior="best"``: every shard returns its per-query APs of every base function,
  which the driver puts in shard order and averages as one process does.

Validation queries are scored on the driver.

The default, ``selection="auto"`` (:func:`~pyterrier_svmmap.selection.select_auto`), is a search over settings
whose evidence is cross-validation: its (fold, setting) paths of C are independent fits. The ranker runs the
search in the driver process, as in one process, and hands the fits to :meth:`DaskExecutor.fit_map`: the
search's data (the judged queries, φ of every feature block, the folds) is sent once to every worker, each
fit is one task, and the answers (weights of every C, held-out APs) come back in the fits' order, so that the
fallback test, the fold averaging and the refit on the driver see what one process sees, bit for bit. With
``selection="validation"`` and a grid, C is chosen on validation data (cross-validation over shards is not
distributed).

Failure: shards are Dask tasks (loading a file, or building the shard from arrays held in the task
graph). When a worker is lost, the call of its holder fails at once; Dask recomputes its shards on another
worker, the grouping is read again from the scheduler, new holders are made where the shards now are, and the
same question is asked again from the same w: the model is the same. If the shards cannot be recomputed (no
worker left, retries exhausted), training stops with :class:`DistributedTrainingError`.
"""
from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap.svm.cutting_plane as solver
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.matrices import spread_of
from pyterrier_svmmap.features.scales import ColumnStatistics, power_of_two_scale, statistics_from_sums
from pyterrier_svmmap.features.layout import FeatureLayout, default_base_names
from pyterrier_svmmap.scale.client import close_client, dask_client, is_dask_client
from pyterrier_svmmap.scale.local import InProcessExecutor, concatenate_sources, read_valid
from pyterrier_svmmap.scale.shards import (ShardHolder, quantile_thresholds_from_counts, sample_extent,
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


def _is_data_error(e: BaseException) -> bool:
    """Whether a failure on the workers is the data's (raised to the caller as it is) rather than the
    cluster's (retried, then :class:`DistributedTrainingError`)."""
    return isinstance(e, (ValueError, FileNotFoundError))


def _training_error(e: BaseException) -> DistributedTrainingError:
    return DistributedTrainingError(f"distributed training failed: {type(e).__name__}: {e}")


def executor_for(executor: Any):
    """The shard executor (:mod:`~pyterrier_svmmap.svm.executors`) that
    :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker` takes as ``executor``, for the estimators' and the
    command line's ``executor``: :class:`~.local.InProcessExecutor` for None, :class:`DaskExecutor` for
    ``"local"``, a scheduler address or a ``dask.distributed.Client``, a shard executor as it is; ValueError
    for anything else."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    if executor is None:
        return InProcessExecutor()
    if isinstance(executor, str) or is_dask_client(executor):
        return DaskExecutor(executor)
    raise ValueError(f"executor must be None, 'local', a scheduler address or a dask.distributed.Client, got "
                     f"{executor!r}")


class DaskExecutor:
    """The shard executor (:mod:`~pyterrier_svmmap.svm.executors`) of a Dask cluster: ``executor`` is a
    ``dask.distributed.Client``, a scheduler address or ``"local"`` (a LocalCluster with one single-threaded
    worker per core). A client made here is closed after the fit; a cluster given is used as it is."""

    def __init__(self, executor):
        self.executor = executor

    @contextlib.contextmanager
    def fit_map(self) -> Iterator[Callable[[Callable[[int], Any], int], list]]:
        """The cluster's :data:`~pyterrier_svmmap.selection.FitMap`, for the block: ``fit_map(job, n)`` sends
        ``job`` (a picklable callable, e.g. :class:`~pyterrier_svmmap.selection.FoldFits`) once to every
        worker and runs ``job(0)``, …, ``job(n − 1)`` as ``n`` tasks, each on its worker's threads; the answers
        come back in that order. A client made here (``"local"``, an address) is closed after the block."""
        client, owned = dask_client(self.executor)
        try:
            yield lambda job, n: map_fits(client, job, n)
        finally:
            if owned:
                close_client(client)

    def fit_shards(self, ranker, sources: Sequence, valid, base_names: Optional[Sequence[str]]):
        """Thresholds, prior and every cutting-plane iteration's constraint computed by the shards on the
        workers, the QP and the model selection on the driver. With ``selection="auto"``, the shards are
        gathered into the driver and :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` runs the
        search there, its independent fits on the workers (:meth:`fit_map`)."""
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
            ranker.base_names_ = (list(base_names) if base_names is not None
                                  else default_base_names(ranker.n_functions_))
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
    """``[job(0), …, job(n − 1)]`` on the workers of ``client``: ``job`` sent once to every worker
    (``scatter(broadcast=True)``), one task per index (:func:`run_fit`), the answers gathered in order.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    job : callable
        A picklable callable of one index (:data:`~pyterrier_svmmap.selection.FitMap`).
    n : int
        The number of fits.

    Returns
    -------
    list
        The answers, in index order.
    """
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
    """``job(j)`` on a worker, its kernels on the worker's threads (their results do not depend on the thread
    count, :mod:`~pyterrier_svmmap.threads`)."""
    with threads.using(worker_threads()):
        return job(j)


def _resolved(source):
    """A source with any Dask futures among its arrays replaced by their values (gathered to the driver)."""
    if _arrays(source):
        return tuple(x.result() if hasattr(x, "result") and hasattr(x, "key") else x for x in source)
    return source


def _train_sharded(ranker, data: "ShardedData", features):
    """The ranker's layout and C path on a :class:`ShardedData`: ((layout, results, index of the prior's
    base function or None), the C values), as :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.train_path`
    in one process, with the ranker's prior rule (:meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.uses_prior`,
    :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.prior_weights`)."""
    encoder = FeatureEncoder(features, ranker.n_bins, ranker.binning, ranker.threshold_depth, ranker.normalise)
    thresholds = None
    if encoder.fits_thresholds:
        thresholds = data.thresholds(ranker.n_bins, ranker.threshold_depth)
    encoder.fit_statistics(data.column_statistics(), thresholds, ranker.base_names_)
    layout = FeatureLayout(encoder, ranker.needs_bias, ranker.base_names_)
    w0, f = None, None
    if ranker.uses_prior():
        f = ranker.tie_function_                                       # the best function on all shards
        w0 = ranker.prior_weights(layout, f, span=data.score_span(layout, f))
    data.set_layout(layout)
    grid = resolve_c_grid(ranker.C, data.spread() if is_auto_c(ranker.C) else 0.0)
    oracle = data.oracle(ranker.slack_groups(1.0), layout.dim)
    results = solver.train_path(None, None, None, ranker.slack_groups(1.0), grid, epsilon=ranker.epsilon,
                                max_iter=ranker.max_iter, prior=w0, oracle=oracle)
    data.traffic[features_name(features)] = dict(iterations=oracle.calls,
                                                 bytes_per_iteration=oracle.bytes_per_iteration,
                                                 tasks=oracle.tasks, oracle_seconds=oracle.seconds,
                                                 busiest_worker_seconds=oracle.busiest_seconds,
                                                 worker_seconds=oracle.worker_seconds)
    return (layout, results, f), grid


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
        self._statistics: Optional[ColumnStatistics] = None
        self.feature_placement: Optional[Placement] = None
        #: per feature option: cutting-plane iterations and bytes sent per iteration (see ShardOracle)
        self.traffic: Dict[str, dict] = {}

    def _gather(self, futures):
        try:
            return self.client.gather(futures)
        except Exception as e:                               # noqa: BLE001 - any worker failure
            if _is_data_error(e):
                raise
            raise _training_error(e) from e

    # -- what needs every shard ------------------------------------------------------------------
    def thresholds(self, n_bins: int, depth: Optional[int]) -> np.ndarray:
        samples = [self.client.submit(shard_sample, s, depth, retries=self.retries) for s in self.shards]
        extents = self._gather([self.client.submit(sample_extent, s) for s in samples])
        n = sum(e[0] for e in extents)
        lo = np.min([e[1] for e in extents], axis=0)
        hi = np.max([e[2] for e in extents], axis=0)

        placement = Placement(self.client, samples, self.retries)

        def count_le(pivots):
            return sum(placement.run(worker_counts, (pivots,)))
        try:
            return quantile_thresholds_from_counts(count_le, n, lo, hi, n_bins)
        finally:
            placement.close()

    def column_statistics(self) -> ColumnStatistics:
        """The base functions' :class:`~pyterrier_svmmap.features.scales.ColumnStatistics` over all shards, as one
        process computes them: the largest |score| over the shards, then every shard's per-query sums at the
        resulting scale, stacked in shard order."""
        if self._statistics is None:
            top = np.max(self._gather([self.client.submit(shard_column_top, s, retries=self.retries)
                                       for s in self.shards]), axis=0)
            parts = self._gather([self.client.submit(shard_spread_sums, s, power_of_two_scale(top),
                                                     retries=self.retries) for s in self.shards])
            self._statistics = statistics_from_sums(top, *(np.concatenate(p) for p in zip(*parts)))
        return self._statistics

    def score_span(self, layout, function: int) -> float:
        """The range of ``function``'s score column of ``layout``'s prior block over all shards: the ``span`` of
        :meth:`~pyterrier_svmmap.features.layout.FeatureLayout.prior_weights`, which one process takes on its
        candidates."""
        extents = self._gather([self.client.submit(shard_score_extent, s, layout, function, retries=self.retries)
                                for s in self.shards])
        return max(hi for _, hi in extents) - min(lo for lo, _ in extents)

    def best_function(self) -> int:
        """The base function with the highest MAP over all shards, as one process finds it (the shards' per-query
        APs in shard order, :func:`~pyterrier_svmmap.selection.best_row`)."""
        aps = self._gather([self.client.submit(shard_function_aps, s, retries=self.retries) for s in self.shards])
        return best_row(np.hstack(aps))

    def set_layout(self, layout) -> None:
        """φ of every shard, with its labels and offsets, computed and kept on the workers."""
        if self.feature_placement is not None:
            self.feature_placement.close()
        self.features = [self.client.submit(shard_problem, s, layout, retries=self.retries) for s in self.shards]
        self.feature_placement = Placement(self.client, self.features, self.retries)

    def spread(self) -> float:
        """φ's R² over every shard (the one of :meth:`set_layout`), as one process computes it: the shards'
        per-query sums stacked in shard order (:func:`~pyterrier_svmmap.features.matrices.spread_of`)."""
        parts = self.feature_placement.run(worker_query_sumsq, ())
        return spread_of(np.concatenate(parts), self.n_candidates)

    def oracle(self, groups, dim: int) -> "ShardOracle":
        """The solver's separation oracle (:class:`~pyterrier_svmmap.svm.cutting_plane.Oracle`) over the shards."""
        return ShardOracle(self, [g.loss for g in groups], dim)

    def close(self) -> None:
        if self.feature_placement is not None:
            self.feature_placement.close()
        for f in self.shards + (self.features or []):
            f.release()


class Placement:
    """Which worker answers for which shard, and the :class:`~.shards.ShardHolder` actor on each of them: one
    direct call per worker and question.

    The shards are grouped by a worker that holds them, read from the scheduler (``client.who_has``) on first
    use and again whenever a call ran elsewhere than asked, a worker was lost, or :meth:`invalidate` is
    called. A shard held by several workers goes to the one with the fewest shards so far (ties: the smaller
    address); the shards held by none (lost, being recomputed) go to one holder without a worker
    restriction. Each group gets a holder actor, created with ``workers=[address], allow_other_workers=True``
    so that a holder whose worker is gone is made where the shards are recomputed. The grouping changes only
    where a question is answered, never the answers, which are combined in shard order.

    Failure: a call to a lost worker's holder fails at once (Dask raises ``OSError`` or ``RuntimeError``);
    then, after a pause (0.1 s, doubling with each retry) that lets the scheduler notice the loss, the grouping
    is read again once the scheduler has recomputed the lost shards, new holders are made, and the same
    question is asked again, up to ``retries`` times, after which :class:`DistributedTrainingError` is raised. An error of the data (``ValueError``, ``FileNotFoundError``) is raised as it is.
    """

    def __init__(self, client, futures: Sequence, retries: int = 3):
        self.client = client
        self.futures = list(futures)
        self.retries = retries
        self._groups: Optional[List[Tuple[Optional[str], List[int]]]] = None
        self._holders: Optional[list] = None
        self._holder_futures: list = []
        #: times the grouping was read from the scheduler
        self.refreshes = 0
        #: holders asked by the last :meth:`run` (one per worker holding shards)
        self.last_tasks = 0
        #: per holder asked by the last :meth:`run`, the seconds its worker spent computing the answer
        self.last_seconds: List[float] = []

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
            groups = self.groups()
            self._holder_futures = [
                self.client.submit(ShardHolder, *[self.futures[i] for i in idx], actor=True, pure=False,
                                   **(dict(workers=[address], allow_other_workers=True) if address else {}))
                for address, idx in groups]
            self._holders = [f.result() for f in self._holder_futures]
        return self._holders

    def run(self, func, args: tuple) -> list:
        """One call per group: ``func(*args, *the group's shards)`` on the group's worker.

        Parameters
        ----------
        func : callable
            A function of module level returning ``(address of the worker it ran on, [one result per shard
            given, in the order given])`` (:func:`~.shards.worker_violation`, :func:`~.shards.worker_counts`).
        args : tuple
            The arguments before the shards (small: they travel with every call).

        Returns
        -------
        list
            One result per future of :attr:`futures`, in that order, whatever the grouping.
        """
        for attempt in range(self.retries + 1):
            try:
                holders = self.holders()
                groups = self._groups
                answers = [c.result() for c in [h.run(func, args) for h in holders]]
                break
            except Exception as e:                           # noqa: BLE001 - a lost worker, whatever Dask raises
                if _is_data_error(e):
                    raise
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
    """Shard indices grouped by worker.

    A shard with one holder goes to it; one with several to the holder with the fewest shards so far (ties:
    the smaller address), the shards with one holder counted first; those with none to a group of their own
    (address None), last.

    Parameters
    ----------
    holders : sequence of sequences of str
        Per shard, the addresses of the workers that hold it (``client.who_has``).

    Returns
    -------
    list of (str or None, list of int)
        Per task, the worker's address and the shard indices in increasing order; groups by address.
    """
    groups: Dict[str, List[int]] = {}
    for i, h in enumerate(holders):
        if len(h) == 1:
            groups.setdefault(h[0], []).append(i)
    orphans = []
    for i, h in enumerate(holders):
        if len(h) > 1:
            best = min(sorted(h), key=lambda a: len(groups.get(a, ())))
            groups.setdefault(best, []).append(i)
        elif not h:
            orphans.append(i)
    out: List[Tuple[Optional[str], List[int]]] = [(a, sorted(groups[a])) for a in sorted(groups)]
    return out + ([(None, orphans)] if orphans else [])


class ShardOracle:
    """w ↦ per slack group (a, b) = (1/n Σ_shards Σ Ψ contributions, 1/n Σ_shards Σ Δ), summed in shard order.

    Each call asks every worker holding shards once (its :class:`~.shards.ShardHolder` actor, through
    :class:`Placement`), with w in the call, and gets back, per shard, one vector of φ's dimension and one
    number per group; the driver sums them in shard order, so the model does not depend on the grouping.
    :attr:`bytes_per_iteration` counts what travels, :attr:`tasks` the workers asked, :attr:`seconds` the
    calls' wall time on the driver and :attr:`busiest_seconds` the busiest worker's computing in each call
    (the difference is the overhead of distributing).
    """

    def __init__(self, data: ShardedData, losses, dim: int):
        self.data = data
        self.losses = list(losses)
        self.n_groups = len(self.losses)
        self.dim = int(dim)
        self.calls = 0
        #: workers asked over all calls (one per worker holding shards, per call)
        self.tasks = 0
        #: wall seconds of all calls, on the driver
        self.seconds = 0.0
        #: per call, the seconds of the worker that computed longest, summed over the calls
        self.busiest_seconds = 0.0
        #: the seconds every worker computed, summed over workers and calls
        self.worker_seconds = 0.0

    @property
    def bytes_per_iteration(self) -> int:
        """w to every worker asked (their mean number per call) plus (vector, number) per group back from
        every shard."""
        n_shards = len(self.data.shards)
        per_call = self.tasks / self.calls if self.calls else 1
        return int(round(8 * self.dim * per_call)) + n_shards * self.n_groups * 8 * (self.dim + 1)

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


def _arrays(source) -> bool:
    return not (isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"))
