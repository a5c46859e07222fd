"""Where a structural SVM trains on shards: the interface of what trains it elsewhere.

The cutting-plane loop is data-parallel over whole queries, so the training data may come in shards (files
or arrays) and the per-iteration sums may be computed elsewhere (a Dask cluster). The numeric core does not
know those places: :class:`StructSVMRanker`'s ``executor`` is None (this process) or a *shard executor*, an
object with ``fit_shards(ranker, sources, valid, base_names)``, which the caller makes and hands in
(:func:`pyterrier_svmmap.scale.dask.executor_for` makes one of None, ``"local"``, a scheduler address or a
``dask.distributed.Client``; the estimators and ``svmmap learn`` call it).

An executor may also run the independent fits of a search (``selection="auto"``, whose search runs in the
calling process): then it has ``fit_map()``, a context manager that yields a
:data:`~pyterrier_svmmap.selection.FitMap` (:meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.search_map`).
"""
from __future__ import annotations

from typing import Any, Callable, ContextManager, Optional, Protocol, Sequence


class ShardExecutor(Protocol):
    """Trains a :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker` on data in shards and sets its
    learned attributes (as :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` does)."""

    def fit_shards(self, ranker: Any, sources: Sequence, valid: Optional[tuple],
                   base_names: Optional[Sequence[str]]) -> Any:
        ...


class SearchExecutor(ShardExecutor, Protocol):
    """A shard executor that also runs the independent fits of a search (optional: ``selection="auto"`` on an
    executor needs it)."""

    def fit_map(self) -> ContextManager[Callable[[Callable[[int], Any], int], list]]:
        ...


def resolve(executor: Any) -> ShardExecutor:
    """``executor`` when it is a shard executor; ValueError, naming the function that makes one, when not."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    raise ValueError(f"executor must be a shard executor (an object with fit_shards), got {executor!r}: "
                     "pyterrier_svmmap.scale.dask.executor_for(x) makes the one of x = None (this process), "
                     "'local', a scheduler address or a dask.distributed.Client")
