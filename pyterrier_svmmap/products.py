"""Products that add in a fixed order: M·x, cᵀM and x·y for the learners' sums.

A BLAS (numpy's ``@``) adds in an order that depends on the CPU kernel it picks and on its threads, so a fit's
last bits changed with the BLAS threads (and a Dask worker, which runs one, disagreed with the driver). These add
in one order everywhere: compiled (:mod:`._product_kernels`, each output's sum computed whole by one of the call's
:mod:`~pyterrier_svmmap.threads`) once numba is loaded (a fit loads it), else numpy's elementwise products and
reductions below, the reference, with the same bits (so that scoring alone does not pay numba's start-up).
"""
from __future__ import annotations

import sys

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.threads as threads


def _kernels():
    """The compiled kernels when numba is already loaded in this process, else None (numpy's path)."""
    return _jit.load("_product_kernels") if "numba" in sys.modules else None


#: numpy's pairwise-summation block (``PW_BLOCKSIZE`` in its loops_utils): a product of up to this many terms is
#: summed in 8 partial sums, as numpy's pairwise sum of one block
PW_BLOCK = 128
#: the partial sums of a longer product, so that the adds of a long row run side by side
WIDE = 32


def products_sum(P: np.ndarray) -> np.ndarray:
    """Each row's sum of the products ``P`` (n × d) in the kernels' fixed order (numpy's reference of
    :func:`._product_kernels.rows_dot`): fewer than 8 terms one after the other from 0.0; otherwise k = 8
    partial sums (up to 128 terms, which is numpy's pairwise sum) or 32 (above), over the terms i ≡ l (mod k)
    below the last multiple m of k, each added in order; halved by adding neighbours; then the tail."""
    n, d = P.shape
    k = 8 if d <= PW_BLOCK else WIDE
    m = d - d % k if d >= 8 else 0                 # the terms in partial sums (none below 8)
    res = np.zeros(n)
    if m:
        acc = P[:, :k].copy()
        for j in range(k, m, k):
            acc += P[:, j:j + k]
        while acc.shape[1] > 1:
            acc = acc[:, 0::2] + acc[:, 1::2]
        res = acc[:, 0]
    for j in range(m, d):
        res = res + P[:, j]
    return res


def rows_dot(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``M @ x`` (M two-dimensional), each row's products summed by :func:`products_sum` (up to 128 columns,
    numpy's own ``(M * x).sum(axis=1)``)."""
    M, x = np.asarray(M, dtype=float), np.asarray(x, dtype=float)
    if M.ndim != 2 or x.shape != (M.shape[1],):
        raise ValueError(f"cannot multiply a matrix of shape {M.shape} by a vector of shape {x.shape}")
    jit = _kernels()
    if jit is None:
        return products_sum(M * x)
    M, x, out = np.ascontiguousarray(M), np.ascontiguousarray(x), np.empty(len(M))
    threads.run_ranges(lambda lo, hi: jit.rows_dot(M[lo:hi], x, out[lo:hi]), len(M), M.size // 64)   # 10⁶ a piece
    return out


def weighted_rows(c: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``c @ M`` = Σ_i c_i M_i, the rows added in order (numpy's ``(c[:, None] * M).sum(axis=0)``)."""
    M, c = np.asarray(M, dtype=float), np.asarray(c, dtype=float)
    if M.ndim != 2 or c.shape != (M.shape[0],):
        raise ValueError(f"cannot weight the rows of a matrix of shape {M.shape} by a vector of shape {c.shape}")
    jit = _kernels()
    if jit is None:
        return (c[:, None] * M).sum(axis=0)
    M, c, out = np.ascontiguousarray(M), np.ascontiguousarray(c), np.empty(M.shape[1])
    threads.run_ranges(lambda j0, j1: jit.weighted_rows(c, M, j0, j1, out), M.shape[1], M.size // 64)
    return out


def dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x @ y`` for two vectors: :func:`rows_dot` of the one row ``x``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"cannot take the dot product of vectors of shapes {x.shape} and {y.shape}")
    return float(rows_dot(x[None, :], y)[0])
