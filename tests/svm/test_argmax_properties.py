"""Property-based tests (hypothesis) of the losses: the argmax is exact (against brute force over every ranking).
Row-order invariance, determinism and save→load of the estimator: tests/estimators/test_estimator_properties.py."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings, strategies as st

from pyterrier_svmmap.svm.losses import get_loss


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n).filter(lambda z: 0 < sum(z) < len(z)),
    st.lists(st.floats(-3, 3, allow_nan=False), min_size=n, max_size=n))),
    st.sampled_from(["map", "roc", "ndcg", "mrr"]))
def test_argmax_exact_vs_brute_force(inst, name):
    labels, scores = np.array(inst[0]), np.array(inst[1])
    loss = get_loss(name)
    best = max(loss.objective(np.array(p), scores, labels) for p in itertools.permutations(range(len(labels))))
    assert loss.objective(loss.argmax(scores, labels), scores, labels) >= best - 1e-9
