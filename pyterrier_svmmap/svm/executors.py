"""Where a structural SVM trains on shards: the extension point that the scale room plugs into.

The cutting-plane loop is data-parallel over whole queries, so the training data may come in shards (files
or arrays) and the per-iteration sums may be computed elsewhere (a Dask cluster). The numeric core does not
know those places: :class:`StructSVMRanker` hands shards to a *shard executor*, an object with
``fit_shards(ranker, sources, valid, base_names)``, and finds the executor for its ``executor`` parameter
(``None``, a ``dask.distributed.Client``, a scheduler address, ``"local"``) through the factories that
packages register under the entry-point group :data:`ENTRY_POINT_GROUP`. This package registers
:func:`pyterrier_svmmap.scale.executors.executor_for`.

An executor may also run the independent fits of a search (``selection="auto"``, whose search runs in the
calling process): then it has ``fit_map()``, a context manager that yields a
:data:`~pyterrier_svmmap.selection.FitMap` (:meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.search_map`).
"""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any, Callable, ContextManager, Optional, Protocol, Sequence

#: entry-point group of the shard-executor factories: callables ``executor -> ShardExecutor | None``
ENTRY_POINT_GROUP = "pyterrier_svmmap.executors"


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
    """The shard executor for an ``executor`` parameter: the object itself when it is one, else the first
    registered factory's answer; ValueError when no factory takes it."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        found = point.load()(executor)
        if found is not None:
            return found
    raise ValueError(f"executor must be None, 'local', a scheduler address or a dask.distributed.Client, got "
                     f"{executor!r} (no shard executor registered under the entry points "
                     f"{ENTRY_POINT_GROUP!r} takes it; is pyterrier-svmmap installed?)")
