"""Synthetic queries for the boosted learners' tests."""
import numpy as np

from pyterrier_svmmap.measures import average_precision


def synthetic(n_queries=30, n_cand=60, n_funcs=6, seed=0, graded=False):
    """Relevance depends on functions 0 and 1 (1 with a negative sign → a learner must pick it up
    the right way); the rest is noise; 20% of scores are missing (NaN)."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_cand
    offsets = np.arange(n_queries + 1) * n_cand
    raw = rng.normal(size=(n, n_funcs)) * (1 + rng.integers(0, 3, size=n_queries).repeat(n_cand))[:, None]
    latent = raw[:, 0] - raw[:, 1] + 0.5 * rng.normal(size=n)
    labels = (latent > np.quantile(latent, 0.85)).astype(float)
    if graded:
        labels += latent > np.quantile(latent, 0.95)
    raw[rng.random(raw.shape) < 0.2] = np.nan
    return raw, labels, offsets


def random_map(labels, offsets, seed=1):
    rng = np.random.default_rng(seed)
    return average_precision(rng.random(len(labels)), labels, offsets).mean()


def held_out_map(learner_class) -> tuple:
    """(MAP on held-out queries of ``learner_class()`` fitted on graded synthetic queries with validation
    queries, MAP of random scores on them)."""
    raw, labels, offsets = synthetic(graded=True)
    vraw, vlabels, voffsets = synthetic(seed=3, graded=True)
    test_raw, test_labels, test_offsets = synthetic(seed=5, graded=True)
    model = learner_class().fit(raw, labels, offsets, vraw, vlabels, voffsets)
    got = average_precision(model.predict(test_raw, test_offsets), test_labels, test_offsets).mean()
    return got, random_map(test_labels, test_offsets)
