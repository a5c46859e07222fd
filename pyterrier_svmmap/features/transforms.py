"""Per-query transforms of the scores (min–max, percentiles, the ``raw`` block's standardisation), each query alone."""
from __future__ import annotations

import sys
from typing import Tuple

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features import kernels
from pyterrier_svmmap.queries import query_ids

#: how scores are put on a scale before thresholds apply (:func:`scale_for_binning`)
BINNINGS = ("quantile", "minmax", "percentile")
#: the bound of a standardised score (:func:`standardise_scores` and its kernel): a score this many spreads above its
#: query's lowest is beyond any meaning, and the bound keeps every weighted sum of a few thousand such values finite
Z_LIMIT = 2.0 ** 500


def _group_reduce(values: np.ndarray, offsets: np.ndarray, ufunc) -> np.ndarray:
    """ufunc.reduceat over the query segments of a (n, F) array; empty queries get NaN."""
    sizes = np.diff(offsets)
    out = np.full((len(sizes), values.shape[1]), np.nan)
    nonempty = sizes > 0
    if nonempty.any():
        out[nonempty] = ufunc.reduceat(values, offsets[:-1][nonempty], axis=0)
    return out


def query_min_max(raw: np.ndarray, offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per query and function, the min and max of the retrieved scores (NaN if none retrieved)."""
    lo, hi = _group_reduce(raw, offsets, np.fmin), _group_reduce(raw, offsets, np.fmax)     # fmin/fmax skip NaN
    none = ~np.isfinite(lo)
    lo[none] = hi[none] = np.nan
    return lo, hi


def _per_query_chunks(kernel: str, raw: np.ndarray, offsets: np.ndarray, *args) -> np.ndarray:
    """``kernel(raw, offsets, *args, out)`` of :mod:`._kernels` on blocks of whole queries spread over threads."""
    raw = np.ascontiguousarray(raw, dtype=float)
    out = np.empty(raw.shape)
    if len(raw):
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        run = getattr(kernels(), kernel)
        threads.run_query_blocks(lambda lo, hi: run(raw, offsets[lo:hi + 1], *args, out), offsets)
    return out


def minmax_normalise(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(f − min_q f)/(max_q f − min_q f) per query and function; NaN stays NaN; a constant function → 1."""
    return _per_query_chunks("minmax_normalise", raw, offsets)


def standardise_scores(raw: np.ndarray, offsets: np.ndarray, prescale: np.ndarray, column_scale: np.ndarray
                       ) -> np.ndarray:
    """Per query and function z = (x·p − lo·p)·k, 0 for a missing score or k = 0, at most :data:`Z_LIMIT` (numpy
    with the same bits until numba is loaded, so that scoring alone skips its start-up)."""
    raw = np.asarray(raw, dtype=float)
    if not len(raw):
        return np.empty(raw.shape)
    prescale = np.ascontiguousarray(prescale, dtype=float)
    column_scale = np.ascontiguousarray(column_scale, dtype=float)
    if "numba" in sys.modules:
        return _per_query_chunks("standardise", raw, offsets, prescale, column_scale)
    lo = query_min_max(raw, offsets)[0][query_ids(np.asarray(offsets))]
    with np.errstate(invalid="ignore", over="ignore"):
        dev = raw * prescale - lo * prescale
        dev = np.where(np.isnan(dev), (raw - lo) * prescale, dev)
        z = np.minimum(dev * column_scale, Z_LIMIT)
    return np.where(np.isnan(raw) | (column_scale == 0), 0.0, z)


def percentiles(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query and function, the fraction of retrieved candidates scoring ≤ this one (top → 1)."""
    return _per_query_chunks("percentiles", raw, offsets)


def scale_for_binning(raw: np.ndarray, offsets: np.ndarray, binning: str) -> np.ndarray:
    """The scores that thresholds apply to, for a ``binning`` of :data:`BINNINGS`."""
    if binning not in BINNINGS:
        raise ValueError(f"unknown binning {binning!r}; choose one of {BINNINGS}")
    return raw if binning == "quantile" else (minmax_normalise if binning == "minmax" else percentiles)(raw, offsets)
