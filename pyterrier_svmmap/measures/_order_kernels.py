"""Compiled kernel (numba) of the one ordering every measure and loss starts from: each query's
candidates by decreasing score, ties by position. Loaded through :mod:`._jit` by
:func:`pyterrier_svmmap.measures.rank_within_queries`; it gives the permutation of
``np.lexsort((-scores, query_ids(offsets)))``.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def score_order(scores, offsets, order):
    """Global indices of each query's candidates by decreasing score, ties by position: a stable
    mergesort per query, so the order of ``np.lexsort((-scores, query_ids(offsets)))``. Scores must
    not be NaN (the caller checks)."""
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        local = np.argsort(-scores[lo:offsets[q + 1]], kind="mergesort")
        for i in range(local.shape[0]):
            order[lo + i] = lo + local[i]
