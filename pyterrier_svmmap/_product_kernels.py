"""Compiled kernels (numba) of :mod:`pyterrier_svmmap.products`: sums of products that add in a fixed order, the
same bits as their numpy references there, and :func:`pairwise` (numpy's own ``pairwise_sum``), which the other
kernel modules import from here. Loaded lazily through :mod:`pyterrier_svmmap._jit`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pyterrier_svmmap.products import PW_BLOCK, WIDE


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
    """numpy's ``pairwise_sum`` of ``buf[:n]``, with an explicit stack (numba's cache cannot reload recursion)."""
    if n <= PW_BLOCK:
        return pairwise_block(buf, np.int64(0), n)     # np.int64: compiled once, not per literal
    los, ns = np.empty(256, np.int64), np.empty(256, np.int64)    # pending ranges; ns = -1: add the top two sums
    vals = np.empty(64)                                           # the sums computed, not yet added
    los[0], ns[0] = 0, n
    top, nv = 0, 0
    while top >= 0:
        lo, m = los[top], ns[top]
        top -= 1
        if m < 0:                                 # both halves done: left + right
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        elif m <= PW_BLOCK:
            vals[nv] = pairwise_block(buf, lo, m)
            nv += 1
        else:                                     # the left half, then the right half, then their sum
            half = m // 2
            half -= half % 8
            ns[top + 1] = -1
            los[top + 2], ns[top + 2] = lo + half, m - half
            los[top + 3], ns[top + 3] = lo, half
            top += 3
    return vals[0]


def _lanes(k):
    """:func:`rows_dot` with ``k`` partial sums per row, compiled for that literal ``k`` (added side by side)."""
    @njit(cache=True, nogil=True, boundscheck=False)
    def rows(M, x, out):
        n, dim = M.shape
        m = dim - dim % k
        acc = np.empty(k)
        for i in range(n):
            for l in range(k):
                acc[l] = M[i, l] * x[l]
            for j in range(k, m, k):
                for l in range(k):
                    acc[l] += M[i, j + l] * x[j + l]
            width = k
            while width > 1:
                width //= 2
                for l in range(width):
                    acc[l] = acc[2 * l] + acc[2 * l + 1]
            res = acc[0]
            for j in range(m, dim):
                res += M[i, j] * x[j]
            out[i] = res
    return rows


_rows8, _rows32 = _lanes(8), _lanes(WIDE)


@njit(cache=True, nogil=True)
def rows_dot(M, x, out):
    """``out[i] = Σ_j M[i, j]·x[j]`` in the order of :func:`pyterrier_svmmap.products.products_sum`, its numpy
    reference (up to :data:`PW_BLOCK` terms, numpy's pairwise sum of the products)."""
    n, dim = M.shape
    if dim < 8:
        for i in range(n):
            res = 0.0
            for j in range(dim):
                res += M[i, j] * x[j]
            out[i] = res
    elif dim <= PW_BLOCK:
        _rows8(M, x, out)
    else:
        _rows32(M, x, out)


@njit(cache=True, nogil=True)
def weighted_rows(c, M, j0, j1, out):
    """``out[j] = Σ_i c[i]·M[i, j]`` for j0 ≤ j < j1, the rows added in order (four a pass, one after the other)."""
    n = M.shape[0]
    if n == 0:
        for j in range(j0, j1):
            out[j] = 0.0
        return
    c0 = c[0]
    for j in range(j0, j1):
        out[j] = c0 * M[0, j]
    i = 1
    while i + 4 <= n:
        c1 = c[i]
        c2 = c[i + 1]
        c3 = c[i + 2]
        c4 = c[i + 3]
        for j in range(j0, j1):
            out[j] = (((out[j] + c1 * M[i, j]) + c2 * M[i + 1, j]) + c3 * M[i + 2, j]) + c4 * M[i + 3, j]
        i += 4
    while i < n:
        ci = c[i]
        for j in range(j0, j1):
            out[j] += ci * M[i, j]
        i += 1

