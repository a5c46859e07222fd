"""The thresholds K_f of the bins (Yue et al. 2007 §4.2): −∞, the distinct lower quantiles of each function's
retrieved scores, then +∞; sampled exactly in passes of bounded memory (:data:`SAMPLE_BYTES`)."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_chunks, score_matrix
from pyterrier_svmmap.features import kernels

#: bytes of threshold samples per pass over the scores: a quarter of a 10⁸ × 16 fit's 8 GB
SAMPLE_BYTES = 1 << 31


def function_thresholds(sample: np.ndarray, n_bins: int) -> np.ndarray:
    """(F, ``n_bins``) thresholds of every column of ``sample`` (NaN = not retrieved)."""
    return _thresholds_of_columns([col[~np.isnan(col)] for col in np.asarray(sample).T], n_bins)


def _thresholds_of_columns(columns: List[np.ndarray], n_bins: int) -> np.ndarray:
    """:func:`pad_thresholds` of every (retrieved) column's ``np.quantile(col, k / n_bins, method="lower")``,
    k = 1 … n_bins − 1 (each column sorted in place), columns spread over threads."""
    def one(f: int) -> np.ndarray:
        col, columns[f] = columns[f], None
        if n_bins <= 1 or not len(col):
            return pad_thresholds(np.zeros(0), n_bins)
        col.sort()
        return pad_thresholds(col[np.floor((len(col) - 1) * (np.arange(1, n_bins) / n_bins)).astype(np.int64)]
                              .astype(float), n_bins)
    return np.stack(threads.run(one, len(columns))) if columns else np.zeros((0, n_bins))


def sample_thresholds(raw, offsets: np.ndarray, n_bins: int, depth: Optional[int] = None,
                      max_bytes: Optional[int] = None) -> np.ndarray:
    """:func:`function_thresholds` of the training candidates (each query's top ``depth``), a pass per group."""
    raw = score_matrix(raw)
    offsets = np.asarray(offsets, dtype=np.int64)
    n, n_funcs = raw.shape
    if n_bins == 1 or n == 0:
        return np.tile(pad_thresholds(np.zeros(0), n_bins), (n_funcs, 1))
    dtype = np.dtype(np.float32) if getattr(raw, "dtype", None) == np.float32 else np.dtype(np.float64)
    per_function = dtype.itemsize * (n if depth is None else min(n, int(depth) * (len(offsets) - 1)))
    group = min(n_funcs, max(1, int(max_bytes or SAMPLE_BYTES) // max(1, per_function)))
    jit = kernels()
    out = []
    store = np.empty((group, max(1, per_function // dtype.itemsize)), dtype=dtype)   # one for every group
    for f0 in range(0, n_funcs, group):
        f1 = min(n_funcs, f0 + group)
        filled = np.zeros(f1 - f0, dtype=np.int64)
        for chunk in query_chunks(raw, offsets):
            values = chunk.values[:, f0:f1]
            if depth is not None:
                values = top_of_queries(values, chunk.offsets, int(depth))
            values = np.ascontiguousarray(values)
            need = int((filled + np.count_nonzero(~np.isnan(values), axis=0)).max())
            if need > store.shape[1]:             # ties at the depth kept more than depth scores
                grown = np.empty((len(store), max(need, 2 * store.shape[1])), dtype=dtype)
                grown[:, :store.shape[1]] = store
                store = grown
            # functions, not rows: each column's scores stay in row order
            threads.run_ranges(lambda j0, j1: jit.gather_columns(values, j0, j1, store[j0:j1], filled[j0:j1]),
                               f1 - f0, values.size)
        out.append(_thresholds_of_columns([store[j, :filled[j]] for j in range(f1 - f0)], n_bins))
    return np.concatenate(out)


def pad_thresholds(quantiles: np.ndarray, n_bins: int) -> np.ndarray:
    """−inf, then the distinct ``quantiles`` ascending, then +inf (never exceeded) up to ``n_bins`` thresholds."""
    out = np.full(n_bins, np.inf)
    out[0] = -np.inf
    qs = np.unique(quantiles)
    out[1:1 + len(qs)] = qs
    return out


def top_of_queries(raw: np.ndarray, offsets: np.ndarray, depth: int) -> np.ndarray:
    """``raw`` with NaN but each query's ``depth`` highest scores per function (ties at the boundary kept)."""
    offsets = np.asarray(offsets)
    sizes = np.diff(offsets)
    if len(sizes) == 0 or sizes.max() <= depth:
        return raw.copy()
    jit = kernels()
    raw = np.ascontiguousarray(raw, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    out = np.empty_like(raw)
    threads.run_query_blocks(lambda lo, hi: jit.top_of_queries(raw, offsets[lo:hi + 1], int(depth), out), offsets)
    return out
