"""Where a structural SVM trains on shards: a shard executor's ``fit_shards`` (and ``fit_map`` for the search)."""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence


class ShardExecutor(Protocol):
    """Trains a StructSVMRanker on data in shards and sets its learned attributes."""

    def fit_shards(self, ranker: Any, sources: Sequence, valid: Optional[tuple],
                   base_names: Optional[Sequence[str]]) -> Any:
        ...


def resolve(executor: Any) -> ShardExecutor:
    """``executor`` when it is a shard executor; ValueError naming the function that makes one otherwise."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    raise ValueError(f"executor must be a shard executor (an object with fit_shards), got {executor!r}: "
                     "pyterrier_svmmap.scale.dask.executor_for(x) makes the one of x = None (this process), "
                     "'local', a scheduler address or a dask.distributed.Client")
