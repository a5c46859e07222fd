"""φ of a set of candidates held as blocks side by side, never materialised as one matrix.

All the solver asks of φ is Φw (every candidate's score under w) and Φᵀc (a constraint's joint feature
vector, Σ_d c_d φ(d)), plus rows of whole queries and the per-query spread that sets ``C="auto"``'s unit. A
:class:`BinnedBlock` keeps one small integer code per (candidate, function) for the threshold indicators
(Yue et al. 2007 §4.2) and computes its products with compiled kernels; a :class:`DenseBlock` keeps real
columns and adds in a fixed order. Either way each sum is added in one order wherever it runs, so products do
not depend on threads, BLAS or where the rows are cut.
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

import pyterrier_svmmap.products as products
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features import kernels


class BinnedBlock:
    """Indicator features 1[f(d) > k] as bin codes: ``codes[d, f]`` ∈ 0..T (in :func:`code_dtype`) is the number of
    f's thresholds that d's score exceeds; F·T dimensions, function by function, thresholds ascending."""

    def __init__(self, codes: np.ndarray, n_thresholds: int):
        self.n_thresholds = int(n_thresholds)
        if self.n_thresholds < 0:
            raise ValueError(f"n_thresholds must be ≥ 0, got {n_thresholds}")
        codes = np.asarray(codes)
        if codes.ndim != 2:
            raise ValueError(f"codes must be a (candidates, functions) array, got shape {codes.shape}")
        if codes.size and codes.dtype.kind not in "biu":
            raise ValueError(f"bin codes must be integers, got dtype {codes.dtype}")
        if codes.size and (codes.min() < 0 or codes.max() > self.n_thresholds):
            raise ValueError(f"bin codes must lie in 0..{n_thresholds} (the number of thresholds), "
                             f"got {codes.min()}..{codes.max()}")
        self.codes = np.ascontiguousarray(codes.astype(code_dtype(self.n_thresholds), copy=False))

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
        # rows: each one's sum is the same anywhere
        threads.run_ranges(lambda lo, hi: jit.binned_dot(self.codes[lo:hi], cum, out[lo:hi]), n, n)
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
        threads.run_ranges(lambda lo, hi: jit.binned_rdot(self.codes, c, self.n_thresholds, lo, hi, out), n_funcs,
                           n * n_funcs // 4)
        return out

    def query_sumsq(self, offsets: np.ndarray) -> np.ndarray:
        """Per query, Σ_d ‖φ(d) − φ̄_q‖² over the block's dimensions (:func:`._kernels.binned_spread`, blocks of
        queries on threads)."""
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        out = np.zeros(len(offsets) - 1)
        jit = kernels()
        threads.run_query_blocks(lambda lo, hi: jit.binned_spread(self.codes, offsets[lo:hi + 1], self.n_thresholds,
                                                                  out[lo:hi]), offsets)
        return out

    def take(self, rows: np.ndarray) -> "BinnedBlock":
        return self._with_codes(np.ascontiguousarray(self.codes[rows]))

    def rows(self, start: int, stop: int) -> "BinnedBlock":
        """Rows ``start`` … ``stop`` − 1, a view of the codes (no copy)."""
        return self._with_codes(self.codes[start:stop])

    def _with_codes(self, codes: np.ndarray) -> "BinnedBlock":
        out = BinnedBlock.__new__(BinnedBlock)                 # codes already checked and compact
        out.codes, out.n_thresholds = codes, self.n_thresholds
        return out


def code_dtype(n_thresholds: int) -> np.dtype:
    """The smallest unsigned integer type holding the codes 0..``n_thresholds``."""
    return np.dtype(np.min_scalar_type(int(n_thresholds)))


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
        """Per query, Σ_d ‖φ(d) − φ̄_q‖² over the block's columns: blocks of queries on threads, each in pieces of
        about :data:`SUMSQ_ROWS` rows (every query's sums are the same however the queries are cut)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        out = np.zeros(len(offsets) - 1)
        if not self.values.shape[1]:
            return out

        def block(lo: int, hi: int) -> None:
            cuts = lo + threads.query_bounds(offsets[lo:hi + 1], -(-int(offsets[hi] - offsets[lo]) // SUMSQ_ROWS))
            for a, b in zip(cuts[:-1], cuts[1:]):
                _query_sumsq(self.values[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a], out[a:b])
        threads.run_query_blocks(block, offsets)
        return out

    def take(self, rows: np.ndarray) -> "DenseBlock":
        return type(self)(self.values[rows])

    def rows(self, start: int, stop: int) -> "DenseBlock":
        """Rows ``start`` … ``stop`` − 1, a view of the values (no copy)."""
        return type(self)(self.values[start:stop])


Block = Union[BinnedBlock, DenseBlock]

SUMSQ_ROWS = 1 << 14
"""Rows of a piece of :meth:`DenseBlock.query_sumsq`: its temporaries stay in the cache."""


def _query_sumsq(values: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    """``out[q]`` = Σ_d ‖φ(d) − φ̄_q‖² for the queries of ``offsets`` (empty ones left as they are)."""
    sizes = np.diff(offsets)
    full = sizes > 0
    if not full.any():
        return
    starts = offsets[:-1][full]
    means = np.add.reduceat(values, starts, axis=0) / sizes[full][:, None]
    dev = values - np.repeat(means, sizes[full], axis=0)
    out[full] = np.add.reduceat((dev * dev).sum(axis=1), starts)


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
        out = np.asarray(b.dot(w[lo:hi]), dtype=float)        # = 0 + first block (a new array: no copy)
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
        """Per query, Σ_d ‖φ(d) − φ̄_q‖² (φ̄_q the mean of the query's candidates), the blocks added in order; each
        block's sums are kept with it, for a matrix that shares the block (a combined feature block's)."""
        if not self.blocks:
            return np.zeros(len(offsets) - 1)
        key = np.asarray(offsets, dtype=np.int64).tobytes()
        for b in self.blocks:
            kept = b.__dict__.setdefault("_query_sumsq", {})
            if key not in kept:
                kept[key] = b.query_sumsq(offsets)
        return np.sum([b._query_sumsq[key] for b in self.blocks], axis=0)

    def spread(self, offsets: np.ndarray) -> float:
        """R² = the mean over candidates of ‖φ(d) − φ̄_q‖², the scale of what a ranking constraint sees (the unit of
        ``C="auto"``'s grid, :func:`~pyterrier_svmmap.selection.resolve_c_grid`)."""
        return spread_of(self.query_sumsq(offsets), self.n_rows if self.blocks else 0)

    def dense(self) -> np.ndarray:
        """The explicit matrix (tests and small data only)."""
        eye = np.eye(self.dim)
        return np.stack([self.dot(e) for e in eye], axis=1)


def spread_of(query_sumsq: np.ndarray, n_candidates: int) -> float:
    """R² from every query's :meth:`FeatureMatrix.query_sumsq` in query order (a cluster's too) and the candidates."""
    return float(np.asarray(query_sumsq).sum() / n_candidates) if n_candidates else 0.0
