"""Unsupervised fusion (pyterrier_svmmap.experiments.reproduce.trials): RRF and CombSUM against their formulas written out."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from pyterrier_svmmap.experiments.reproduce.trials import comb_sum, competition_ranks, reciprocal_rank_fusion


def _queries(seed, n_q=4, F=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, n_q)
    raw = rng.integers(0, 5, (sizes.sum(), F)).astype(float)           # small integers: many ties
    raw[rng.random(raw.shape) < 0.25] = np.nan
    return raw, np.r_[0, np.cumsum(sizes)].astype(np.int64)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000))
def test_rrf_and_combsum_are_their_formulas(seed):
    raw, offsets = _queries(seed)
    rrf, cs = reciprocal_rank_fusion(raw, offsets), comb_sum(raw, offsets)
    for a, b in zip(offsets[:-1], offsets[1:]):
        for d in range(a, b):
            want_rrf = want_cs = 0.0
            for f in range(raw.shape[1]):
                col, x = raw[a:b, f], raw[d, f]
                if np.isnan(x):
                    continue
                rank = 1 + int(np.sum(col[~np.isnan(col)] > x))         # ties share the best rank
                want_rrf += 1.0 / (60 + rank)
                lo, hi = np.nanmin(col), np.nanmax(col)
                want_cs += (x - lo) / (hi - lo) if hi > lo else 1.0
            assert rrf[d] == np.float64(want_rrf) or abs(rrf[d] - want_rrf) < 1e-15
            assert abs(cs[d] - want_cs) < 1e-12


def test_competition_ranks_share_the_best_rank_and_skip_missing():
    scores = np.array([3.0, 1.0, 3.0, np.nan, 2.0, 5.0, 5.0, 1.0])
    ranks = competition_ranks(scores, np.array([0, 5, 8]))
    np.testing.assert_array_equal(ranks, [1, 4, 1, np.nan, 3, 1, 1, 3])


def test_rrf_ignores_the_units_and_combsum_the_per_query_scale_of_a_function():
    raw, offsets = _queries(3)
    moved = raw.copy()
    level = np.repeat(np.arange(len(offsets) - 1) * 100.0, np.diff(offsets))
    moved[:, 0] = np.exp(raw[:, 0]) * 7 + level                           # increasing within each query
    np.testing.assert_array_equal(reciprocal_rank_fusion(moved, offsets), reciprocal_rank_fusion(raw, offsets))
    moved[:, 0] = raw[:, 0] * 1e6 + level
    np.testing.assert_allclose(comb_sum(moved, offsets), comb_sum(raw, offsets), rtol=1e-9)
