"""The shard executor of one process: the shards read (svmlight files) or taken as they are (arrays),
concatenated in order, and trained by :meth:`~pyterrier_svmmap.svm.ranker.StructSVMRanker.fit` with its sums
taken shard by shard, as a cluster takes them."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.io.svmlight import read_svmlight
from pyterrier_svmmap.scale.shards import shard_from_arrays, shard_from_svmlight


def is_path(source) -> bool:
    return isinstance(source, (str, bytes)) or hasattr(source, "__fspath__")


def read_valid(valid, n_functions: int):
    """``valid`` as the ranker takes it: an svmlight file path is read as arrays (raw, labels, offsets, None,
    docnos), ``n_functions`` wide; anything else is returned as it is."""
    if not is_path(valid):
        return valid
    v = read_svmlight(valid, n_features=n_functions)
    return v.grouped(v.features), v.grouped(v.labels), v.offsets, None, v.grouped(v.docids)


def concatenate_sources(sources) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shards (svmlight paths or (raw, labels, offsets) tuples) as one set of arrays, in order, and the
    number of queries of each shard."""
    shards = [shard_from_svmlight(str(s)) if is_path(s) else shard_from_arrays(*s) for s in sources]
    if not shards:
        raise ValueError("no training shards given")
    F = max(sh.raw.shape[1] for sh in shards)
    raw = np.vstack([np.hstack([sh.raw, np.zeros((len(sh.raw), F - sh.raw.shape[1]))]) for sh in shards])
    labels = np.concatenate([sh.labels for sh in shards])
    sizes = np.concatenate([np.diff(sh.offsets) for sh in shards])
    return (raw, labels, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            np.array([sh.n_queries for sh in shards], dtype=np.int64))


class InProcessExecutor:
    """The shard executor (:mod:`~pyterrier_svmmap.svm.executors`) of ``executor=None``."""

    def fit_shards(self, ranker, sources: Sequence, valid, base_names: Optional[Sequence[str]]):
        raw, labels, offsets, sizes = concatenate_sources(sources)
        return ranker.fit(raw, labels, offsets, valid=read_valid(valid, raw.shape[1]), base_names=base_names,
                          shard_queries=sizes)
