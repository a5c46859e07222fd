"""From base-function scores to the feature vectors φ(x, d) of the linear model.

Input everywhere is a matrix ``raw`` of shape (candidates, base functions), NaN where a base function
did not retrieve the candidate, with the candidates of each query contiguous and delimited by
``offsets`` (length Q + 1).

Three kinds of blocks can make up φ, alone or together (``FeatureEncoder(features=...)``):

``"bins"``
    Yue et al. (2007) §4.2: φ contains 1[f(d|q) > k] for every k ∈ K_f. Never materialised: a block
    keeps one bin code per (candidate, function), the number of thresholds the score exceeds, and the
    model's score is a lookup in the cumulative bin weights. A candidate that a function did not
    retrieve is below every threshold (code 0). How the scores are put on a scale before binning is
    ``binning``:

    * ``"quantile"`` (the paper's "reasonably spaced, capturing the sensitive region"): thresholds
      are quantiles of the training candidates' raw scores, per function;
    * ``"minmax"`` (SVM_acc4 of §5.2.1): scores min–max normalised per query, thresholds evenly
      spaced in [0, 1];
    * ``"percentile"`` (SVM_acc3): scores turned into per-query percentiles (the top document
      gets 1), thresholds evenly spaced in [0, 1].
``"raw"``
    The base scores as they are. A missing score becomes the query's lowest score of that function,
    and an extra indicator per function says whether the function retrieved the candidate.
``"minmax"``
    The scores min–max normalised per query (missing → 0), with the same indicators.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.products as products
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.queries import query_ids

log = logging.getLogger(__name__)

BINNINGS = ("quantile", "minmax", "percentile")
BLOCKS = ("bins", "raw", "minmax")


# ---------------------------------------------------------------------------------------------
# per-query score transforms (vectorised over all queries)
# ---------------------------------------------------------------------------------------------
def _group_reduce(values: np.ndarray, offsets: np.ndarray, ufunc, fill: float) -> np.ndarray:
    """ufunc.reduceat over the query segments of a (n, F) array; empty queries get ``fill``."""
    sizes = np.diff(offsets)
    out = np.full((len(sizes), values.shape[1]), fill)
    nonempty = sizes > 0
    if nonempty.any():
        out[nonempty] = ufunc.reduceat(values, offsets[:-1][nonempty], axis=0)
    return out


def query_min_max(raw: np.ndarray, offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per query and function, the min and max of the retrieved scores (NaN if none retrieved)."""
    lo = _group_reduce(np.where(np.isnan(raw), np.inf, raw), offsets, np.minimum, np.inf)
    hi = _group_reduce(np.where(np.isnan(raw), -np.inf, raw), offsets, np.maximum, -np.inf)
    none = ~np.isfinite(lo)
    lo[none] = np.nan
    hi[none] = np.nan
    return lo, hi


