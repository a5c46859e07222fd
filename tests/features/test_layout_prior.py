"""The prior's centre w₀ (pyterrier_svmmap.features.layout, ``FeatureLayout.prior_weights``):
in a dense block it ranks each query's candidates exactly as the prior's base function does."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("features,block", [("bins+raw", "raw"), ("raw+bins", "raw"), ("bins+minmax", "minmax"),
                                            ("bins", "bins")])
def test_the_prior_ranks_exactly_like_the_function_when_a_dense_block_holds_it(features, block):
    from pyterrier_svmmap.features.layout import FeatureLayout
    rng = np.random.default_rng(6)
    raw = rng.normal(size=(60, 3))
    offsets = np.array([0, 20, 40, 60])
    layout = FeatureLayout.fit(raw, offsets, features, 5)
    assert layout.prior_block() == block
    w0 = layout.prior_weights(2, raw, offsets)
    assert np.flatnonzero(w0).tolist() == [dict(layout.block_slices())[block].start + (2 * 5 if block == "bins" else 2)
                                           + i for i in range(5 if block == "bins" else 1)]
    scores = layout.transform(raw, offsets).dot(w0)
    for a, b in zip(offsets[:-1], offsets[1:]):
        order = np.argsort(-raw[a:b, 2], kind="stable")
        if block != "bins":                                       # the steps of bins tie within a bin
            assert np.all(np.diff(scores[a:b][order]) < 0)
