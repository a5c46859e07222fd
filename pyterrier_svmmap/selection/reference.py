"""The reference function and the held-out score every search compares settings by.

* the *reference function*: the queries' first stage where known (:attr:`~pyterrier_svmmap.queries.Queries.reference`),
  else :func:`best_function`, the base function with the highest training MAP. It breaks a model's ties, centres
  the prior, and is the *fallback* of ``selection="auto"`` (:func:`fallback_model`);
* the score: per-query AP of a model's ranking under the package's tie policy (:mod:`~pyterrier_svmmap.ties`),
  as ``transform`` ranks; its mean, MAP, is what every setting is compared by (:class:`HeldOutRanking`).
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_chunks, score_matrix
from pyterrier_svmmap.features.layout import FeatureLayout
from pyterrier_svmmap.measures import rank_within_queries, ranked_average_precision
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.ties import tie_base_order


def best_function(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> int:
    """The base function with the highest MAP on these queries (a missing score ranks last; the first of
    equal MAPs).

    Parameters
    ----------
    raw : np.ndarray
        The base functions' scores, candidates × functions (NaN: missing).
    labels : np.ndarray
        Relevance labels per candidate (> 0: relevant).
    offsets : np.ndarray
        Query boundaries, one more than queries.

    Returns
    -------
    int
        The chosen function's column.
    """
    return best_row(function_aps(raw, labels, offsets))


def queries_best_function(queries: Queries) -> int:
    """The reference function of ``queries``: their ``reference`` (the first stage) when known, else
    :func:`best_function` of them (binary labels), computed once per :class:`Queries` object. A fold's
    tie-break function, its fallback and each setting's prior all ask for it."""
    if queries.reference is not None:
        return int(queries.reference)
    cached = queries.__dict__.get("_best_function")
    if cached is None:
        cached = queries.__dict__["_best_function"] = best_function(queries.raw, queries.labels, queries.offsets)
    return cached


def best_row(aps: np.ndarray) -> int:
    """The row (base function) of an (F, Q) array of per-query APs with the highest mean; the first of equal
    means. A cluster gathers the shards' :func:`function_aps` in query order and calls this, so it picks the
    function one process picks, bit for bit."""
    return int(np.argmax([row.mean() for row in aps]))


def function_aps(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The AP of every base function on every query, (F, Q) (a missing score ranks last): the compiled
    :func:`pyterrier_svmmap.measures._kernels.function_ap` (counts instead of sorts; the bits of
    :func:`.measures.average_precision`), on blocks of whole queries spread over threads."""
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
    """Per-query AP of ``queries`` under many models, ranked as ``transform`` ranks: equal scores ordered by
    base function ``tie``'s raw scores, then by ``codes`` (the docnos' string codes) when given; AP normalised
    by ``queries.n_relevant`` when known.

    The tie policy's order without the scores (:func:`~pyterrier_svmmap.ties.tie_base_order`) is computed once,
    so each model costs one stable sort by score: the ranking of
    :func:`~pyterrier_svmmap.ties.break_ties`, whose scores decrease strictly in that order, bit for bit."""

    def __init__(self, queries: Queries, tie: int, codes: Optional[np.ndarray] = None):
        self.queries = queries
        self.base = tie_base_order(queries.offsets, queries.raw[:, tie], docno_codes=codes)

    def ap(self, scores: np.ndarray) -> np.ndarray:
        """Per-query AP of the ranking by ``scores`` (one per candidate)."""
        q = self.queries
        order = self.base[rank_within_queries(np.asarray(scores, dtype=float)[self.base], q.offsets)]
        return ranked_average_precision(order, q.labels, q.offsets, q.n_relevant)


def per_query_ap(layout: FeatureLayout, w: np.ndarray, queries: Queries, tie: int, codes=None) -> np.ndarray:
    """Per-query AP of ``queries`` ranked by the model (``layout``, ``w``) with tie-break function ``tie``."""
    return HeldOutRanking(queries, tie, codes).ap(layout.transform(queries.raw, queries.offsets).dot(w))


def fallback_model(queries: Queries, raw_layout: Callable[[Queries], FeatureLayout], prior_scale: float = 1.0
                   ) -> Tuple[FeatureLayout, np.ndarray, int]:
    """The fallback candidate: the reference function of ``queries`` (:func:`queries_best_function`) as a
    model of the raw layout (``raw_layout(queries)``): w₀ of the prior, the limit C → 0 of prior-regularised
    training, missing documents last. (layout, w, function)."""
    layout = raw_layout(queries)
    f = queries_best_function(queries)
    return layout, layout.prior_weights(f, queries.raw, queries.offsets, scale=prior_scale), f
