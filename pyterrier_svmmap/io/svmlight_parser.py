"""The svmlight parser: numba's for lines it can prove correctly rounded, else Python's line by line, which
judges validity (:class:`BadLine`); the same bits either way."""
from __future__ import annotations

from array import array
from typing import Optional

import numpy as np

from pyterrier_svmmap._jit import load


class BadLine(Exception):
    """A refused line (0-based in the chunk) and, when its only fault is a feature index above the limit, ``index``."""

    def __init__(self, line: int, index: Optional[float] = None):
        super().__init__(line, index)
        self.line, self.index = line, index


def parse_chunk(data: bytes, limit: int, comments: bool = True, compiled: bool = True):
    """The numbers of the data lines of ``data`` and their 0-based line numbers; None without data lines."""
    if not compiled:
        return _parse_lines(data, limit, comments)
    k = load("io._svmlight_kernels")
    status, labels, qids, n_pairs, idx, val, hash_pos, line_end, line_no = \
        k.parse_lines(np.frombuffer(data, dtype=np.uint8), limit, k._POW10)
    if status:
        return _parse_lines(data, limit, comments)
    if len(labels) == 0:
        return None
    text = None
    if comments:
        rows = np.flatnonzero(hash_pos >= 0)
        text = np.full(len(labels), "", dtype=object)
        for r, p, e in zip(rows.tolist(), hash_pos[rows].tolist(), line_end[rows].tolist()):
            text[r] = data[p + 1:e].strip().decode("utf-8", "replace")
    return labels, qids, n_pairs, idx, val, text, line_no


def _parse_lines(data: bytes, limit: int, comments: bool = True):
    """:func:`parse_chunk` line by line with ``float()``, the judge of what is valid: finite numbers, integer qids and
    indices, indices from 1, increasing and ≤ ``limit``."""
    rows, counts, flat, text, bad = [], [], array("d"), [], None
    for no, line in enumerate(data.split(b"\n")):
        body, _, comment = line.partition(b"#")
        tok = body.split()
        if not tok:
            continue
        numbers = body.replace(b"qid:", b" ", 1).replace(b":", b" ").split()
        try:
            if not (len(tok) > 1 and tok[1][:4] == b"qid:" and body.count(b"qid:") == 1 and b"_" not in body
                    and body.count(b":") == len(tok) - 1 and len(numbers) == 2 * len(tok) - 2):
                raise ValueError(no)
            flat.extend(map(float, numbers))
        except ValueError:
            bad = no
            break
        rows.append(no)
        counts.append(len(tok) - 2)
        if comments:
            text.append(comment.strip().decode("utf-8", "replace"))
    if not rows:
        if bad is None:
            return None
        raise BadLine(bad)
    n_pairs = np.array(counts, dtype=np.int64)
    starts = np.cumsum(2 + 2 * n_pairs) - (2 + 2 * n_pairs)
    values = np.frombuffer(flat)[:starts[-1] + 2 + 2 * n_pairs[-1]]      # a line that failed may have added some
    labels, qids = values[starts], values[starts + 1]
    pair = np.ones(len(values), dtype=bool)
    pair[starts] = pair[starts + 1] = False
    pairs = values[pair]
    idx, val = pairs[0::2], pairs[1::2]
    row = np.repeat(np.arange(len(rows)), n_pairs)
    wrong = ~np.isfinite(labels) | ~np.isfinite(qids) | (qids != np.round(qids))
    wrong_pair = (idx != np.round(idx)) | (idx < 1) | ~np.isfinite(val)
    wrong_pair[1:] |= (np.diff(idx) <= 0) & (row[1:] == row[:-1])
    wrong[row[wrong_pair]] = True
    over = idx > limit          # an index may be +inf
    faulty = np.flatnonzero(wrong | np.isin(np.arange(len(rows)), row[over]))
    if len(faulty):
        r = faulty[0]
        raise BadLine(rows[r], None if wrong[r] else float(idx[over & (row == r)][0]))
    if bad is not None:
        raise BadLine(bad)
    return (labels, qids.astype(np.int64), n_pairs, idx.astype(np.int64), val,
            np.array(text, dtype=object) if comments else None, np.array(rows, dtype=np.int64))
