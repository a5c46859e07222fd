"""Scores read a chunk of whole queries at a time, so that no score matrix (or memory map) is converted or copied
whole; per-query results do not depend on the cut, and a memory map's pages are given back (:func:`release`)."""
from __future__ import annotations

import mmap
from typing import Iterator, List, NamedTuple, Tuple

import numpy as np

#: the float64 bytes of a chunk's scores (at least one query)
CHUNK_BYTES = 1 << 26
#: a float64 in-memory matrix above this many bytes is selected lazily (:class:`QueryRows`), not copied
COPY_LIMIT = 1 << 28
#: the dtypes kept as they are: other scores are converted to float64 once
KEPT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Chunk(NamedTuple):
    """Consecutive whole queries of a score matrix: first query, first row, boundaries from 0, float64 scores."""
    first: int
    start: int
    offsets: np.ndarray
    values: np.ndarray

    @property
    def stop(self) -> int:
        return self.start + len(self.values)


def score_matrix(raw):
    """``raw`` as the numeric core reads it: :class:`QueryRows` or a float32/float64 ndarray as it is, else float64."""
    if isinstance(raw, QueryRows) or isinstance(raw, np.ndarray) and raw.dtype in KEPT_DTYPES:
        return raw
    array = np.asarray(raw)
    return array if array.dtype in KEPT_DTYPES else np.asarray(array, dtype=np.float64)


def _chunk_rows(n_funcs: int) -> int:
    """The rows of :data:`CHUNK_BYTES` of float64 scores (at least one)."""
    return max(1, CHUNK_BYTES // (8 * max(1, int(n_funcs))))


def _chunk_queries(offsets: np.ndarray, n_funcs: int) -> List[Tuple[int, int]]:
    """(first, end) query of consecutive chunks of at most :func:`_chunk_rows` rows, a query never cut."""
    rows, n_queries, pairs, q = _chunk_rows(n_funcs), len(offsets) - 1, [], 0
    while q < n_queries:
        end = min(max(int(np.searchsorted(offsets, offsets[q] + rows, side="right")) - 1, q + 1), n_queries)
        pairs.append((q, end))
        q = end
    return pairs


def query_chunks(raw, offsets: np.ndarray) -> Iterator[Chunk]:
    """The :class:`Chunk` of ``raw`` (n × F, queries delimited by ``offsets``), in order."""
    if isinstance(raw, QueryRows):
        yield from raw.chunks(offsets)
        return
    offsets = np.asarray(offsets, dtype=np.int64)
    for q0, q1 in _chunk_queries(offsets, raw.shape[1]):
        r0, r1 = int(offsets[q0]), int(offsets[q1])
        part = raw[r0:r1]
        try:
            yield Chunk(q0, r0, offsets[q0:q1 + 1] - r0, np.ascontiguousarray(part, dtype=np.float64))
        finally:
            release(part)


def row_offsets(n_rows: int, n_funcs: int) -> np.ndarray:
    """Boundaries of pseudo-queries of one chunk's rows each, for a pass that needs no queries."""
    return np.r_[np.arange(0, n_rows, _chunk_rows(n_funcs)), n_rows].astype(np.int64)


def select_queries(raw, offsets: np.ndarray, keep: np.ndarray):
    """The rows of the queries where ``keep`` is True: a copy of a small float64 matrix, else :class:`QueryRows`."""
    keep = np.asarray(keep, dtype=bool)
    if isinstance(raw, QueryRows):
        return raw.select(keep)
    if type(raw) is np.ndarray and raw.dtype == np.float64 and raw.nbytes <= COPY_LIMIT:
        return raw[np.repeat(keep, np.diff(offsets))]
    return QueryRows(raw, offsets, np.flatnonzero(keep))


class QueryRows:
    """The rows of some queries of ``base`` without a copy, read chunk by chunk (``numpy.asarray`` copies)."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, base, base_offsets: np.ndarray, queries: np.ndarray):
        self.base = base
        self.base_offsets = np.asarray(base_offsets, dtype=np.int64)
        self.queries = np.asarray(queries, dtype=np.int64)
        #: the kept queries' boundaries in the rows of this object
        self.offsets = np.concatenate([[0], np.cumsum(np.diff(self.base_offsets)[self.queries])]).astype(np.int64)

    @property
    def shape(self) -> Tuple[int, int]:
        return int(self.offsets[-1]), int(self.base.shape[1])

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    def __len__(self) -> int:
        return self.shape[0]

    def select(self, keep: np.ndarray) -> "QueryRows":
        return QueryRows(self.base, self.base_offsets, self.queries[np.asarray(keep, dtype=bool)])

    def chunks(self, offsets: np.ndarray) -> Iterator[Chunk]:
        offsets = np.asarray(offsets, dtype=np.int64)
        if len(offsets) != len(self.offsets) or int(offsets[-1]) != int(self.offsets[-1]):
            raise ValueError("these offsets do not delimit the queries of these rows")
        for q0, q1 in _chunk_queries(offsets, self.shape[1]):
            sizes = self.offsets[q0 + 1:q1 + 1] - self.offsets[q0:q1]
            r0 = int(self.offsets[q0])
            rows = np.repeat(self.base_offsets[self.queries[q0:q1]] - self.offsets[q0:q1], sizes) \
                + np.arange(r0, r0 + int(sizes.sum()))
            try:
                yield Chunk(q0, r0, offsets[q0:q1 + 1] - r0, np.ascontiguousarray(self.base[rows], dtype=np.float64))
            finally:
                if len(rows):
                    release(self.base[int(rows[0]):int(rows[-1]) + 1])

    def column(self, j) -> np.ndarray:
        """Column ``j`` (``slice(None)``: every column), gathered chunk by chunk."""
        out = np.empty(self.shape[:2 if j == slice(None) else 1])
        for chunk in self.chunks(self.offsets):
            out[chunk.start:chunk.stop] = chunk.values[:, j]
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.column(slice(None))
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], slice) and key[0] == slice(None) \
                and isinstance(key[1], (int, np.integer)):
            return self.column(int(key[1]))
        return np.asarray(self)[key]


def release(part: np.ndarray) -> None:
    """Drop the pages of ``part`` (C-contiguous rows of a shared or read-only memmap) from this process."""
    if not isinstance(part, np.ndarray) or not part.nbytes or not part.flags.c_contiguous \
            or not hasattr(mmap, "MADV_DONTNEED"):
        return
    obj = part
    while obj is not None and not isinstance(obj, np.memmap):
        obj = getattr(obj, "base", None)
    mm = getattr(obj, "_mmap", None)
    if not isinstance(mm, mmap.mmap) or getattr(obj, "mode", None) not in ("r", "r+", "w+"):
        return
    try:
        base = np.frombuffer(mm, dtype=np.uint8).__array_interface__["data"][0]
        start = part.__array_interface__["data"][0] - base
        first = start - start % mmap.PAGESIZE
        mm.madvise(mmap.MADV_DONTNEED, first, start + part.nbytes - first)
    except (ValueError, OSError, TypeError):
        pass
