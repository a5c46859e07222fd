"""Each base function's scale on the training candidates, summed in query order (a cluster's shards agree)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_chunks, row_offsets, score_matrix
from pyterrier_svmmap.features import kernels

#: |raw score| above which ``normalise=None`` refuses a function: the solver sums squares of sums of scores
UNNORMALISED_LIMIT = 1e100


@dataclass
class ColumnStatistics:
    """Per base function: the largest |retrieved score| ``top``, the pooled within-query standard deviation times
    :attr:`prescale` (``spread``), and whether scores or retrieval vary within some query."""
    top: np.ndarray
    spread: np.ndarray
    score_varies: np.ndarray
    retrieval_varies: np.ndarray

    @property
    def prescale(self) -> np.ndarray:
        return power_of_two_scale(self.top)


def column_top(raw, offsets: Optional[np.ndarray] = None) -> np.ndarray:
    """Per column, the largest |retrieved score| (0 for a column of NaN), read chunk by chunk."""
    raw = score_matrix(raw)
    top = np.zeros(raw.shape[1])
    if not len(raw):
        return top
    if offsets is None:
        offsets = row_offsets(len(raw), raw.shape[1])
    jit = kernels()
    for chunk in query_chunks(raw, offsets):
        values = chunk.values
        bounds = threads.even_bounds(len(values), threads.pieces(values.size))
        tops = np.zeros((len(bounds) - 1, raw.shape[1]))
        threads.run(lambda i: jit.column_abs_max(values[bounds[i]:bounds[i + 1]], tops[i]), len(bounds) - 1)
        top = np.max(np.vstack([top[None], tops]), axis=0)
    return top


def power_of_two_scale(top: np.ndarray) -> np.ndarray:
    """2^−e with 2^(e−1) ≤ ``top`` < 2^e (1 for 0), finite for subnormals: products by it are exact."""
    return np.ldexp(1.0, np.minimum(-np.frexp(np.asarray(top, dtype=float))[1], 1023))


def query_spread_sums(raw: np.ndarray, offsets: np.ndarray, prescale: np.ndarray
                      ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query and function: the squared deviations from the mean after ``prescale``, the count, if they differ."""
    raw = np.ascontiguousarray(raw, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    prescale = np.ascontiguousarray(prescale, dtype=float)
    n_queries, n_funcs = len(offsets) - 1, raw.shape[1]
    sumsq = np.zeros((n_queries, n_funcs))
    counts = np.zeros((n_queries, n_funcs), dtype=np.int64)
    varies = np.zeros((n_queries, n_funcs), dtype=np.bool_)
    if n_queries and len(raw):
        jit = kernels()
        threads.run_query_blocks(lambda lo, hi: jit.query_spread(raw, offsets[lo:hi + 1], prescale, sumsq[lo:hi],
                                                                 counts[lo:hi], varies[lo:hi]), offsets)
    return sumsq, counts, varies


def statistics_from_sums(top: np.ndarray, sumsq: np.ndarray, counts: np.ndarray, varies: np.ndarray,
                         sizes: np.ndarray) -> ColumnStatistics:
    """:class:`ColumnStatistics` from every query's :func:`query_spread_sums`, in query order."""
    spread = np.sqrt(sumsq.sum(axis=0) / np.maximum(counts.sum(axis=0), 1))
    partly = (counts > 0) & (counts < np.asarray(sizes)[:, None])
    return ColumnStatistics(np.asarray(top, dtype=float), spread, varies.any(axis=0), partly.any(axis=0))


def column_statistics(raw, offsets: np.ndarray) -> ColumnStatistics:
    raw = score_matrix(raw)
    offsets = np.asarray(offsets, dtype=np.int64)
    top = column_top(raw, offsets)
    prescale = power_of_two_scale(top)
    sums = [query_spread_sums(c.values, c.offsets, prescale) for c in query_chunks(raw, offsets)] or \
        [query_spread_sums(np.zeros((0, raw.shape[1])), offsets[:1], prescale)]
    return statistics_from_sums(top, *(np.concatenate(p) for p in zip(*sums)), np.diff(offsets))


def check_unnormalised_range(top: np.ndarray, base_names: Optional[Sequence[str]] = None) -> None:
    """ValueError naming the first function whose largest |score| ``top`` exceeds :data:`UNNORMALISED_LIMIT`."""
    bad = np.flatnonzero(np.asarray(top) > UNNORMALISED_LIMIT)
    if len(bad):
        f = int(bad[0])
        name = base_names[f] if base_names is not None else f"column {f}"
        raise ValueError(f"base function {name} has scores up to {top[f]:.3g} in magnitude, too large for "
                         f"normalise=None (scores as they are, up to ±{UNNORMALISED_LIMIT:g}): use normalise='query' "
                         "(the default: scores standardised within queries) or rescale that function")
