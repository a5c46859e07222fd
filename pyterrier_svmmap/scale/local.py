"""The shard executor of one process: the shards (svmlight files or arrays) concatenated in order and trained by
:meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` with its sums taken shard by shard, as a cluster's."""
from __future__ import annotations

import contextlib
from typing import Optional, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.io.svmlight import read_svmlight
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.scale.shards import shard_from_arrays, shard_from_svmlight


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
