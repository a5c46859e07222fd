"""Compiled kernels (numba) of :mod:`pyterrier_svmmap.products`: matrix-vector products and dot products that
add in a fixed order, the same bits as their numpy references there.

* :func:`pairwise`: numpy's ``pairwise_sum`` (what ``x.sum()`` does on a contiguous array: blocks of ≤ 128
  summed with 8 interleaved partial sums, halved at a multiple of 8 above);
* :func:`rows_dot`: ``out[i] = pairwise(M[i] * x)``, numpy's ``(M * x).sum(axis=1)``;
* :func:`weighted_rows`: ``out[j] = Σ_i c[i]·M[i, j]``, the rows added in order from the first, numpy's
  ``(c[:, None] * M).sum(axis=0)``;
* :func:`dot`: ``pairwise(x * y)``, numpy's ``(x * y).sum()``.

Loaded lazily through :mod:`pyterrier_svmmap._jit`; the other kernel modules import :func:`pairwise` from here.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: numpy's pairwise-summation block (``PW_BLOCKSIZE`` in its loops_utils)
PW_BLOCK = 128


@njit(cache=True, nogil=True)
def pairwise_block(buf, lo, n):
    """numpy's ``pairwise_sum`` of ``buf[lo:lo + n]`` for n ≤ 128 (one block: no halving)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += buf[i]
        return res
    r0 = buf[lo]
    r1 = buf[lo + 1]
    r2 = buf[lo + 2]
    r3 = buf[lo + 3]
    r4 = buf[lo + 4]
    r5 = buf[lo + 5]
    r6 = buf[lo + 6]
    r7 = buf[lo + 7]
    m = n - n % 8
    for i in range(lo + 8, lo + m, 8):
        r0 += buf[i]
        r1 += buf[i + 1]
        r2 += buf[i + 2]
        r3 += buf[i + 3]
        r4 += buf[i + 4]
        r5 += buf[i + 5]
        r6 += buf[i + 6]
        r7 += buf[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(lo + m, lo + n):
        res += buf[i]
    return res


@njit(cache=True, nogil=True)
def pairwise(buf, n):
    """numpy's ``pairwise_sum`` of ``buf[:n]``: blocks of ≤ 128 summed by :func:`pairwise_block`, halved
    (at a multiple of 8) above, the halves added left + right. An explicit stack, not recursion (numba's
    cache cannot reload recursive functions)."""
    if n <= PW_BLOCK:
        return pairwise_block(buf, np.int64(0), n)     # np.int64: compiled once, not per literal
    los = np.empty(64, np.int64)
    ns = np.empty(64, np.int64)
    stage = np.empty(64, np.int64)
    vals = np.empty(64)
    top = 0
    nv = 0
    los[0] = 0
    ns[0] = n
    stage[0] = 0
    while top >= 0:
        lo = los[top]
        m = ns[top]
        if m <= PW_BLOCK:
            vals[nv] = pairwise_block(buf, lo, m)
            nv += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if stage[top] == 0:                       # left half first
            stage[top] = 1
            top += 1
            los[top] = lo
            ns[top] = half
            stage[top] = 0
        elif stage[top] == 1:                     # then the right half
            stage[top] = 2
            top += 1
            los[top] = lo + half
            ns[top] = m - half
            stage[top] = 0
        else:                                     # both done: left + right
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
            top -= 1
    return vals[0]


@njit(cache=True, nogil=True)
def rows_dot(M, x, out):
    """``out[i] = Σ_j M[i, j]·x[j]``, the products of a row summed by :func:`pairwise`."""
    n, dim = M.shape
    buf = np.empty(dim)
    for i in range(n):
        for j in range(dim):
            buf[j] = M[i, j] * x[j]
        out[i] = pairwise(buf, dim)


@njit(cache=True, nogil=True)
def weighted_rows(c, M, j0, j1, out):
    """``out[j] = Σ_i c[i]·M[i, j]`` for the columns j0 ≤ j < j1, the rows added in order from the first; a
    column's sum is the same whichever range it is computed in, so ranges may run on different threads."""
    n = M.shape[0]
    if n == 0:
        for j in range(j0, j1):
            out[j] = 0.0
        return
    c0 = c[0]
    for j in range(j0, j1):
        out[j] = c0 * M[0, j]
    for i in range(1, n):
        ci = c[i]
        for j in range(j0, j1):
            out[j] += ci * M[i, j]


@njit(cache=True, nogil=True)
def dot(x, y):
    """``Σ_j x[j]·y[j]``, the products summed by :func:`pairwise`."""
    n = x.shape[0]
    buf = np.empty(n)
    for j in range(n):
        buf[j] = x[j] * y[j]
    return pairwise(buf, n)
