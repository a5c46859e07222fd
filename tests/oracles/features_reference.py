"""Reference implementations in numpy of the feature kernels (:mod:`pyterrier_svmmap.features._kernels`):
the oracles the tests compare the compiled code of :mod:`pyterrier_svmmap.features.encoder` with, bit for bit."""
from __future__ import annotations

import numpy as np

from pyterrier_svmmap.features.matrices import BinnedBlock
from pyterrier_svmmap.features.thresholds import pad_thresholds
from pyterrier_svmmap.features.transforms import query_min_max
from pyterrier_svmmap.queries import query_ids


def minmax_normalise(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(f − min_q f)/(max_q f − min_q f) per query and function; NaN stays NaN; a constant function → 1."""
    lo, hi = query_min_max(raw, offsets)
    qid = query_ids(offsets)
    lo, hi = lo[qid], hi[qid]
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(span > 0, (raw - lo) / np.where(span > 0, span, 1.0), 1.0)
    out[np.isnan(raw)] = np.nan
    return out


def percentiles(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query and function, the fraction of retrieved candidates scoring ≤ this one (top → 1): a lexsort of
    all candidates per function."""
    n_funcs = raw.shape[1]
    qid = query_ids(offsets)
    out = np.full(raw.shape, np.nan)
    for f in range(n_funcs):
        col = raw[:, f]
        ok = ~np.isnan(col)
        q, v = qid[ok], col[ok]
        order = np.lexsort((v, q))                   # by query, then score ascending
        qs, vs = q[order], v[order]
        # rank of the last candidate with the same (query, score): ties share the larger percentile
        last = np.r_[(qs[1:] != qs[:-1]) | (vs[1:] != vs[:-1]), True]
        idx = np.arange(len(vs))
        last_idx = np.minimum.accumulate(np.where(last, idx, len(vs))[::-1])[::-1]
        starts = np.searchsorted(qs, qs, side="left")
        counts = np.bincount(qs, minlength=len(offsets) - 1)[qs]
        pct = np.empty(len(vs))
        pct[order] = (last_idx - starts + 1) / counts
        out[np.flatnonzero(ok), f] = pct
    return out


def quantile_thresholds(values: np.ndarray, n_bins: int) -> np.ndarray:
    """``n_bins`` ascending thresholds for one function's raw scores: −inf, then the scores at quantiles
    1/n_bins, 2/n_bins, ... of the retrieved ones (``np.quantile``, ``method="lower"``)."""
    values = values[~np.isnan(values)]
    if len(values) == 0 or n_bins == 1:
        return pad_thresholds(np.zeros(0), n_bins)
    return pad_thresholds(np.quantile(values, np.arange(1, n_bins) / n_bins, method="lower"), n_bins)


def function_thresholds(sample: np.ndarray, n_bins: int) -> np.ndarray:
    """(F, ``n_bins``) thresholds: :func:`quantile_thresholds` of every column of ``sample``."""
    n_funcs = sample.shape[1]
    return np.stack([quantile_thresholds(sample[:, f], n_bins) for f in range(n_funcs)]) if n_funcs \
        else np.zeros((0, n_bins))


def top_of_queries(raw: np.ndarray, offsets: np.ndarray, depth: int) -> np.ndarray:
    """``raw`` with NaN except, per query and function, the ``depth`` highest scores (ties at the boundary
    kept): one partial sort of the queries padded into a (queries × longest × functions) block."""
    offsets = np.asarray(offsets)
    sizes = np.diff(offsets)
    n_q, n_funcs = len(sizes), raw.shape[1]
    if n_q == 0 or sizes.max() <= depth:
        return raw.copy()
    qid = query_ids(offsets)
    pos = np.arange(len(raw)) - offsets[:-1][qid]
    block = np.full((n_q, int(sizes.max()), n_funcs), -np.inf)
    block[qid, pos] = np.where(np.isnan(raw), -np.inf, raw)
    kth = -np.partition(-block, depth - 1, axis=1)[:, depth - 1, :]       # depth-th highest per (q, f)
    keep = (raw >= kth[qid]) & ~np.isnan(raw)
    return np.where(keep, raw, np.nan)


def bin_codes(scaled: np.ndarray, thresholds: np.ndarray, dtype=np.uint8) -> np.ndarray:
    """Number of ``thresholds[f]`` each score of column f exceeds (a searchsorted on the left edge); NaN → 0."""
    codes = np.zeros(scaled.shape, dtype=dtype)
    for f in range(scaled.shape[1]):
        col = scaled[:, f]
        ok = ~np.isnan(col)
        codes[ok, f] = np.searchsorted(thresholds[f], col[ok], side="left")
    return codes


def _flat_index(block: BinnedBlock) -> np.ndarray:
    """Codes shifted so that every (function, code) has its own cell in one flat (F·(T+1)) table."""
    n_funcs = block.codes.shape[1]
    return (block.codes.astype(np.intp) + np.arange(n_funcs, dtype=np.intp) * (block.n_thresholds + 1)).ravel()


def binned_dot(block: BinnedBlock, w: np.ndarray) -> np.ndarray:
    """Φw of a bin-code block: a gather of the cumulative weights, then row sums."""
    n, n_funcs = block.codes.shape
    cum = np.zeros((n_funcs, block.n_thresholds + 1))
    np.cumsum(w.reshape(n_funcs, block.n_thresholds), axis=1, out=cum[:, 1:])
    return cum.ravel()[_flat_index(block)].reshape(n, n_funcs).sum(axis=1)


def binned_rdot(block: BinnedBlock, c: np.ndarray) -> np.ndarray:
    """Φᵀc of a bin-code block: a weighted bincount, then reverse cumulative sums."""
    n, n_funcs = block.codes.shape
    hist = np.bincount(_flat_index(block), weights=np.repeat(c, n_funcs),
                       minlength=n_funcs * (block.n_thresholds + 1)).reshape(n_funcs, block.n_thresholds + 1)
    above = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]     # above[f, b] = Σ_{code ≥ b} c
    return above[:, 1:].ravel()                            # threshold t is exceeded by codes > t
