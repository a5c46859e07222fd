"""Property-based tests (hypothesis) of the estimator: row-order invariance, determinism, save→load.
The argmax's exactness: tests/svm/test_argmax_properties.py."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from pyterrier_svmmap import SVMMap


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
