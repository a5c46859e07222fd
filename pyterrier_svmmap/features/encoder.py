"""From base-function scores to the feature vectors φ(x, d) of the linear model.

Input everywhere is a matrix ``raw`` of shape (candidates, base functions), NaN where a base function
did not retrieve the candidate, with the candidates of each query contiguous and delimited by
``offsets`` (length Q + 1).

Three kinds of blocks can make up φ, alone or together (``FeatureEncoder(features=...)``); each is a class of
:mod:`pyterrier_svmmap.features.blocks` (its values, width, names, prior weights and picture), and the encoder
learns what they need from the training candidates (thresholds, scales):

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
    The base scores, one weight per function, and an indicator per function that says whether the function
    retrieved the candidate; a missing score counts as the query's lowest of that function. How the scores
    are put on a scale is ``normalise``:

    * ``"query"`` (the default): z = (f − min_q f) / σ_f, with σ_f the function's spread *within* queries
      (the pooled standard deviation of its scores around their query's mean, on the training candidates).
      A linear ranking model only ever compares candidates of one query, so this is the scale that matters:
      z does not change when a function is multiplied by a positive number or shifted by a constant (for all
      queries or per query), and so neither do φ, the learned model, its cost, nor its ranking. The centring
      changes no ranking (a per-query constant) and keeps the arithmetic exact: a score equal to its query's
      lowest gives 0 whatever the magnitude of the scores;
    * ``None``: the scores as they are (Yue et al.'s and ``svm_map_learn``'s linear model), whose units
      then set the scale of the weights, of C and of the solver's arithmetic; scores beyond ±1e100 are
      refused (their squares overflow the solver's sums).
``"minmax"``
    The scores min–max normalised per query (missing → 0), with the same indicators.

**What carries no ranking information is left out exactly**, in every block and either normalisation: a
function whose retrieved scores are equal within every training query (a document-independent feature such
as a query length, or a constant column) has its score dimensions fixed at 0, and so does its "retrieved"
indicator when, in every training query, the function retrieved all or none of the candidates. Their
weights stay exactly 0 (their share of every constraint is an empty sum, not a rounding residue of a sum
that should cancel), so such a column cannot change a model, however large its values.
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.products as products
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_blocks, row_offsets, score_matrix
from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.queries import query_ids

log = logging.getLogger(__name__)

BINNINGS = ("quantile", "minmax", "percentile")
#: how the ``raw`` block puts scores on a scale (module doc): within-query standardisation, or none
NORMALISATIONS = ("query", None)
#: |raw score| above which ``normalise=None`` refuses a function: the solver sums squares of sums of scores
UNNORMALISED_LIMIT = 1e100
#: the bound of a standardised score (:func:`standardise_scores`), as the compiled kernel's
Z_LIMIT = 2.0 ** 500


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


def standardise_scores(raw: np.ndarray, offsets: np.ndarray, prescale: np.ndarray, column_scale: np.ndarray
                       ) -> np.ndarray:
    """Per query and function z = (x·p − lo·p)·k (p = ``prescale``, a power of two; lo the query's lowest
    retrieved score; k = ``column_scale``), 0 for a missing score or k = 0, at most
    :data:`._kernels.Z_LIMIT`. Compiled (:func:`._kernels.standardise`, blocks of queries on threads) once
    numba is loaded; until then numpy's elementwise operations, which are the kernel's and give the same bits,
    so that scoring alone (``svmmap classify``) does not pay numba's start-up."""
    raw = np.asarray(raw, dtype=float)
    if not len(raw):
        return np.empty(raw.shape)
    prescale = np.ascontiguousarray(prescale, dtype=float)
    column_scale = np.ascontiguousarray(column_scale, dtype=float)
    if "numba" in sys.modules:
        jit = kernels()
        return _per_query_blocks(lambda r, o, out: jit.standardise(r, o, prescale, column_scale, out), raw, offsets)
    lo = query_min_max(raw, offsets)[0][query_ids(np.asarray(offsets))]
    with np.errstate(invalid="ignore", over="ignore"):
        dev = raw * prescale - lo * prescale
        dev = np.where(np.isnan(dev), (raw - lo) * prescale, dev)
        z = np.minimum(dev * column_scale, Z_LIMIT)
    return np.where(np.isnan(raw) | (column_scale == 0), 0.0, z)


