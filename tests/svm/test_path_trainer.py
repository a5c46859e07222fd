"""The ranker's path of C as a picklable callable: what a cluster's worker trains with."""
from __future__ import annotations

import pickle
import threading

import numpy as np

from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.svm.ranker import StructSVMRanker


def _queries(seed=0, n_q=12, n=10, F=3):
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n_q * n, F))
    labels = (raw[:, 0] + raw[:, 1] + 0.5 * rng.normal(size=n_q * n) > 1.0).astype(float)
    labels[::n] = 1.0
    return Queries(raw, labels, np.arange(0, n_q * n + 1, n))


def test_a_pickled_trainer_trains_what_the_ranker_trains():
    """Pickled, the trainer carries the ranker's parameters without its executor (which need not pickle) and
    the fit's base names, so that a layout fitted on the worker (no φ given) is the ranker's, with its names."""
    q = _queries()
    ranker = StructSVMRanker(C=[0.1, 1.0], features="bins", n_bins=4, prior_scale=0.5, epsilon=1e-3)
    ranker.base_names_ = ["bm25", "tf", "pl2"]
    here = ranker.path_trainer()
    ranker.executor = threading.Lock()                         # a client: not picklable
    there = pickle.loads(pickle.dumps(here))
    assert there.ranker is not ranker and there.ranker.executor is None
    assert {k: v for k, v in there.ranker.get_params().items() if k != "executor"} == \
        {k: v for k, v in ranker.get_params().items() if k != "executor"}
    ranker.executor = None
    for setting in [("bins", "best"), ("raw", None)]:
        layout_a, results_a, f_a = here(q, [0.1, 1.0], setting)
        layout_b, results_b, f_b = there(q, [0.1, 1.0], setting)
        assert f_a == f_b and layout_a.names() == layout_b.names() and "bm25" in " ".join(layout_b.names())
        assert all(np.array_equal(a.w, b.w) for a, b in zip(results_a, results_b))
