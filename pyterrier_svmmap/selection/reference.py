"""The reference function and the held-out per-query AP that every search compares settings by."""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_chunks, score_matrix
from pyterrier_svmmap.features.layout import FeatureLayout
from pyterrier_svmmap.measures import tie_ordered_average_precision
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.ties import tie_base_order


#: where :func:`queries_best_function` keeps a set of queries' best function
_CACHE = "_best_function"


def best_function(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> int:
    """The column of the base function with the highest MAP (``labels`` > 0 relevant; a missing score ranks last)."""
    return best_row(function_aps(raw, labels, offsets))


def queries_best_function(queries: Queries) -> int:
    """The reference function of ``queries``: their first stage when known, else :func:`best_function` (cached)."""
    if queries.reference is not None:
        return int(queries.reference)
    cached = queries.__dict__.get(_CACHE)
    if cached is None:
        cached = queries.__dict__[_CACHE] = best_function(queries.raw, queries.labels, queries.offsets)
    return cached


def known_best_function(queries: Queries, f: int) -> Queries:
    """``queries`` with ``f``, known from elsewhere, recorded as their :func:`queries_best_function`."""
    queries.__dict__[_CACHE] = f
    return queries


def fold_best_functions(queries: Queries, fold: np.ndarray, cv: int) -> List[int]:
    """:func:`queries_best_function` of each fold's training queries (``fold != k``) and, cached, of ``queries``,
    from one computation of every function's per-query AP."""
    if queries.reference is not None:
        return [int(queries.reference)] * cv
    aps = function_aps(queries.raw, queries.labels, queries.offsets)
    queries.__dict__.setdefault(_CACHE, best_row(aps))
    return [best_row(aps[:, fold != k]) for k in range(cv)]


def best_row(aps: np.ndarray) -> int:
    """The row of (F, Q) per-query APs with the highest mean (the first of equals), as a cluster picks it too."""
    return int(np.argmax([row.mean() for row in aps]))


def function_aps(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The AP of every base function on every query, (F, Q), compiled and spread over threads."""
    raw = score_matrix(raw)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    rel = np.ascontiguousarray(np.asarray(labels) > 0)
    jit = _jit.load("measures._kernels")
    out = np.empty((raw.shape[1], len(offsets) - 1))
    for chunk in query_chunks(raw, offsets):           # a query's APs are the same in any chunk
        values, offs = chunk.values, chunk.offsets
        labels_here = rel[chunk.start:chunk.stop]
        qb = threads.query_bounds(offs, threads.pieces(values.size))

        def piece(i: int) -> None:
            lo, hi = int(qb[i]), int(qb[i + 1])
            part = np.empty((values.shape[1], hi - lo))
            jit.function_ap(values, labels_here, offs[lo:hi + 1], part)
            out[:, chunk.first + lo:chunk.first + hi] = part
        threads.run(piece, len(qb) - 1)
    return out


class HeldOutRanking:
    """Per-query AP of ``queries`` under many models, ranked as ``transform`` ranks: ties by the order of
    :func:`~pyterrier_svmmap.ties.tie_base_order`, found once."""

    def __init__(self, queries: Queries, tie: int, codes: Optional[np.ndarray] = None):
        self.queries = queries
        self.position = np.empty(len(queries.labels), dtype=np.int64)
        self.position[tie_base_order(queries.offsets, queries.raw[:, tie], docno_codes=codes)] = \
            np.arange(len(queries.labels))

    def ap(self, scores: np.ndarray) -> np.ndarray:
        q = self.queries
        return tie_ordered_average_precision(scores, q.labels, q.offsets, self.position, q.n_relevant)

    def model_ap(self, layout: FeatureLayout, w: np.ndarray) -> np.ndarray:
        """Per-query AP under the model (``layout``, ``w``)."""
        return self.ap(layout.transform(self.queries.raw, self.queries.offsets).dot(w))


def per_query_ap(layout: FeatureLayout, w: np.ndarray, queries: Queries, tie: int, codes=None) -> np.ndarray:
    """Per-query AP of ``queries`` ranked by the model (``layout``, ``w``), ties by function ``tie``."""
    return HeldOutRanking(queries, tie, codes).model_ap(layout, w)


def fallback_model(queries: Queries, raw_layout: Callable[[Queries], FeatureLayout], prior_scale: float = 1.0
                   ) -> Tuple[FeatureLayout, np.ndarray, int]:
    """The fallback: the reference function as a raw-layout model (w₀ of the prior); (layout, w, function)."""
    layout = raw_layout(queries)
    f = queries_best_function(queries)
    return layout, layout.prior_weights(f, queries.raw, queries.offsets, scale=prior_scale), f
