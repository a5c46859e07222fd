"""Reading svmlight files larger than memory into memory maps (docs/user_guide.md)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Union

import numpy as np

from pyterrier_svmmap.io.svmlight import (MAX_FEATURES, RankingData, SvmlightError, check_queries_in_one_file,
                                          check_width_arguments, data_files, group_by_query, parsed_chunks)

#: bytes read from a file at a time
CHUNK_BYTES = 1 << 26
#: bytes of the dense rows built in memory at a time (a wide sparse file's rows are written in batches)
BATCH_BYTES = 1 << 26


class _RowWriter:
    """Dense float64 rows appended to a raw file, as wide as the widest row so far."""

    def __init__(self, path: Path, width: int):
        self.path, self.width, self.rows = path, width, 0
        self.file = open(path, "wb")

    def append(self, n_pairs: np.ndarray, idx: np.ndarray, val: np.ndarray) -> None:
        """Append one row per entry of ``n_pairs``, its pairs (1-based ``idx``, ``val``) in order."""
        n_rows = len(n_pairs)
        need = int(idx.max()) if len(idx) else 0
        if need > self.width:
            self._widen(need)
        ends = np.concatenate([[0], np.cumsum(n_pairs)])
        batch = max(1, BATCH_BYTES // (8 * max(self.width, 1)))
        for lo in range(0, n_rows, batch):
            hi = min(n_rows, lo + batch)
            rows = np.zeros((hi - lo, self.width))
            p0, p1 = ends[lo], ends[hi]
            rows[np.repeat(np.arange(hi - lo), n_pairs[lo:hi]), idx[p0:p1] - 1] = val[p0:p1]
            rows.tofile(self.file)
        self.rows += n_rows

    def _widen(self, width: int) -> None:
        """Rewrite the rows written so far ``width`` wide."""
        if self.rows:
            self.file.close()
            wider = self.path.with_suffix(".wider")
            old = np.memmap(self.path, dtype=np.float64, mode="r", shape=(self.rows, self.width))
            batch = max(1, BATCH_BYTES // (8 * width))
            with open(wider, "wb") as out:
                for lo in range(0, self.rows, batch):
                    rows = np.zeros((min(self.rows, lo + batch) - lo, width))
                    rows[:, :self.width] = old[lo:lo + batch]
                    rows.tofile(out)
            del old
            wider.replace(self.path)
            self.file = open(self.path, "ab")
        self.width = width

    def close(self) -> np.ndarray:
        """The rows written as a read-only memory map."""
        self.file.close()
        if self.rows == 0 or self.width == 0:
            return np.zeros((self.rows, self.width))
        return np.memmap(self.path, dtype=np.float64, mode="r", shape=(self.rows, self.width))


class _Column:
    """A 1-d array appended to a raw file chunk by chunk."""

    def __init__(self, path: Path, dtype):
        self.path, self.dtype, self.file, self.n = path, np.dtype(dtype), open(path, "wb"), 0

    def append(self, values: np.ndarray) -> None:
        np.asarray(values, dtype=self.dtype).tofile(self.file)
        self.n += len(values)

    def values(self, in_memory: bool = False) -> np.ndarray:
        if in_memory or self.n == 0:
            return np.fromfile(self.path, dtype=self.dtype)
        return np.memmap(self.path, dtype=self.dtype, mode="r", shape=(self.n,))


def read_svmlight_mapped(paths: Union[str, Path, Sequence[Union[str, Path]]], folder: Union[str, Path],
                         n_features: Optional[int] = None, max_features: int = MAX_FEATURES,
                         chunk_bytes: int = CHUNK_BYTES) -> RankingData:
    """:func:`read_svmlight` with the features in memory maps in ``folder`` (the caller removes it): the same lines,
    values, checks and errors but the memory check, grouped by query (``labels`` in memory, no comments)."""
    width_rule = check_width_arguments(n_features, max_features)
    files = data_files(paths)
    folder = Path(folder)
    rows = _RowWriter(folder / "features.f8", 0 if n_features is None else int(n_features))
    labels, qids, lines = _Column(folder / "labels.f8", np.float64), _Column(folder / "qids.i8", np.int64), \
        _Column(folder / "lines.i8", np.int64)
    source_lines: List[int] = []
    runs, last = [], None           # (qid, first row, first line) of each run of equal qids; the last qid read
    try:
        for path in files:
            before = rows.rows
            for parsed in parsed_chunks(path, width_rule, chunk_bytes, comments=False):
                q = parsed[1]           # a run continues across chunks, not across files
                new = np.r_[rows.rows == before or q[0] != last, q[1:] != q[:-1]]
                runs.append(np.column_stack([q[new], rows.rows + np.flatnonzero(new), parsed[6][new]]))
                last = q[-1]
                rows.append(*parsed[2:5])
                for column, values in zip((labels, qids, lines), parsed[:2] + parsed[6:]):
                    column.append(values)
            source_lines.append(rows.rows - before)
    finally:
        for column in (labels, qids, lines):
            column.file.close()
        features = rows.close()
    label_values, qid_values, line_values = labels.values(in_memory=True), qids.values(), lines.values()
    if rows.rows == 0:
        raise SvmlightError(f"{', '.join(map(str, files))}: no data lines (empty file?)")
    run_qids, starts, run_lines = np.concatenate(runs).T
    check_queries_in_one_file(files, run_qids, np.searchsorted(np.cumsum(source_lines), starts, side="right"),
                              run_lines)
    if len(np.unique(run_qids)) == len(run_qids):           # one run a query: grouped as the lines are
        offsets, query_ids = np.r_[starts, rows.rows].astype(np.int64), run_qids
    else:
        features, label_values, qid_values, line_values, offsets, query_ids = _regroup(
            folder, run_qids, np.diff(np.r_[starts, rows.rows]), features, label_values, qid_values, line_values)
    return RankingData(features=features, labels=label_values, qids=qid_values, comments=None, docids=None,
                       order=None, offsets=offsets, query_ids=query_ids, sources=[str(f) for f in files],
                       source_lines=source_lines, line_numbers=line_values)


def _regroup(folder: Path, run_qids: np.ndarray, run_lengths: np.ndarray, features, labels, qids, lines):
    """The lines grouped by query: features into a second map (the first removed), the other columns permuted."""
    order, offsets, query_ids = group_by_query(run_qids, run_lengths)
    if isinstance(features, np.memmap):
        path = folder / "grouped.f8"
        batch = max(1, BATCH_BYTES // (8 * features.shape[1]))
        with open(path, "wb") as out:
            for lo in range(0, len(order), batch):
                rows = order[lo:lo + batch]
                by_position = np.argsort(rows)                  # read the map's rows in increasing order
                grouped = np.empty((len(rows), features.shape[1]))
                grouped[by_position] = features[rows[by_position]]
                grouped.tofile(out)
        shape = features.shape
        del features
        (folder / "features.f8").unlink()
        features = np.memmap(path, dtype=np.float64, mode="r", shape=shape)
    return features, labels[order], np.asarray(qids)[order], np.asarray(lines)[order], offsets, query_ids
