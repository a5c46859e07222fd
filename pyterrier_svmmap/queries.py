"""Candidates grouped by query (``raw``, ``labels``, ``offsets``), the operations on them, and :class:`Queries`."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Dict, List, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np

from pyterrier_svmmap.chunks import query_chunks, score_matrix, select_queries


def query_ids(offsets: np.ndarray) -> np.ndarray:
    """Query index (0..Q-1) of every candidate."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def check_ranking_arrays(raw, labels, offsets, what: str = "training") -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``raw`` (n × F, NaN allowed, inf not; float32/float64 kept), ``labels`` and ``offsets`` checked, as arrays."""
    raw = score_matrix(raw)
    if raw.ndim != 2:
        raise ValueError(f"{what} scores must be a 2-d array (candidates × base functions), got shape {raw.shape}")
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or len(offsets) < 1 or not np.issubdtype(offsets.dtype, np.integer) \
            or offsets[0] != 0 or offsets[-1] != len(raw) or (np.diff(offsets) < 0).any():
        raise ValueError(f"{what} offsets must be non-decreasing integers from 0 to the number of candidates "
                         f"({len(raw)}), one more than the number of queries")
    offsets = offsets.astype(np.int64)
    for chunk in query_chunks(raw, offsets):
        bad = np.argwhere(np.isinf(chunk.values))
        if len(bad):
            raise ValueError(f"{what} score of base function {bad[0, 1]} is infinite for candidate "
                             f"{chunk.start + bad[0, 0]}: scores must be finite (NaN marks a candidate a base "
                             "function did not retrieve)")
    if labels is not None:
        labels = np.asarray(labels, dtype=float)
        if labels.shape != (len(raw),) or not np.isfinite(labels).all():
            raise ValueError(f"{what} labels must be {len(raw)} finite numbers, one per candidate")
    return raw, labels, offsets


