"""Where a structural SVM trains on shards: :class:`StructSVMRanker`'s ``executor`` is None (this process) or a
*shard executor*, an object with ``fit_shards(ranker, sources, valid, base_names)`` that the caller makes
(:func:`pyterrier_svmmap.scale.dask.executor_for`). One that also has ``fit_map()``, a context manager yielding a
:data:`~pyterrier_svmmap.selection.FitMap`, runs the independent fits of ``selection="auto"``'s search.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence


class ShardExecutor(Protocol):
    """Trains a :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker` on data in shards and sets its
    learned attributes (as :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` does)."""

    def fit_shards(self, ranker: Any, sources: Sequence, valid: Optional[tuple],
                   base_names: Optional[Sequence[str]]) -> Any:
        ...


def resolve(executor: Any) -> ShardExecutor:
    """``executor`` when it is a shard executor; ValueError, naming the function that makes one, when not."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    raise ValueError(f"executor must be a shard executor (an object with fit_shards), got {executor!r}: "
                     "pyterrier_svmmap.scale.dask.executor_for(x) makes the one of x = None (this process), "
                     "'local', a scheduler address or a dask.distributed.Client")
