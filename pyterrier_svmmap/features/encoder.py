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
from types import ModuleType
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
    Compiled (:func:`._kernels.minmax_normalise`; blocks of queries on threads)."""
    if not len(raw):
        return np.empty(np.shape(raw))
    return _per_query_blocks(kernels().minmax_normalise, raw, offsets)


def percentiles(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query and function, the fraction of retrieved candidates scoring ≤ this one (top → 1).
    Compiled (:func:`._kernels.percentiles`: one sort per query and function; blocks of queries on threads)."""
    if not len(raw):
        return np.empty(np.shape(raw))
    return _per_query_blocks(kernels().percentiles, raw, offsets)


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

    Φw and Φᵀc run compiled kernels (:mod:`._kernels`), rows or functions spread over
    :func:`~pyterrier_svmmap.threads.current` threads (each sum is added in one order wherever it runs).
    """

    def __init__(self, codes: np.ndarray, n_thresholds: int):
        self.n_thresholds = int(n_thresholds)
        if self.n_thresholds < 0:
            raise ValueError(f"n_thresholds must be ≥ 0, got {n_thresholds}")
        codes = np.asarray(codes)
        if codes.ndim != 2:
            raise ValueError(f"codes must be a (candidates, functions) array, got shape {codes.shape}")
        self.codes = np.ascontiguousarray(_as_code_dtype(codes, self.n_thresholds))

    def __getstate__(self):
        return {"codes": self.codes, "n_thresholds": self.n_thresholds}

    def __setstate__(self, state):
        self.codes = state["codes"]
        self.n_thresholds = state["n_thresholds"]

    @property
    def dim(self) -> int:
        return self.codes.shape[1] * self.n_thresholds

    def dot(self, w: np.ndarray) -> np.ndarray:
        """Φw: each candidate's score is Σ_f (cumulative weight of f's thresholds below its score)."""
        jit = kernels()
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.dim,):                             # the kernels do not check bounds
            raise ValueError(f"w has shape {w.shape}, this block has {self.dim} dimensions")
        n, n_funcs = self.codes.shape
        cum = jit.cumulative_table(w, n_funcs, self.n_thresholds)
        out = np.empty(n)
        bounds = threads.even_bounds(n, threads.pieces(n))         # rows: each one's sum is the same anywhere
        threads.run(lambda i: jit.binned_dot(self.codes[bounds[i]:bounds[i + 1]], cum,
                                             out[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
        return out

    def rdot(self, c: np.ndarray) -> np.ndarray:
        """Φᵀc: per function, a weighted histogram of codes, then Σ over codes above each threshold."""
        jit = kernels()
        c = np.ascontiguousarray(c, dtype=np.float64)
        if c.shape != (len(self.codes),):
            raise ValueError(f"c has shape {c.shape}, this block has {len(self.codes)} candidates")
        out = np.empty(self.dim)
        n, n_funcs = self.codes.shape
        # base functions, not rows: each function's histogram adds the rows in order wherever it is computed
        bounds = threads.even_bounds(n_funcs, min(n_funcs, threads.pieces(n * n_funcs // 4)))
        threads.run(lambda i: jit.binned_rdot(self.codes, c, self.n_thresholds, bounds[i], bounds[i + 1], out),
                    len(bounds) - 1)
        return out

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


def kernels() -> ModuleType:
    """The compiled kernels module :mod:`._kernels` (imported on first use)."""
    return _jit.load("features._kernels")


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


def function_thresholds(sample: np.ndarray, n_bins: int) -> np.ndarray:
    """(F, ``n_bins``) ascending thresholds per column of ``sample`` (a function's raw scores).

    The first is −inf, so its indicator says "the function retrieved this candidate" and a missing
    candidate (code 0) is told apart from the lowest retrieved ones; the others are the scores at
    quantiles 1/n_bins, 2/n_bins, ... (``method="lower"``) of the function's retrieved scores
    (:func:`pad_thresholds`). Compiled (:func:`._kernels.column_quantiles`, functions spread over
    :func:`~pyterrier_svmmap.threads.current` threads)."""
    n_funcs = sample.shape[1]
    if n_bins == 1 or len(sample) == 0:
        return np.tile(pad_thresholds(np.zeros(0), n_bins), (n_funcs, 1))
    jit = kernels()
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
    :func:`~pyterrier_svmmap.threads.current` threads)."""
    offsets = np.asarray(offsets)
    sizes = np.diff(offsets)
    if len(sizes) == 0 or sizes.max() <= depth:
        return raw.copy()
    jit = kernels()
    raw = np.ascontiguousarray(raw, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    out = np.empty_like(raw)
    qb = threads.query_bounds(offsets, threads.pieces(raw.size))
    threads.run(lambda i: jit.top_of_queries(raw, offsets[qb[i]:qb[i + 1] + 1], int(depth), out), len(qb) - 1)
    return out


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
        if len(scaled):
            jit = kernels()
            scaled = np.ascontiguousarray(scaled, dtype=float)
            thresholds = np.ascontiguousarray(self.thresholds_, dtype=float)
            bounds = threads.even_bounds(len(scaled), threads.pieces(scaled.size))
            threads.run(lambda i: jit.bin_codes(scaled[bounds[i]:bounds[i + 1]], thresholds,
                                                codes[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
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