def usable_queries(labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query, whether it has a relevant and a non-relevant candidate (the others form no ranking constraint)."""
    n_rel = np.bincount(query_ids(offsets), weights=labels > 0, minlength=len(offsets) - 1)
    return (n_rel > 0) & (n_rel < np.diff(offsets))


def subset_queries(raw, labels, offsets, keep: np.ndarray, n_relevant=None):
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    keep = np.asarray(keep, dtype=bool)
    rows = np.repeat(keep, sizes)
    new_offsets = np.concatenate([[0], np.cumsum(sizes[keep])]).astype(np.int64)
    scores = select_queries(score_matrix(raw), offsets, keep) if raw is not None else None
    return scores, None if labels is None else labels[rows], new_offsets, \
        None if n_relevant is None else np.asarray(n_relevant)[keep]


def shard_sizes(n_queries: int, queries_per_shard: int) -> np.ndarray:
    """Queries per shard of ``queries_per_shard`` (the last may be smaller)."""
    return np.diff(np.r_[np.arange(0, n_queries, queries_per_shard), n_queries]).astype(np.int64)


def usable_shard_sizes(ok: np.ndarray, shard_queries: Optional[Sequence[int]], queries_per_shard: int) -> np.ndarray:
    """Usable queries per shard (shards without any dropped), from the given queries per shard
    (``shard_queries``, or blocks of ``queries_per_shard``): the shards a cluster would form and filter."""
    n = len(ok)
    sizes = (np.asarray(shard_queries, dtype=np.int64) if shard_queries is not None
             else shard_sizes(n, queries_per_shard))
    if sizes.sum() != n or (sizes < 0).any():
        raise ValueError(f"shard_queries must be non-negative and sum to the {n} queries, got {list(sizes)}")
    cum = np.r_[0, np.cumsum(ok, dtype=np.int64)]
    ends = np.cumsum(sizes)
    usable = cum[ends] - cum[ends - sizes]
    return usable[usable > 0]


def shard_rows(offsets: np.ndarray, sizes: Sequence[int]) -> List[Tuple[int, int, np.ndarray]]:
    """Consecutive shards of ``sizes[i]`` whole queries each: their rows ``lo:hi`` and offsets from 0."""
    offsets = np.asarray(offsets, dtype=np.int64)
    bounds = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])
    return [(int(offsets[a]), int(offsets[b]), offsets[a:b + 1] - offsets[a]) for a, b in zip(bounds[:-1], bounds[1:])]


def split_queries(raw, labels, offsets, sizes: Sequence[int]) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The arrays cut into consecutive shards of ``sizes[i]`` whole queries each (views, re-offset)."""
    return [(raw[lo:hi], labels[lo:hi], offs) for lo, hi, offs in shard_rows(offsets, sizes)]


@dataclass
class Queries:
    """Candidates of whole queries, in query order: ``raw`` (NaN = not retrieved), ``labels`` (None to score only),
    ``offsets``, and where known ``qids``, ``n_relevant`` (AP's denominator), ``docnos`` (the last tie key) and
    ``reference`` (the first stage's column)."""
    raw: np.ndarray
    labels: Optional[np.ndarray]
    offsets: np.ndarray
    qids: Optional[np.ndarray] = None
    n_relevant: Optional[np.ndarray] = None
    docnos: Optional[np.ndarray] = None
    reference: Optional[int] = dataclasses.field(default=None, kw_only=True)

    @classmethod
    def from_arrays(cls, raw, labels, offsets, qids=None, n_relevant=None, docnos=None) -> "Queries":
        """Queries from array-likes (``qids`` 0 … Q − 1 when not given)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        return cls(np.asarray(raw, dtype=float), None if labels is None else np.asarray(labels, dtype=float),
                   offsets, np.arange(len(offsets) - 1) if qids is None else np.asarray(qids), n_relevant, docnos)

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_functions(self) -> int:
        return self.raw.shape[1]

    def usable(self) -> np.ndarray:
        return usable_queries(self.labels, self.offsets)

    def subset(self, keep: np.ndarray) -> "Queries":
        """The queries where ``keep`` is True, re-offset, of the same class."""
        rows = np.repeat(keep, np.diff(self.offsets))
        raw, labels, offsets, n_rel = subset_queries(self.raw, self.labels, self.offsets, keep, self.n_relevant)
        return dataclasses.replace(self, raw=raw, labels=labels, offsets=offsets,
                                   qids=None if self.qids is None else self.qids[keep], n_relevant=n_rel,
                                   docnos=None if self.docnos is None else np.asarray(self.docnos)[rows])

    def widened(self, n_functions: int) -> "Queries":
        """The queries with ``raw`` padded by zero columns to ``n_functions`` (svmlight's absent features)."""
        if self.raw.shape[1] >= n_functions:
            return self
        pad = np.zeros((len(self.raw), n_functions - self.raw.shape[1]))
        return dataclasses.replace(self, raw=np.hstack([self.raw, pad]))

    @classmethod
    def concatenate(cls, parts: Sequence["Queries"]) -> "Queries":
        """The parts one after another, as wide as the widest (fields kept when every part has them)."""
        if not parts:
            raise ValueError("no queries to concatenate")
        F = max(p.n_functions for p in parts)
        parts = [p.widened(F) for p in parts]
        sizes = np.concatenate([np.diff(p.offsets) for p in parts])

        def joined(name):
            values = [getattr(p, name) for p in parts]
            return None if any(v is None for v in values) else np.concatenate([np.asarray(v) for v in values])
        references = {p.reference for p in parts}
        return cls(np.vstack([p.raw for p in parts]), joined("labels"),
                   np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), joined("qids"), joined("n_relevant"),
                   joined("docnos"), reference=references.pop() if len(references) == 1 else None)


def as_queries(valid) -> Optional["Queries"]:
    """The rankers' ``valid`` argument as :class:`Queries`: Queries, None or ``(raw, labels, offsets, ...)``."""
    if valid is None or isinstance(valid, Queries):
        return valid
    if not isinstance(valid, (tuple, list)) or len(valid) not in (3, 4, 5):
        raise ValueError("valid must be Queries, (raw, labels, offsets), (raw, labels, offsets, n_relevant) or "
                         "(raw, labels, offsets, n_relevant, docnos)")
    return Queries(*valid[:3], None, *valid[3:])                 # no qids; n_relevant and docnos where given


@runtime_checkable
class QueryRanker(Protocol):
    """What every array-level learner does: train on :class:`Queries`, score candidates, give its fitted state."""

    def fit_queries(self, train: Queries, valid: Optional[Queries] = None) -> "QueryRanker":
        """Train on ``train`` (labels required); returns self."""

    def decision_function(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """A score per candidate of ``raw`` (n × F, queries delimited by ``offsets``)."""

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        """The fitted state: JSON-able metadata and named arrays."""
