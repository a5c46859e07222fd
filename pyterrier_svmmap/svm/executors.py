"""Where a structural SVM trains on shards: a shard executor, an object whose ``fit_shards(ranker, sources, valid,
base_names)`` trains the ranker on data in shards and sets its learned attributes (and whose ``fit_map`` runs the
independent fits of a search)."""
from __future__ import annotations

from typing import Any


def resolve(executor: Any) -> Any:
    """``executor`` when it is a shard executor; ValueError naming the function that makes one otherwise."""
    if callable(getattr(executor, "fit_shards", None)):
        return executor
    raise ValueError(f"executor must be a shard executor (an object with fit_shards), got {executor!r}: "
                     "pyterrier_svmmap.scale.dask.executor_for(x) makes the one of x = None (this process), "
                     "'local', a scheduler address or a dask.distributed.Client")
