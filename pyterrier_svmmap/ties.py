"""One tie policy for every learner (docs/user_guide.md#ties), written into the scores as float32 by
:func:`break_ties` so that every evaluator sees one ranking."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.measures import rank_within_queries
from pyterrier_svmmap.string_codes import sorted_string_codes

#: the integer of each float's width
_INT = {np.float64: np.int64, np.float32: np.int32}


def float_to_ordered(v: np.ndarray, dtype=np.float64) -> np.ndarray:
    """``v`` rounded to ``dtype`` (float64 or float32) → int64 in the same order, consecutive floats consecutive."""
    bits = np.ascontiguousarray(v, dtype=np.float64).astype(dtype, copy=False).view(_INT[dtype])
    i = bits.astype(np.int64)
    return np.where(i >= 0, i, np.iinfo(bits.dtype).min - i)


def ordered_to_float(o: np.ndarray, dtype=np.float64) -> np.ndarray:
    """The inverse of :func:`float_to_ordered`, as float64 values (exactly representable in ``dtype``)."""
    o, itype = np.asarray(o, dtype=np.int64), _INT[dtype]
    return np.where(o >= 0, o, np.iinfo(itype).min - o).astype(itype).view(dtype).astype(np.float64)


def tie_base_order(offsets: np.ndarray, secondary: Optional[np.ndarray] = None,
                   docnos: Optional[np.ndarray] = None, docno_codes: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`tie_order` without the scores, for ranking the same rows under many scores."""
    return tie_order(np.zeros(int(np.asarray(offsets)[-1])), offsets, secondary, docnos, docno_codes)


def tie_order(scores: np.ndarray, offsets: np.ndarray, secondary: Optional[np.ndarray] = None,
              docnos: Optional[np.ndarray] = None, docno_codes: Optional[np.ndarray] = None,
              base_order: Optional[np.ndarray] = None) -> np.ndarray:
    """Candidate indices by query, then score, ``secondary`` (NaN last) and docno, each descending, then position."""
    if base_order is not None:
        base_order = np.asarray(base_order, dtype=np.int64)
        return base_order[rank_within_queries(np.asarray(scores, dtype=float)[base_order], offsets)]
    keys = [np.arange(len(scores))]
    if docno_codes is not None:
        keys.append(-np.asarray(docno_codes, dtype=np.int64))   # descending docno
    elif docnos is not None:
        keys.append(-sorted_string_codes(docnos)[0])          # descending docno
    if secondary is not None:
        keys.append(-np.where(np.isnan(secondary), -np.inf, secondary))
    keys += [-np.asarray(scores, dtype=float), query_ids(np.asarray(offsets))]
    return np.lexsort(keys)


#: the largest |score| :func:`break_ties` keeps as it is, with room below float32's largest for the tie steps
FLOAT32_SAFE = 2.0 ** 126


@dataclass
class TieReport:
    """Candidates that shared their score within their query (in all, and in the top ``k``), and scores moved."""
    tied: int
    tied_top_k: int
    top_k: int
    moved: int
    k: int = 10


def break_ties(scores: np.ndarray, offsets: np.ndarray, secondary: Optional[np.ndarray] = None,
               docnos: Optional[np.ndarray] = None, k: int = 10, docno_codes: Optional[np.ndarray] = None,
               base_order: Optional[np.ndarray] = None):
    """(scores that rank every query in :func:`tie_order` even as float32, :class:`TieReport`); a score already
    below its predecessor as a float32 is kept exactly."""
    offsets, scores = np.asarray(offsets, dtype=np.int64), np.asarray(scores, dtype=float)
    size, n = np.abs(scores), len(scores)
    if not np.isfinite(size).all():
        raise ValueError("the model's scores include NaN or infinite values, which cannot be ranked; the features "
                         "must be finite numbers")
    if n == 0:
        return scores.copy(), TieReport(0, 0, 0, 0, k)
    if size.max() > FLOAT32_SAFE:                # a query above it divided exactly by a power of two
        top = np.zeros(len(offsets) - 1)                                 # each query's largest |score|
        np.maximum.at(top, query_ids(offsets), size)
        shift = np.where(top > FLOAT32_SAFE, np.frexp(top)[1] - 126, 0)
        scores = np.ldexp(scores, -np.repeat(shift, np.diff(offsets)))
    order = tie_order(scores, offsets, secondary, docnos, docno_codes, base_order)
    s = scores[order]
    q = query_ids(offsets)[order]
    rank = np.arange(n) - offsets[:-1][q]                                # 0-based rank in the query
    a = float_to_ordered(s, np.float32)
    # running minimum of a_j + j per query: one cumulative minimum, queries shifted 2^34 apart (|a + j| < 2^33)
    shift = q.astype(np.int64) << 34
    o = np.minimum.accumulate(a + rank - shift) + shift - rank
    moved = o != a
    new = np.where(moved, ordered_to_float(o, np.float32), s)
    out = np.empty(n)
    out[order] = new
    same = np.r_[False, (s[1:] == s[:-1]) & (q[1:] == q[:-1]), False]     # shares its predecessor's score
    tied = same[1:] | same[:-1]
    top = rank < k
    return out, TieReport(tied=int(tied.sum()), tied_top_k=int((tied & top).sum()), top_k=int(top.sum()),
                          moved=int(moved.sum()), k=k)
