"""Scores read a block of whole queries at a time, so that a float32 or float64 matrix, or a memory map of one, is
never converted or copied whole.

The numeric core reads the (candidates × base functions) scores through :func:`query_blocks` wherever it needs
them query by query (the encoder's statistics, thresholds and φ, the base functions' APs): each block is a
C-contiguous float64 array of the candidates of consecutive whole queries, about :data:`BLOCK_BYTES` of them (at
least one query). What is computed per query does not depend on where the blocks are cut, and what is summed
over queries is summed in query order, so the results are those of the whole matrix at once (the tests cut the
blocks at every query).

:class:`QueryRows` stands for the rows of some of a matrix's queries (the training queries that can form ranking
constraints, a cross-validation fold) without copying them; :func:`select_queries` gives one for float32 data,
memory maps and matrices above :data:`COPY_LIMIT`, and a copy of the rows otherwise.

When the scores are a ``numpy.memmap`` opened read-only (``"r"``) or shared (``"r+"``, ``"w+"``), the pages of a
block are given back (``madvise(MADV_DONTNEED)``) once the block has been read: a pass over a file larger than
memory holds one block of it in the process, not the file. The file and its contents are untouched (its pages
stay in the system's page cache); copy-on-write maps (``"c"``) are left alone.
"""
from __future__ import annotations

import mmap
from typing import Iterator, NamedTuple, Optional, Tuple

import numpy as np

#: the float64 bytes of a block's scores (at least one query)
BLOCK_BYTES = 1 << 26
#: a float64 in-memory matrix above this many bytes is selected lazily (:class:`QueryRows`), not copied
COPY_LIMIT = 1 << 28
#: the dtypes kept as they are: other scores are converted to float64 once
KEPT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Block(NamedTuple):
    """Consecutive whole queries of a score matrix: the first query's index (``first``), the first row's
    (``start``), the queries' boundaries from 0 (``offsets``) and their scores, C-contiguous float64 (``values``:
    read-only, it may be a view of the caller's array)."""
    first: int
    start: int
    offsets: np.ndarray
    values: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    @property
    def stop(self) -> int:
        """One past the block's last row."""
        return self.start + len(self.values)


def score_matrix(raw):
    """``raw`` as the numeric core reads it: a :class:`QueryRows`, or a float32 or float64 ndarray (a memory map
    stays one) as it is; anything else is converted to a float64 array."""
    if isinstance(raw, QueryRows):
        return raw
    if isinstance(raw, np.ndarray) and raw.dtype in KEPT_DTYPES:
        return raw
    array = np.asarray(raw)
    return array if array.dtype in KEPT_DTYPES else np.asarray(array, dtype=np.float64)


