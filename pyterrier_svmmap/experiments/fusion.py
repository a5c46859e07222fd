"""Unsupervised fusion of base functions, the rows ``fusion-rrf`` and ``fusion-combsum`` of ``svmmap reproduce``:
what a user without relevance judgments tries first. Both combine each candidate's scores (``raw``: candidates ×
functions, NaN where a function did not retrieve the candidate; ``offsets``: query boundaries) without learning:
reciprocal rank fusion (Cormack, Clarke & Büttcher 2009) and CombSUM (Fox & Shaw 1994) of per-query min–max
normalised scores.
"""
from __future__ import annotations

from typing import Callable, Dict

import numpy as np

from pyterrier_svmmap.features.transforms import minmax_normalise
from pyterrier_svmmap.queries import query_ids

#: RRF's constant (Cormack et al. 2009)
RRF_K = 60.0


def competition_ranks(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per candidate, 1 + the number of candidates of its query with a higher score; NaN scores get NaN."""
    scores = np.asarray(scores, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(scores)
    out = np.full(n, np.nan)
    if not n:
        return out
    q = query_ids(offsets)
    ok = ~np.isnan(scores)
    idx = np.flatnonzero(ok)
    order = idx[np.lexsort((-scores[idx], q[idx]))]                 # by query, score descending
    s, qq = scores[order], q[order]
    new_group = np.r_[True, qq[1:] != qq[:-1]]                       # first row of each query
    new_value = new_group | np.r_[True, s[1:] != s[:-1]]             # first row of each run of equal scores
    position = np.arange(len(order))
    group_start = np.maximum.accumulate(np.where(new_group, position, 0))
    run_start = np.maximum.accumulate(np.where(new_value, position, 0))
    out[order] = run_start - group_start + 1
    return out


def reciprocal_rank_fusion(raw: np.ndarray, offsets: np.ndarray, k: float = RRF_K) -> np.ndarray:
    """RRF scores: Σ_f 1/(k + rank_f(d)) over the functions that retrieved d, equal scores sharing the best rank
    (so that the fusion does not depend on the order of the rows)."""
    raw = np.asarray(raw, dtype=float)
    out = np.zeros(len(raw))
    for f in range(raw.shape[1]):
        ranks = competition_ranks(raw[:, f], offsets)
        out += np.where(np.isnan(ranks), 0.0, 1.0 / (k + np.nan_to_num(ranks)))
    return out


def comb_sum(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """CombSUM of the scores min–max normalised per query and function, missing scores counting 0 (a function
    with one score in the query counting 1 for the candidates it retrieved)."""
    raw = np.asarray(raw, dtype=float)
    if not len(raw):
        return np.zeros(0)
    return np.nan_to_num(minmax_normalise(raw, offsets), nan=0.0).sum(axis=1)


#: the ``svmmap reproduce`` rows of the fusions: name → fusion
FUSIONS: Dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"fusion-rrf": reciprocal_rank_fusion,
                                                                      "fusion-combsum": comb_sum}