def _per_query_blocks(kernel, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``kernel(raw, offsets, out)`` of a per-query scaling, run on blocks of whole queries spread over
    :func:`~pyterrier_svmmap.threads.current` threads (each query's rows are computed alike in any block)."""
    raw = np.ascontiguousarray(raw, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    out = np.empty(raw.shape)
    threads.run_query_blocks(lambda lo, hi: kernel(raw, offsets[lo:hi + 1], out), offsets)
    return out


def minmax_normalise(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(f − min_q f)/(max_q f − min_q f) per query and function; NaN stays NaN; a constant function → 1.
    Compiled (:mod:`._kernels`, the same bits, ~10× faster; blocks of queries on threads) when numba is
    available."""
    jit = kernels()
    if jit is not None and np.ndim(raw) == 2 and len(raw):
        return _per_query_blocks(jit.minmax_normalise, raw, offsets)
    lo, hi = query_min_max(raw, offsets)
    qid = query_ids(offsets)
    lo, hi = lo[qid], hi[qid]
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(span > 0, (raw - lo) / np.where(span > 0, span, 1.0), 1.0)
    out[np.isnan(raw)] = np.nan
    return out


def percentiles(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query and function, the fraction of retrieved candidates scoring ≤ this one (top → 1).
    Compiled (:mod:`._kernels`, the same bits, ~4× faster: one sort per query and function instead
    of a lexsort of all candidates per function) when numba is available."""
    jit = kernels()
    if jit is not None and np.ndim(raw) == 2 and len(raw):
        return _per_query_blocks(jit.percentiles, raw, offsets)
    n, n_funcs = raw.shape
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


def scale_for_binning(raw: np.ndarray, offsets: np.ndarray, binning: str) -> np.ndarray:
    """The scores that thresholds apply to, for a ``binning`` of :data:`BINNINGS`."""
    if binning == "quantile":
        return raw
    if binning == "minmax":
        return minmax_normalise(raw, offsets)
    if binning == "percentile":
        return percentiles(raw, offsets)
    raise ValueError(f"unknown binning {binning!r}; choose one of {BINNINGS}")


# ---------------------------------------------------------------------------------------------
# feature blocks: everything the solver needs is Φw (scores) and Φᵀc (a constraint's Ψ)
# ---------------------------------------------------------------------------------------------
class BinnedBlock:
    """Indicator features 1[f(d) > k] held as bin codes: one small integer per (candidate, function).

    ``codes[d, f]`` ∈ 0..T is the number of thresholds of f that candidate d's score exceeds; the
    block has F·T dimensions, ordered function by function, threshold by threshold (ascending).
    Codes are stored in the smallest unsigned type that holds 0..T (uint8 for T ≤ 255, else uint16 or
    uint32); a code outside 0..T is a ValueError.

    Φw and Φᵀc run compiled kernels (:mod:`._kernels`) when numba is available and not disabled
    (:func:`kernels`); the numpy code (:meth:`dot_numpy`, :meth:`rdot_numpy`) is the fallback and the
    reference, and the kernels add in its order, so both paths give the same bits.
    """

    def __init__(self, codes: np.ndarray, n_thresholds: int):
        self.n_thresholds = int(n_thresholds)
        if self.n_thresholds < 0:
            raise ValueError(f"n_thresholds must be ≥ 0, got {n_thresholds}")
        codes = np.asarray(codes)
        if codes.ndim != 2:
            raise ValueError(f"codes must be a (candidates, functions) array, got shape {codes.shape}")
        self.codes = np.ascontiguousarray(_as_code_dtype(codes, self.n_thresholds))
        self._flat = None                       # numpy path only: built on first use

    # pickles (e.g. Dask) carry the codes only; the numpy path's flat index is rebuilt where needed
    def __getstate__(self):
        return {"codes": self.codes, "n_thresholds": self.n_thresholds}

    def __setstate__(self, state):
        self.codes = state["codes"]
        self.n_thresholds = state["n_thresholds"]
        self._flat = None

    @property
    def dim(self) -> int:
        return self.codes.shape[1] * self.n_thresholds

    def _flat_index(self) -> np.ndarray:
        """Codes shifted so that every (function, code) has its own cell in one flat (F·(T+1)) table."""
        if self._flat is None:
            # intp on purpose: numpy converts any other index type on every gather and bincount (an int32
            # index made the numpy path 2–4× slower); the compiled path never builds this array
            n_funcs = self.codes.shape[1]
            self._flat = (self.codes.astype(np.intp) + np.arange(n_funcs, dtype=np.intp) * (self.n_thresholds + 1)).ravel()
        return self._flat

    def dot(self, w: np.ndarray) -> np.ndarray:
        """Φw: each candidate's score is Σ_f (cumulative weight of f's thresholds below its score)."""
        jit = kernels()
        if jit is None or w.dtype != np.float64:
            return self.dot_numpy(w)
        if w.shape != (self.dim,):                             # the kernels do not check bounds
            raise ValueError(f"w has shape {w.shape}, this block has {self.dim} dimensions")
        n, n_funcs = self.codes.shape
        cum = jit.cumulative_table(np.ascontiguousarray(w), n_funcs, self.n_thresholds)
        out = np.empty(n)
        bounds = threads.even_bounds(n, threads.pieces(n))         # rows: each one's sum is the same anywhere
        threads.run(lambda i: jit.binned_dot(self.codes[bounds[i]:bounds[i + 1]], cum,
                                             out[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
        return out

    def rdot(self, c: np.ndarray) -> np.ndarray:
        """Φᵀc: per function, a weighted histogram of codes, then Σ over codes above each threshold."""
        jit = kernels()
        if jit is None or c.dtype != np.float64:
            return self.rdot_numpy(c)
        if c.shape != (len(self.codes),):
            raise ValueError(f"c has shape {c.shape}, this block has {len(self.codes)} candidates")
        out = np.empty(self.dim)
        c = np.ascontiguousarray(c)
        n, n_funcs = self.codes.shape
        # base functions, not rows: each function's histogram adds the rows in order wherever it is computed
        bounds = threads.even_bounds(n_funcs, min(n_funcs, threads.pieces(n * n_funcs // 4)))
        threads.run(lambda i: jit.binned_rdot(self.codes, c, self.n_thresholds, bounds[i], bounds[i + 1], out),
                    len(bounds) - 1)
        return out

    def dot_numpy(self, w: np.ndarray) -> np.ndarray:
        """:meth:`dot` in numpy (the reference): a gather of the cumulative weights, then row sums."""
        n, n_funcs = self.codes.shape
        cum = np.zeros((n_funcs, self.n_thresholds + 1))
        np.cumsum(w.reshape(n_funcs, self.n_thresholds), axis=1, out=cum[:, 1:])
        return cum.ravel()[self._flat_index()].reshape(n, n_funcs).sum(axis=1)

    def rdot_numpy(self, c: np.ndarray) -> np.ndarray:
        """:meth:`rdot` in numpy (the reference): a weighted bincount, then reverse cumulative sums."""
        n, n_funcs = self.codes.shape
        hist = np.bincount(self._flat_index(), weights=np.repeat(c, n_funcs),
                           minlength=n_funcs * (self.n_thresholds + 1)).reshape(n_funcs, self.n_thresholds + 1)
        above = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]     # above[f, b] = Σ_{code ≥ b} c
        return above[:, 1:].ravel()                            # threshold t is exceeded by codes > t

    def take(self, rows: np.ndarray) -> "BinnedBlock":
        out = BinnedBlock.__new__(BinnedBlock)                 # codes already checked and compact
        out.__setstate__({"codes": np.ascontiguousarray(self.codes[rows]), "n_thresholds": self.n_thresholds})
        return out


def code_dtype(n_thresholds: int) -> np.dtype:
    """The smallest unsigned integer type holding the codes 0..``n_thresholds``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_thresholds <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


def _as_code_dtype(codes: np.ndarray, n_thresholds: int) -> np.ndarray:
    """``codes`` in :func:`code_dtype` (no copy when they already are), checked to lie in 0..T."""
    dtype = code_dtype(n_thresholds)
    if codes.size:
        if codes.dtype.kind not in "biu":
            raise ValueError(f"bin codes must be integers, got dtype {codes.dtype}")
        lo, hi = codes.min(), codes.max()
        if lo < 0 or hi > n_thresholds:
            raise ValueError(f"bin codes must lie in 0..{n_thresholds} (the number of thresholds), "
                             f"got {lo}..{hi}")
    return codes.astype(dtype, copy=False)


def kernels():
    """The compiled kernels module :mod:`._kernels`, or None when numba is missing or disabled with
    the environment variable ``PYTERRIER_SVMMAP_NO_NUMBA=1`` (as the losses' kernels,
    :func:`pyterrier_svmmap.svm.losses._numba.kernels`). Looked up at call time, so tests can monkeypatch it."""
    return _jit.load("features._kernels", "bin features use their numpy path")


class DenseBlock:
    """Real-valued features held as a dense (candidates × d) matrix; its products add in a fixed order
    (:mod:`pyterrier_svmmap.products`), so that they do not depend on a BLAS's kernel or threads."""

    def __init__(self, values: np.ndarray):
        self.values = np.ascontiguousarray(values, dtype=float)

    @property
    def dim(self) -> int:
        return self.values.shape[1]

    def dot(self, w: np.ndarray) -> np.ndarray:
        """Φw."""
        return products.rows_dot(self.values, w)

    def rdot(self, c: np.ndarray) -> np.ndarray:
        """Φᵀc."""
        return products.weighted_rows(c, self.values)

    def take(self, rows: np.ndarray) -> "DenseBlock":
        return DenseBlock(self.values[rows])


Block = Union[BinnedBlock, DenseBlock]


class FeatureMatrix:
    """φ for a set of candidates: blocks side by side, never materialised as one matrix."""

    def __init__(self, blocks: Sequence[Block]):
        self.blocks = list(blocks)
        self._bounds = np.cumsum([0] + [b.dim for b in self.blocks])

    @property
    def dim(self) -> int:
        return int(self._bounds[-1])

    @property
    def n_rows(self) -> int:
        first = self.blocks[0]
        return len(first.codes if isinstance(first, BinnedBlock) else first.values)

    def dot(self, w: np.ndarray) -> np.ndarray:
        """Scores Φw of every candidate."""
        if not self.blocks:
            return np.zeros(0)
        parts = zip(self.blocks, self._bounds[:-1], self._bounds[1:])
        b, lo, hi = next(parts)
        out = np.array(b.dot(w[lo:hi]), dtype=float)          # = 0 + first block, without the zeros
        for b, lo, hi in parts:
            out += b.dot(w[lo:hi])
        return out

    def rdot(self, c: np.ndarray) -> np.ndarray:
        """Φᵀc = Σ_d c_d φ(d), the joint feature vector of a constraint."""
        return np.concatenate([b.rdot(c) for b in self.blocks])

    def take(self, rows: np.ndarray) -> "FeatureMatrix":
        return FeatureMatrix([b.take(rows) for b in self.blocks])

    def dense(self) -> np.ndarray:
        """The explicit matrix (tests and small data only)."""
        eye = np.eye(self.dim)
        return np.stack([self.dot(e) for e in eye], axis=1)


# ---------------------------------------------------------------------------------------------
# the encoder: learns thresholds on training candidates, then encodes any candidates
# ---------------------------------------------------------------------------------------------
def parse_blocks(features: Union[str, Sequence[str]]) -> Tuple[str, ...]:
    """``"bins+minmax"`` or ``["bins", "minmax"]`` → ``("bins", "minmax")``, validated."""
    parts = features.split("+") if isinstance(features, str) else list(features)
    parts = tuple(p.strip() for p in parts)
    bad = [p for p in parts if p not in BLOCKS]
    if not parts or bad or len(set(parts)) != len(parts):
        raise ValueError(f"features={features!r} is not valid: give one or more of {BLOCKS}, "
                         "joined by '+' (e.g. 'bins+minmax'), each at most once")
    return parts


def quantile_thresholds(values: np.ndarray, n_bins: int) -> np.ndarray:
    """``n_bins`` ascending thresholds for one function's raw scores.

    The first is −inf, so its indicator says "the function retrieved this candidate" and a missing
    candidate (code 0) is told apart from the lowest retrieved ones; the others are the scores at
    quantiles 1/n_bins, 2/n_bins, ... of the retrieved training scores (:func:`pad_thresholds`).
    """
    values = values[~np.isnan(values)]
    if len(values) == 0 or n_bins == 1:
        return pad_thresholds(np.zeros(0), n_bins)
    return pad_thresholds(np.quantile(values, np.arange(1, n_bins) / n_bins, method="lower"), n_bins)


def function_thresholds(sample: np.ndarray, n_bins: int) -> np.ndarray:
    """(F, ``n_bins``) thresholds: :func:`quantile_thresholds` of every column of ``sample``. Compiled
    (:func:`._kernels.column_quantiles`, the same values, functions spread over
    :func:`~pyterrier_svmmap.threads.current` threads) when numba is available."""
    n_funcs = sample.shape[1]
    jit = kernels()
    if jit is None or n_bins == 1 or len(sample) == 0:
        return np.stack([quantile_thresholds(sample[:, f], n_bins) for f in range(n_funcs)]) if n_funcs \
            else np.zeros((0, n_bins))
    sample = np.ascontiguousarray(sample, dtype=float)
    levels = np.arange(1, n_bins) / n_bins
    qs = np.empty((n_funcs, n_bins - 1))
    counts = np.zeros(n_funcs, dtype=np.int64)
    bounds = threads.even_bounds(n_funcs, min(n_funcs, threads.pieces(sample.size)))
    threads.run(lambda i: jit.column_quantiles(sample, levels, bounds[i], bounds[i + 1], qs, counts), len(bounds) - 1)
    return np.stack([pad_thresholds(qs[f] if counts[f] else np.zeros(0), n_bins) for f in range(n_funcs)])


def pad_thresholds(quantiles: np.ndarray, n_bins: int) -> np.ndarray:
    """−inf, then the distinct ``quantiles`` ascending, then +inf up to ``n_bins`` thresholds (a +inf
    threshold is never exceeded, so its weight stays 0). Shared with the distributed thresholds."""
    out = np.full(n_bins, np.inf)
    out[0] = -np.inf
    qs = np.unique(quantiles)
    out[1:1 + len(qs)] = qs
    return out


def top_of_queries(raw: np.ndarray, offsets: np.ndarray, depth: int) -> np.ndarray:
    """``raw`` with NaN except, per query and function, the ``depth`` highest scores (ties at the
    boundary kept). Compiled per query (:func:`._kernels.top_of_queries`, queries spread over
    :func:`~pyterrier_svmmap.threads.current` threads) when numba is available; else one partial sort of
    the queries padded into a (queries × longest × functions) block. Both keep the same scores."""
    offsets = np.asarray(offsets)
    sizes = np.diff(offsets)
    n_q, n_funcs = len(sizes), raw.shape[1]
    if n_q == 0 or sizes.max() <= depth:
        return raw.copy()
    jit = kernels()
    if jit is not None:
        raw = np.ascontiguousarray(raw, dtype=float)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        out = np.empty_like(raw)
        qb = threads.query_bounds(offsets, threads.pieces(raw.size))
        threads.run(lambda i: jit.top_of_queries(raw, offsets[qb[i]:qb[i + 1] + 1], int(depth), out), len(qb) - 1)
        return out
    qid = query_ids(offsets)
    pos = np.arange(len(raw)) - offsets[:-1][qid]
    block = np.full((n_q, int(sizes.max()), n_funcs), -np.inf)
    block[qid, pos] = np.where(np.isnan(raw), -np.inf, raw)
    kth = -np.partition(-block, depth - 1, axis=1)[:, depth - 1, :]       # depth-th highest per (q, f)
    keep = (raw >= kth[qid]) & ~np.isnan(raw)
    return np.where(keep, raw, np.nan)


def even_thresholds(n_bins: int) -> np.ndarray:
    """``n_bins`` thresholds evenly spaced in [0, 1) for scores on a [0, 1] scale."""
    return np.arange(n_bins) / n_bins


@dataclass
class FeatureEncoder:
    """Learns the thresholds K_f (on training candidates) and encodes candidates as a FeatureMatrix.

    Parameters follow the estimators': ``features`` (blocks, see the module doc), ``n_bins`` (|K_f|),
    ``binning`` (how scores are scaled before thresholds apply), ``threshold_depth`` (quantile binning
    only: take the quantiles over each training query's top ``threshold_depth`` candidates of the
    function instead of over all candidates, so that the thresholds sit where rankings are decided —
    the paper's "sensitive region" — rather than among the many low-scoring candidates).
    """

    features: Union[str, Sequence[str]] = "bins"
    n_bins: int = 50
    binning: str = "quantile"
    threshold_depth: Optional[int] = None
    thresholds_: np.ndarray = field(default=None, repr=False)   # (F, n_bins) or None without bins
    n_functions_: int = field(default=None, repr=False)

    def __post_init__(self):
        self.blocks = parse_blocks(self.features)
        if self.binning not in BINNINGS:
            raise ValueError(f"binning={self.binning!r} is not valid; choose one of {BINNINGS}")
        if self.threshold_depth is not None and int(self.threshold_depth) < 1:
            raise ValueError(f"threshold_depth must be a positive number of candidates, got {self.threshold_depth}")
        if int(self.n_bins) < 1:
            raise ValueError(f"n_bins must be at least 1, got {self.n_bins}")

    def fit(self, raw: np.ndarray, offsets: np.ndarray) -> "FeatureEncoder":
        raw = np.asarray(raw, dtype=float)
        self.n_functions_ = raw.shape[1]
        if "bins" in self.blocks:
            if self.binning == "quantile":
                sample = raw if self.threshold_depth is None else top_of_queries(raw, offsets, self.threshold_depth)
                self.thresholds_ = function_thresholds(sample, self.n_bins)
            else:
                self.thresholds_ = np.tile(even_thresholds(self.n_bins), (raw.shape[1], 1))
        return self

    def transform(self, raw: np.ndarray, offsets: np.ndarray) -> FeatureMatrix:
        raw = np.asarray(raw, dtype=float)
        if self.n_functions_ is None:
            raise RuntimeError("FeatureEncoder.transform called before fit")
        if raw.shape[1] != self.n_functions_:
            raise ValueError(f"the model was trained on {self.n_functions_} base functions but these "
                             f"candidates have {raw.shape[1]}; use the same RunFeatures as in training")
        blocks: List[Block] = []
        missing = np.isnan(raw)
        for kind in self.blocks:
            if kind == "bins":
                blocks.append(BinnedBlock(self.bin_codes(raw, offsets), self.n_bins))
            elif kind == "raw":
                lo, _ = query_min_max(raw, offsets)
                fill = np.nan_to_num(lo[query_ids(offsets)], nan=0.0)
                blocks.append(DenseBlock(np.hstack([np.where(missing, fill, raw), ~missing])))
            else:  # minmax
                norm = np.nan_to_num(minmax_normalise(raw, offsets), nan=0.0)
                blocks.append(DenseBlock(np.hstack([norm, ~missing])))
        return FeatureMatrix(blocks)

    def bin_codes(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Number of thresholds each score exceeds, per (candidate, function); missing → 0."""
        scaled = scale_for_binning(raw, offsets, self.binning)
        dtype = np.uint8 if self.n_bins < 256 else np.uint16
        codes = np.zeros(scaled.shape, dtype=dtype)
        jit = kernels()
        if jit is not None and len(scaled):
            scaled = np.ascontiguousarray(scaled, dtype=float)
            thresholds = np.ascontiguousarray(self.thresholds_, dtype=float)
            bounds = threads.even_bounds(len(scaled), threads.pieces(scaled.size))
            threads.run(lambda i: jit.bin_codes(scaled[bounds[i]:bounds[i + 1]], thresholds,
                                                codes[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
            return codes
        for f in range(scaled.shape[1]):
            col = scaled[:, f]
            ok = ~np.isnan(col)
            # count of thresholds k with k < score: searchsorted on the left edge
            codes[ok, f] = np.searchsorted(self.thresholds_[f], col[ok], side="left")
        return codes

    def feature_names(self, base_names: Sequence[str]) -> List[str]:
        """A readable name per dimension of φ, in the weight vector's order."""
        names: List[str] = []
        for kind in self.blocks:
            if kind == "bins":
                names += [f"{b}>{t:.6g}" for b, th in zip(base_names, self.thresholds_) for t in th]
            else:
                names += [f"{kind}({b})" for b in base_names] + [f"retrieved({b})" for b in base_names]
        return names
