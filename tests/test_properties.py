"""Property-based tests (hypothesis): argmax exactness, row-order invariance, determinism, save→load."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from pyterrier_svmmap import SVMMap
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


def _data(seed, n_q=6, n_d=8, F=3):
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_q):
        for d in range(n_d):
            rel = int(d < 2 or rng.random() < 0.15)
            f = rng.normal(size=F) + rel * np.array([1.0, 0.3, 0.0])[:F]
            if rng.random() < 0.1:
                f[rng.integers(F)] = np.nan
            rows.append(dict(qid=f"q{q}", docno=f"d{d}", features=f))
            qrels.append(dict(qid=f"q{q}", docno=f"d{d}", label=rel))
    return pd.DataFrame(rows), pd.DataFrame(qrels)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["bins", "raw", "bins+minmax"]))
def test_row_order_determinism_and_save_load(tmp_path_factory, seed, features):
    res, qrels = _data(seed)
    m = SVMMap(C=1.0, features=features, n_bins=4).fit(res, qrels)
    m2 = SVMMap(C=1.0, features=features, n_bins=4).fit(res, qrels)
    assert np.array_equal(m.coef_, m2.coef_)                       # deterministic
    base = m.transform(res).set_index(["qid", "docno"])["score"]
    perm = res.sample(frac=1.0, random_state=seed)                   # rows shuffled within and across queries
    shuffled = m.transform(perm).set_index(["qid", "docno"])["score"]
    assert np.allclose(base.sort_index().to_numpy(), shuffled.sort_index().to_numpy(), rtol=0, atol=1e-12)
    path = tmp_path_factory.mktemp("m")
    m.save(path)
    loaded = SVMMap.load(path).transform(res).set_index(["qid", "docno"])["score"]
    assert np.array_equal(base.to_numpy(), loaded.to_numpy())