def block_bounds(offsets: np.ndarray, n_funcs: int, max_bytes: Optional[int] = None) -> np.ndarray:
    """Query indices 0 = q₀ < q₁ < … < q_k = Q cutting the queries of ``offsets`` into blocks of at most
    ``max_bytes`` (default :data:`BLOCK_BYTES`) of float64 scores of ``n_funcs`` functions, a query never cut
    (a block of one query may be larger)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n_queries = len(offsets) - 1
    rows = max(1, int(max_bytes or BLOCK_BYTES) // (8 * max(1, int(n_funcs))))
    bounds = [0]
    while bounds[-1] < n_queries:
        q = bounds[-1]
        end = int(np.searchsorted(offsets, offsets[q] + rows, side="right")) - 1
        bounds.append(min(max(end, q + 1), n_queries))
    return np.asarray(bounds, dtype=np.int64)


def query_blocks(raw, offsets: np.ndarray, max_bytes: Optional[int] = None) -> Iterator[Block]:
    """The blocks of whole queries of ``raw`` (a score matrix, or :class:`QueryRows`) grouped by ``offsets``, in
    order (see the module doc); none when there is no query."""
    if isinstance(raw, QueryRows):
        yield from raw.blocks(offsets, max_bytes)
        return
    offsets = np.asarray(offsets, dtype=np.int64)
    bounds = block_bounds(offsets, raw.shape[1], max_bytes)
    for q0, q1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        r0, r1 = int(offsets[q0]), int(offsets[q1])
        part = raw[r0:r1]
        try:
            yield Block(q0, r0, offsets[q0:q1 + 1] - r0, np.ascontiguousarray(part, dtype=np.float64))
        finally:
            release(part)


def first_infinite(raw, offsets: Optional[np.ndarray] = None) -> Optional[Tuple[int, int]]:
    """(row, column) of the first infinite score of ``raw`` in row order, or None; read block by block
    (``offsets``: query boundaries, default one query per block of rows)."""
    if offsets is None:
        offsets = row_offsets(len(raw), raw.shape[1])
    for block in query_blocks(raw, offsets):
        bad = np.isinf(block.values)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            return block.start + int(r), int(c)
    return None


def row_offsets(n_rows: int, n_funcs: int) -> np.ndarray:
    """Boundaries of pseudo-queries of one block's rows each, for a pass that needs no queries (``n_funcs``:
    the matrix's columns)."""
    rows = max(1, BLOCK_BYTES // (8 * max(1, n_funcs)))
    return np.r_[np.arange(0, n_rows, rows), n_rows].astype(np.int64)


def select_queries(raw, offsets: np.ndarray, keep: np.ndarray):
    """The rows of the queries where ``keep`` is True: copied (``raw[rows]``) from an in-memory float64 matrix of
    at most :data:`COPY_LIMIT` bytes, else a :class:`QueryRows` that reads them when needed."""
    keep = np.asarray(keep, dtype=bool)
    if isinstance(raw, QueryRows):
        return raw.select(keep)
    if type(raw) is np.ndarray and raw.dtype == np.float64 and raw.nbytes <= COPY_LIMIT:
        return raw[np.repeat(keep, np.diff(offsets))]
    return QueryRows(raw, offsets, np.flatnonzero(keep))


class QueryRows:
    """The rows of some whole queries of a score matrix, in order, without a copy.

    It has the matrix's ``shape`` (its rows), ``ndim``, ``len`` and a float64 ``dtype``; :func:`query_blocks`
    reads it block by block, ``rows[:, j]`` gathers one column, and ``numpy.asarray(rows)`` (or any other
    indexing) makes the float64 copy, for code that needs the rows as one array.

    Parameters
    ----------
    base : numpy.ndarray
        The score matrix (any dtype the numeric core reads; a memory map stays one).
    base_offsets : numpy.ndarray
        Its query boundaries.
    queries : numpy.ndarray
        The indices of the queries kept, increasing.
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, base, base_offsets: np.ndarray, queries: np.ndarray):
        self.base = base
        self.base_offsets = np.asarray(base_offsets, dtype=np.int64)
        self.queries = np.asarray(queries, dtype=np.int64)
        sizes = np.diff(self.base_offsets)[self.queries]
        #: the kept queries' boundaries in the rows of this object
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def shape(self) -> Tuple[int, int]:
        return int(self.offsets[-1]), int(self.base.shape[1])

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    def __len__(self) -> int:
        return self.shape[0]

    def select(self, keep: np.ndarray) -> "QueryRows":
        """The kept queries where ``keep`` is True."""
        return QueryRows(self.base, self.base_offsets, self.queries[np.asarray(keep, dtype=bool)])

    def _base_rows(self, q0: int, q1: int) -> np.ndarray:
        """The base matrix's rows of kept queries q0 … q1 − 1, in order."""
        starts = self.base_offsets[self.queries[q0:q1]]
        sizes = self.offsets[q0 + 1:q1 + 1] - self.offsets[q0:q1]
        n = int(sizes.sum())
        return np.repeat(starts - self.offsets[q0:q1], sizes) + np.arange(self.offsets[q0], self.offsets[q0] + n)

    def blocks(self, offsets: np.ndarray, max_bytes: Optional[int] = None) -> Iterator[Block]:
        """:func:`query_blocks` of these rows (``offsets``: their query boundaries, :attr:`offsets`)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        if len(offsets) != len(self.offsets) or int(offsets[-1]) != int(self.offsets[-1]):
            raise ValueError("these offsets do not delimit the queries of these rows")
        bounds = block_bounds(offsets, self.shape[1], max_bytes)
        for q0, q1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            rows = self._base_rows(q0, q1)
            r0 = int(self.offsets[q0])
            try:
                yield Block(q0, r0, offsets[q0:q1 + 1] - r0, np.ascontiguousarray(self.base[rows], dtype=np.float64))
            finally:
                if len(rows):
                    release(self.base[int(rows[0]):int(rows[-1]) + 1])

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of the rows as float64, gathered block by block."""
        out = np.empty(len(self))
        for block in self.blocks(self.offsets):
            out[block.start:block.stop] = block.values[:, j]
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.empty(self.shape)
        for block in self.blocks(self.offsets):
            out[block.start:block.stop] = block.values
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], slice) and key[0] == slice(None) \
                and isinstance(key[1], (int, np.integer)):
            return self.column(int(key[1]))
        return np.asarray(self)[key]


# ---------------------------------------------------------------------------------------------
# giving back the pages of a memory map
# ---------------------------------------------------------------------------------------------
#: the modes of numpy.memmap whose pages may be dropped: the data is the file's (not a private copy)
_SHARED_MODES = ("r", "r+", "w+")


def _shared_mapping(array) -> Optional[mmap.mmap]:
    """The mmap under ``array`` when it is a numpy.memmap (or a view of one) opened read-only or shared."""
    obj = array
    while obj is not None:
        if isinstance(obj, np.memmap):
            mm = getattr(obj, "_mmap", None)
            return mm if isinstance(mm, mmap.mmap) and getattr(obj, "mode", None) in _SHARED_MODES else None
        obj = getattr(obj, "base", None)
    return None


def release(part: np.ndarray) -> None:
    """Drop the pages of ``part`` (C-contiguous rows of a shared or read-only memory map) from this process:
    the memory is read again from the page cache or the file when next touched. Does nothing for other arrays
    or where the system cannot."""
    if not isinstance(part, np.ndarray) or not part.nbytes or not part.flags.c_contiguous \
            or not hasattr(mmap, "MADV_DONTNEED"):
        return
    mm = _shared_mapping(part)
    if mm is None:
        return
    try:
        base = np.frombuffer(mm, dtype=np.uint8).__array_interface__["data"][0]
        start = part.__array_interface__["data"][0] - base
        first = start - start % mmap.PAGESIZE
        mm.madvise(mmap.MADV_DONTNEED, first, start + part.nbytes - first)
    except (ValueError, OSError, TypeError):
        pass
