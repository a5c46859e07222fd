"""The prior's centre w₀ (pyterrier_svmmap.features.layout, through ``selection.base_function_weights``):
in a dense block it ranks each query's candidates exactly as the prior's base function does."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("features,block", [("bins+raw", "raw"), ("raw+bins", "raw"), ("bins+minmax", "minmax"),
                                            ("bins", "bins")])
def test_the_prior_ranks_exactly_like_the_function_when_a_dense_block_holds_it(features, block):
    from pyterrier_svmmap.features.layout import FeatureLayout
    from pyterrier_svmmap.selection import base_function_weights
    rng = np.random.default_rng(6)
    raw = rng.normal(size=(60, 3))
    offsets = np.array([0, 20, 40, 60])
    layout = FeatureLayout.fit(raw, offsets, features, 5)
    assert layout.prior_block() == block
    w0 = base_function_weights(layout, raw, offsets, 2)
    assert np.flatnonzero(w0).tolist() == [dict(layout.block_slices())[block].start + (2 * 5 if block == "bins" else 2)
                                           + i for i in range(5 if block == "bins" else 1)]
    scores = layout.transform(raw, offsets).dot(w0)
    for a, b in zip(offsets[:-1], offsets[1:]):
        order = np.argsort(-raw[a:b, 2], kind="stable")
        if block != "bins":                                       # the steps of bins tie within a bin
            assert np.all(np.diff(scores[a:b][order]) < 0)