def percentiles(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query and function, the fraction of retrieved candidates scoring ≤ this one (top → 1).
    Compiled (:func:`._kernels.percentiles`: one sort per query and function; blocks of queries on threads)."""
    if not len(raw):
        return np.empty(np.shape(raw))
    return _per_query_blocks(kernels().percentiles, raw, offsets)


@dataclass
class ColumnStatistics:
    """What the training candidates say about each base function's scale (:func:`column_statistics`).

    Attributes
    ----------
    top : np.ndarray
        (F,) the largest |retrieved score| of each function (0 when it retrieved nothing).
    spread : np.ndarray
        (F,) the pooled within-query standard deviation of the function's scores times :attr:`prescale`
        (0 when they never vary).
    score_varies : np.ndarray
        (F,) whether the function's retrieved scores differ within at least one query.
    retrieval_varies : np.ndarray
        (F,) whether, in at least one query, the function retrieved some candidates but not all.
    """
    top: np.ndarray
    spread: np.ndarray
    score_varies: np.ndarray
    retrieval_varies: np.ndarray

    @property
    def prescale(self) -> np.ndarray:
        """(F,) a power of two per function that brings its largest |score| into [0.5, 1): products by it are
        exact, and squares of the scaled scores cannot overflow (:func:`power_of_two_scale`)."""
        return power_of_two_scale(self.top)


def column_top(raw, offsets: Optional[np.ndarray] = None) -> np.ndarray:
    """Per column, the largest |retrieved score| (0 for a column of NaN), read block by block
    (:func:`~pyterrier_svmmap.chunks.query_blocks`; ``offsets``: query boundaries, default blocks of rows;
    :func:`._kernels.column_abs_max`, rows spread over threads)."""
    raw = score_matrix(raw)
    top = np.zeros(raw.shape[1])
    if not len(raw):
        return top
    if offsets is None:
        offsets = row_offsets(len(raw), raw.shape[1])
    jit = kernels()
    for block in query_blocks(raw, offsets):
        values = block.values
        bounds = threads.even_bounds(len(values), threads.pieces(values.size))
        tops = np.zeros((len(bounds) - 1, raw.shape[1]))
        threads.run(lambda i: jit.column_abs_max(values[bounds[i]:bounds[i + 1]], tops[i]), len(bounds) - 1)
        top = np.max(np.vstack([top[None], tops]), axis=0)
    return top


def power_of_two_scale(top: np.ndarray) -> np.ndarray:
    """2^−e with 2^(e−1) ≤ ``top`` < 2^e (1 for 0), capped so that it stays finite for subnormal values."""
    return np.ldexp(1.0, np.minimum(-np.frexp(np.asarray(top, dtype=float))[1], 1023))


def query_spread_sums(raw: np.ndarray, offsets: np.ndarray, prescale: np.ndarray
                      ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query and function (Q × F each): the squared deviations of the scores times ``prescale`` from the
    query's mean, summed (exactly 0 where they are all equal), the retrieved scores counted, and whether they
    differ. Compiled (:func:`._kernels.query_spread`, blocks of whole queries on threads: each query's sums
    are the same in any block)."""
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
    """:class:`ColumnStatistics` from the per-query sums of :func:`query_spread_sums` of every query, in query
    order, and the queries' candidate counts ``sizes``: the sums are added over queries in that order, so a
    cluster that gathers its shards' rows in query order gets the bits of one process."""
    spread = np.sqrt(sumsq.sum(axis=0) / np.maximum(counts.sum(axis=0), 1))
    partly = (counts > 0) & (counts < np.asarray(sizes)[:, None])
    return ColumnStatistics(np.asarray(top, dtype=float), spread, varies.any(axis=0), partly.any(axis=0))


def column_statistics(raw, offsets: np.ndarray) -> ColumnStatistics:
    """:class:`ColumnStatistics` of candidates ``raw`` (n × F, NaN = not retrieved; a float32 or float64 array or
    memory map, read in blocks of whole queries) grouped by ``offsets``: two passes, the largest scores first
    (they set the prescale), then every query's spread sums."""
    raw = score_matrix(raw)
    offsets = np.asarray(offsets, dtype=np.int64)
    top = column_top(raw, offsets)
    prescale = power_of_two_scale(top)
    n_queries, n_funcs = len(offsets) - 1, raw.shape[1]
    sumsq = np.zeros((n_queries, n_funcs))
    counts = np.zeros((n_queries, n_funcs), dtype=np.int64)
    varies = np.zeros((n_queries, n_funcs), dtype=np.bool_)
    for block in query_blocks(raw, offsets):
        rows = slice(block.first, block.first + block.n_queries)
        sumsq[rows], counts[rows], varies[rows] = query_spread_sums(block.values, block.offsets, prescale)
    return statistics_from_sums(top, sumsq, counts, varies, np.diff(offsets))


def check_unnormalised_range(top: np.ndarray, base_names: Optional[Sequence[str]] = None) -> None:
    """ValueError naming the first function whose largest |score| ``top`` exceeds :data:`UNNORMALISED_LIMIT`
    (``normalise=None`` keeps scores as they are, and the solver's sums of their squares would overflow)."""
    bad = np.flatnonzero(np.asarray(top) > UNNORMALISED_LIMIT)
    if len(bad):
        f = int(bad[0])
        name = base_names[f] if base_names is not None else f"column {f}"
        raise ValueError(f"base function {name} has scores up to {top[f]:.3g} in magnitude, too large for "
                         f"normalise=None (scores as they are, up to ±{UNNORMALISED_LIMIT:g}): use normalise='query' "
                         "(the default: scores standardised within queries) or rescale that function")


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

    def query_sumsq(self, offsets: np.ndarray) -> np.ndarray:
        """Per query, Σ_d ‖φ(d) − φ̄_q‖² over the block's dimensions (:func:`._kernels.binned_spread`)."""
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        out = np.zeros(len(offsets) - 1)
        kernels().binned_spread(self.codes, offsets, self.n_thresholds, out)
        return out

    def take(self, rows: np.ndarray) -> "BinnedBlock":
        return self._with_codes(np.ascontiguousarray(self.codes[rows]))

    def rows(self, start: int, stop: int) -> "BinnedBlock":
        """Rows ``start`` … ``stop`` − 1, a view of the codes (no copy)."""
        return self._with_codes(self.codes[start:stop])

    def _with_codes(self, codes: np.ndarray) -> "BinnedBlock":
        out = BinnedBlock.__new__(BinnedBlock)                 # codes already checked and compact
        out.__setstate__({"codes": codes, "n_thresholds": self.n_thresholds})
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

    def query_sumsq(self, offsets: np.ndarray) -> np.ndarray:
        """Per query, Σ_d ‖φ(d) − φ̄_q‖² over the block's columns."""
        offsets = np.asarray(offsets, dtype=np.int64)
        sizes = np.diff(offsets)
        out = np.zeros(len(sizes))
        full = sizes > 0
        if not full.any() or not self.values.shape[1]:
            return out
        starts = offsets[:-1][full]
        means = np.add.reduceat(self.values, starts, axis=0) / sizes[full][:, None]
        dev = self.values - np.repeat(means, sizes[full], axis=0)
        out[full] = np.add.reduceat((dev * dev).sum(axis=1), starts)
        return out

    def take(self, rows: np.ndarray) -> "DenseBlock":
        return DenseBlock(self.values[rows])

    def rows(self, start: int, stop: int) -> "DenseBlock":
        """Rows ``start`` … ``stop`` − 1, a view of the values (no copy)."""
        return DenseBlock(self.values[start:stop])


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

    def rows(self, start: int, stop: int) -> "FeatureMatrix":
        """Candidates ``start`` … ``stop`` − 1, views of the blocks (no copy)."""
        return FeatureMatrix([b.rows(start, stop) for b in self.blocks])

    def query_sumsq(self, offsets: np.ndarray) -> np.ndarray:
        """Per query, Σ_d ‖φ(d) − φ̄_q‖² (φ̄_q the mean of the query's candidates), the blocks added in order."""
        if not self.blocks:
            return np.zeros(len(offsets) - 1)
        return np.sum([b.query_sumsq(offsets) for b in self.blocks], axis=0)

    def spread(self, offsets: np.ndarray) -> float:
        """R² = the mean over candidates of ‖φ(d) − φ̄_q‖², φ̄_q the mean of d's query: the scale of the
        differences between candidates of one query, which are all a ranking constraint sees (the unit of
        ``C="auto"``'s grid, :func:`~pyterrier_svmmap.selection.resolve_c_grid`)."""
        return spread_of(self.query_sumsq(offsets), self.n_rows if self.blocks else 0)

    def dense(self) -> np.ndarray:
        """The explicit matrix (tests and small data only)."""
        eye = np.eye(self.dim)
        return np.stack([self.dot(e) for e in eye], axis=1)


def spread_of(query_sumsq: np.ndarray, n_candidates: int) -> float:
    """R² from every query's Σ_d ‖φ(d) − φ̄_q‖² in query order (:meth:`FeatureMatrix.query_sumsq`; a cluster
    stacks its shards' in shard order, for the same bits) and the number of candidates."""
    return float(np.asarray(query_sumsq).sum() / n_candidates) if n_candidates else 0.0


# ---------------------------------------------------------------------------------------------
# the encoder: learns thresholds on training candidates, then encodes any candidates
# ---------------------------------------------------------------------------------------------
def parse_blocks(features: Union[str, Sequence[str]]) -> Tuple[str, ...]:
    """``"bins+minmax"`` or ``["bins", "minmax"]`` → ``("bins", "minmax")``, validated."""
    parts = features.split("+") if isinstance(features, str) else list(features)
    parts = tuple(p.strip() for p in parts)
    bad = [p for p in parts if p not in BLOCK_KINDS]
    if not parts or bad or len(set(parts)) != len(parts):
        raise ValueError(f"features={features!r} is not valid: give one or more of {tuple(BLOCK_KINDS)}, "
                         "joined by '+' (e.g. 'bins+minmax'), each at most once")
    return parts


def function_thresholds(sample: np.ndarray, n_bins: int) -> np.ndarray:
    """(F, ``n_bins``) ascending thresholds per column of ``sample`` (a function's raw scores).

    The first is −inf, so its indicator says "the function retrieved this candidate" and a missing
    candidate (code 0) is told apart from the lowest retrieved ones; the others are the scores at
    quantiles 1/n_bins, 2/n_bins, ... (``method="lower"``) of the function's retrieved scores
    (:func:`pad_thresholds`, :func:`lower_quantiles`), functions spread over
    :func:`~pyterrier_svmmap.threads.current` threads."""
    sample = np.asarray(sample)
    columns = [sample[:, f] for f in range(sample.shape[1])]
    return _thresholds_of_columns(columns, n_bins, retrieved=False)


def lower_quantiles(values: np.ndarray, n_bins: int) -> np.ndarray:
    """The retrieved ``values``' quantiles 1/n_bins, …, (n_bins − 1)/n_bins of method ``"lower"`` (those of
    ``np.quantile``): the sorted values at ⌊(m − 1)·k/n_bins⌋, m the number of values; sorts ``values`` in
    place (numpy's sort, which releases the GIL)."""
    values.sort()
    levels = np.arange(1, n_bins) / n_bins
    return values[np.floor((len(values) - 1) * levels).astype(np.int64)].astype(float)


def _thresholds_of_columns(columns: List[np.ndarray], n_bins: int, retrieved: bool) -> np.ndarray:
    """:func:`pad_thresholds` of every column's :func:`lower_quantiles` (``retrieved``: the columns hold only
    retrieved scores, else their NaN are left out first), columns spread over threads."""
    def one(f: int) -> np.ndarray:
        col = columns[f]
        if not retrieved:
            col = col[~np.isnan(col)]
        columns[f] = None
        if n_bins == 1 or not len(col):
            return pad_thresholds(np.zeros(0), n_bins)
        return pad_thresholds(lower_quantiles(col, n_bins), n_bins)
    return np.stack(threads.run(one, len(columns))) if columns else np.zeros((0, n_bins))


#: bytes of threshold samples gathered in one pass over the scores (more columns take more passes): a quarter of
#: the 8 GB a fit of 10⁸ candidates × 16 functions is held to, so that such a fit gathers in one to four passes
SAMPLE_BYTES = 1 << 31


def sample_thresholds(raw, offsets: np.ndarray, n_bins: int, depth: Optional[int] = None,
                      max_bytes: Optional[int] = None) -> np.ndarray:
    """:func:`function_thresholds` of the training candidates ``raw`` (or, with ``depth``, of each query's top
    ``depth`` scores per function, :func:`top_of_queries`) read in blocks of whole queries: the same thresholds
    with memory bounded by the sample, not the matrix.

    The exact method: per function, every sampled retrieved score is gathered (in ``raw``'s dtype, float32 or
    float64, which holds every score exactly; :func:`._kernels.gather_columns`), sorted, and read at the
    quantiles' ranks (:func:`lower_quantiles`). Functions are gathered a group at a time, about ``max_bytes``
    (default :data:`SAMPLE_BYTES`) of samples per pass over the scores: one pass for a sample that fits, more
    for a larger one; nothing else of the size of the scores is held.

    Parameters
    ----------
    raw : numpy.ndarray
        (n, F) scores, NaN = not retrieved: a float32 or float64 array or memory map, or
        :class:`~pyterrier_svmmap.chunks.QueryRows`.
    offsets : numpy.ndarray
        (Q + 1,) query boundaries.
    n_bins : int
        Thresholds per function.
    depth : int, optional
        The ``threshold_depth``: sample each query's ``depth`` highest scores per function.
    max_bytes : int, optional
        The samples' bytes per pass.

    Returns
    -------
    numpy.ndarray
        (F, n_bins) thresholds, as :func:`function_thresholds` of the whole sample.
    """
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
    store = gathered = None
    for f0 in range(0, n_funcs, group):
        f1 = min(n_funcs, f0 + group)
        if store is None:                         # one store for every group: its memory is touched once
            store = np.empty((group, max(1, per_function // dtype.itemsize)), dtype=dtype)
        filled = np.zeros(f1 - f0, dtype=np.int64)
        for block in query_blocks(raw, offsets):
            if gathered is None or gathered.shape[1] < len(block.values):
                gathered = np.empty((group, len(block.values)))
            counts = np.zeros(f1 - f0, dtype=np.int64)
            bounds = threads.even_bounds(f1 - f0, min(f1 - f0, threads.pieces(block.values.size)))

            def gather(i: int) -> None:           # functions, not rows: each column's scores stay in row order
                j0, j1 = int(bounds[i]), int(bounds[i + 1])
                jit.gather_columns(block.values, block.offsets, -1 if depth is None else int(depth),
                                   f0 + j0, f0 + j1, gathered[j0:j1], counts[j0:j1])
            threads.run(gather, len(bounds) - 1)
            need = int((filled + counts).max())
            if need > store.shape[1]:             # ties at the depth kept more than depth scores
                grown = np.empty((len(store), max(need, 2 * store.shape[1])), dtype=dtype)
                grown[:, :store.shape[1]] = store
                store = grown
            for j in range(f1 - f0):
                store[j, filled[j]:filled[j] + counts[j]] = gathered[j, :counts[j]]
            filled += counts
        out.append(_thresholds_of_columns([store[j, :filled[j]] for j in range(f1 - f0)], n_bins, retrieved=True))
    return np.concatenate(out)


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

    Parameters
    ----------
    features : str or sequence of str, default "bins"
        The blocks of φ (:data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS`, joined by ``+``).
    n_bins : int, default 50
        |K_f|, thresholds per function of a block with thresholds.
    binning : {'quantile', 'minmax', 'percentile'}, default 'quantile'
        How scores are scaled before thresholds apply.
    threshold_depth : int or None, default None
        Quantile binning only: the quantiles over each training query's top ``threshold_depth`` candidates of
        the function instead of over all candidates, so that the thresholds sit where rankings are decided (the
        paper's "sensitive region") rather than among the many low-scoring candidates.
    normalise : {'query', None}, default 'query'
        The ``raw`` block's scale (see the module doc).

    Notes
    -----
    Learned by :meth:`fit`: ``thresholds_`` ((F, n_bins), None without bins; a function that carries no
    ranking information has thresholds +inf, so its codes are 0), ``prescale_`` (F powers of two),
    ``column_scale_`` (the factor of each function's score column in the dense blocks: 1/spread with
    ``normalise="query"``, else 1; 0 for a function whose scores never vary within a training query) and
    ``indicator_scale_`` (1, or 0 for a "retrieved" indicator that never varies within a training query).
    """

    features: Union[str, Sequence[str]] = "bins"
    n_bins: int = 50
    binning: str = "quantile"
    threshold_depth: Optional[int] = None
    normalise: Optional[str] = "query"
    thresholds_: np.ndarray = field(default=None, repr=False)   # (F, n_bins) or None without bins
    n_functions_: int = field(default=None, repr=False)
    prescale_: np.ndarray = field(default=None, repr=False)
    column_scale_: np.ndarray = field(default=None, repr=False)
    indicator_scale_: np.ndarray = field(default=None, repr=False)

    def __post_init__(self):
        self.blocks = parse_blocks(self.features)
        if self.binning not in BINNINGS:
            raise ValueError(f"binning={self.binning!r} is not valid; choose one of {BINNINGS}")
        if self.normalise not in NORMALISATIONS:
            raise ValueError(f"normalise={self.normalise!r} is not valid; choose 'query' (scores standardised "
                             "within queries, the default) or None (the scores as they are)")
        if self.threshold_depth is not None and int(self.threshold_depth) < 1:
            raise ValueError(f"threshold_depth must be a positive number of candidates, got {self.threshold_depth}")
        if int(self.n_bins) < 1:
            raise ValueError(f"n_bins must be at least 1, got {self.n_bins}")

    def fit(self, raw, offsets: np.ndarray, base_names: Optional[Sequence[str]] = None) -> "FeatureEncoder":
        """Learn the thresholds and scales on training candidates (``raw``: candidates × base functions, NaN =
        not retrieved, a float32 or float64 array or memory map, read in blocks of whole queries and never
        copied whole; ``offsets``: query boundaries); ``base_names`` name the functions in errors.

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.
        base_names : sequence of str, optional
            A name per base function.

        Returns
        -------
        self
        """
        raw = score_matrix(raw)
        offsets = np.asarray(offsets, dtype=np.int64)
        thresholds = None
        if self.fits_thresholds:
            thresholds = sample_thresholds(raw, offsets, self.n_bins, self.threshold_depth)
        return self.fit_statistics(column_statistics(raw, offsets), thresholds, base_names)

    def fit_statistics(self, stats: ColumnStatistics, thresholds: Optional[np.ndarray] = None,
                       base_names: Optional[Sequence[str]] = None) -> "FeatureEncoder":
        """:meth:`fit` from what it learns from the data: the functions' :class:`ColumnStatistics` and, for
        quantile bins, their thresholds (:func:`function_thresholds`), however they were computed (one
        process or the shards of a cluster).

        Parameters
        ----------
        stats : ColumnStatistics
            The functions' statistics (:func:`column_statistics`, or summed over shards).
        thresholds : ndarray of shape (F, n_bins), optional
            Quantile bins' thresholds (:func:`sample_thresholds`).
        base_names : sequence of str, optional
            A name per base function.

        Returns
        -------
        self
        """
        self.n_functions_ = len(stats.top)
        if "raw" in self.blocks and self.normalise is None:
            check_unnormalised_range(stats.top, base_names)
        self.prescale_ = stats.prescale
        if self.normalise == "query":
            spread = np.where(stats.spread > 0, stats.spread, np.finfo(float).tiny)
            self.column_scale_ = np.where(stats.score_varies, 1.0 / spread, 0.0)
        else:
            self.column_scale_ = stats.score_varies.astype(float)
        self.indicator_scale_ = stats.retrieval_varies.astype(float)
        self.thresholds_ = None
        if any(BLOCK_KINDS[kind].thresholds for kind in self.blocks):
            if self.binning == "quantile":
                self.thresholds_ = np.array(thresholds, dtype=float)
            else:
                self.thresholds_ = np.tile(even_thresholds(self.n_bins), (self.n_functions_, 1))
            self.thresholds_[~stats.score_varies, 1:] = np.inf         # no score dimension: codes 0 or 1
            self.thresholds_[~stats.score_varies & ~stats.retrieval_varies, 0] = np.inf     # nor an indicator
        return self

    @property
    def fits_thresholds(self) -> bool:
        """Whether :meth:`fit` learns thresholds from the scores (a block that uses them, quantile binning)."""
        return self.binning == "quantile" and any(BLOCK_KINDS[kind].thresholds for kind in self.blocks)

    @property
    def normalises(self) -> bool:
        """Whether the dense blocks' columns are scaled (``prescale_`` known: fitted by this version)."""
        return self.prescale_ is not None

    def transform(self, raw, offsets: np.ndarray) -> FeatureMatrix:
        """φ of candidates ``raw`` (n × F, a float32 or float64 array or memory map) grouped by ``offsets``,
        computed in blocks of whole queries: only φ is allocated (bin codes; the dense blocks' columns).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        FeatureMatrix
            φ, one block per kind of ``features``.
        """
        raw = score_matrix(raw)
        offsets = np.asarray(offsets, dtype=np.int64)
        if self.n_functions_ is None:
            raise RuntimeError("FeatureEncoder.transform called before fit")
        if raw.ndim != 2 or raw.shape[1] != self.n_functions_:
            raise ValueError(f"the model was trained on {self.n_functions_} base functions but these "
                             f"candidates have {raw.shape[1] if raw.ndim == 2 else raw.shape}; use the same "
                             "RunFeatures as in training")
        blocks: List[Block] = []
        for kind in self.blocks:
            block = BLOCK_KINDS[kind]
            if block.dense:
                blocks.append(DenseBlock(self.dense_values(kind, raw, offsets)))
            else:
                blocks.append(BinnedBlock(block.values(self, raw, offsets), self.n_bins))
        return FeatureMatrix(blocks)

    def dense_values(self, kind: str, raw, offsets: np.ndarray) -> np.ndarray:
        """(n, 2F) columns of a dense block kind (:data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS`): its
        values, then the "retrieved" indicators (times ``indicator_scale_``), filled block of whole queries by
        block.

        Parameters
        ----------
        kind : str
            A block kind of :data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS` (or ``"bias"``).
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, 2F)
        """
        n, n_funcs = raw.shape
        out = np.empty((n, 2 * n_funcs))
        for block in query_blocks(raw, np.asarray(offsets, dtype=np.int64)):
            part, offs = block.values, block.offsets
            missing = np.isnan(part)
            out[block.start:block.stop, :n_funcs] = BLOCK_KINDS[kind].values(self, part, offs)
            out[block.start:block.stop, n_funcs:] = ~missing if self.indicator_scale_ is None else \
                ~missing * self.indicator_scale_
        return out

    def filled_scores(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The scores as they are, a missing one as its query's lowest of that function (0 when the function
        retrieved none of the query's candidates).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F)
        """
        lo, _ = query_min_max(raw, offsets)
        fill = np.nan_to_num(lo[query_ids(offsets)], nan=0.0)
        return np.where(np.isnan(raw), fill, raw)

    def minmax_scores(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The scores min–max normalised per query and function, missing → 0.

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F)
        """
        return np.nan_to_num(minmax_normalise(raw, offsets), nan=0.0)

    def masked(self, values: np.ndarray) -> np.ndarray:
        """Dense block ``values`` with the columns of functions whose scores never vary within a training query
        set to 0 (a model of an earlier version, which scales nothing, keeps them).

        Parameters
        ----------
        values : ndarray of shape (n, F)
            A dense block's score columns.

        Returns
        -------
        ndarray of shape (n, F)
        """
        return values * (self.column_scale_ != 0) if self.normalises else values

    def standardise(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The ``raw`` block's scores with ``normalise="query"``: (f − min_q f)·``column_scale_`` per query and
        function, missing → 0 (:func:`standardise_scores`).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F)
        """
        return standardise_scores(raw, offsets, self.prescale_, self.column_scale_)

    def score_extent(self, raw: np.ndarray, offsets: np.ndarray, function: int) -> Tuple[float, float]:
        """The (min, max) of base function ``function``'s score column in the ``raw`` block on candidates
        ``raw`` ((0, 0) when it retrieved none of them). Its range is the unit of the prior's weight (a weight of
        1/(max − min) gives that column a range of 1 on these candidates); a cluster takes the min and max over
        its shards.

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.
        function : int
            The index of a base function.

        Returns
        -------
        (float, float)
            The column's minimum and maximum.
        """
        col = raw[:, function]
        if not np.isfinite(col).any():
            return 0.0, 0.0
        if self.normalise == "query" and self.normalises:
            one = slice(function, function + 1)
            return 0.0, float(standardise_scores(np.asarray(col, dtype=float)[:, None], offsets, self.prescale_[one],
                                                 self.column_scale_[one]).max())
        return float(np.nanmin(col)), float(np.nanmax(col))

    def bin_codes(self, raw, offsets: np.ndarray) -> np.ndarray:
        """Number of thresholds each score exceeds, per (candidate, function); missing → 0. Computed in blocks
        of whole queries (:func:`._kernels.bin_codes`, rows spread over threads).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F), uint8 or uint16
        """
        raw = score_matrix(raw)
        dtype = np.uint8 if self.n_bins < 256 else np.uint16
        codes = np.zeros(raw.shape, dtype=dtype)
        if not len(raw):
            return codes
        jit = kernels()
        thresholds = np.ascontiguousarray(self.thresholds_, dtype=float)
        for block in query_blocks(raw, np.asarray(offsets, dtype=np.int64)):
            scaled = np.ascontiguousarray(scale_for_binning(block.values, block.offsets, self.binning), dtype=float)
            out = codes[block.start:block.stop]
            bounds = threads.even_bounds(len(scaled), threads.pieces(scaled.size))
            threads.run(lambda i: jit.bin_codes(scaled[bounds[i]:bounds[i + 1]], thresholds,
                                                out[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
        return codes

    def feature_names(self, base_names: Sequence[str]) -> List[str]:
        """A readable name per dimension of φ, in the weight vector's order.

        Parameters
        ----------
        base_names : sequence of str
            A name per base function.

        Returns
        -------
        list of str
        """
        return [name for kind in self.blocks for name in BLOCK_KINDS[kind].names(self, base_names)]
