""""Converged" only when the duality-gap bound holds; a dual QP that cannot reach its tolerance stops the C early
with one warning that names the gap, instead of a crawl to max_iter with a line per iteration."""
from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyterrier_svmmap import StructSVMRanker
from pyterrier_svmmap.svm.cutting_plane import QP_CAP_PATIENCE, train_path, train_structural_svm
from pyterrier_svmmap.svm.slack import make_slack_groups

from tests.features.test_invariance import problem


def _noisy(seed=3):
    """Three functions and a column of pure noise 1e5 times larger: as they are (normalise=None), the dual QP's
    Gram matrix spans 1e10 and cannot be solved to its tolerance."""
    raw, labels, offsets = problem(seed, n_q=30, n_d=40)
    noise = np.random.default_rng(0).standard_normal((len(raw), 1)) * 1e5
    return np.hstack([raw, noise]), labels, offsets


@pytest.mark.parametrize("C", [1.0, 100.0])
def test_an_inaccurate_qp_stops_early_with_one_warning_naming_the_gap(C):
    raw, labels, offsets = _noisy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = StructSVMRanker(C=C, features="raw", normalise=None).fit(raw, labels, offsets)
    assert not m.converged_ and m.n_iter_ <= 10
    assert m.history_[-1]["qp_capped"]
    (w,) = [x for x in caught if "duality gap" in str(x.message)]
    assert "1 of 1 trainings stopped before their duality gap reached sum(C)*epsilon" in str(w.message)
    assert f"duality gap {m.history_[-1]['gap']:.3g} above" in str(w.message)
    assert "of its solves hit the step cap" in str(w.message) and Path(w.filename).resolve() == Path(__file__).resolve()


def test_the_same_data_standardised_within_queries_converge_without_a_warning():
    raw, labels, offsets = _noisy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = StructSVMRanker(C=100.0, features="raw").fit(raw, labels, offsets)
    assert m.converged_ and not any(h["qp_capped"] for h in m.history_)


def test_the_solver_stops_after_consecutive_capped_solves_and_logs_it_once(caplog):
    raw, labels, offsets = _noisy()
    from pyterrier_svmmap.features.layout import FeatureLayout
    X = FeatureLayout.fit(raw, offsets, "raw", normalise=None).transform(raw, offsets)
    with caplog.at_level(logging.WARNING, logger="pyterrier_svmmap"):
        r = train_structural_svm(X, labels, offsets, make_slack_groups("map", 10.0), qp_max_steps=20, max_iter=500)
    assert r.stop == "qp_inaccurate" and not r.converged
    assert r.qp_capped_solves >= QP_CAP_PATIENCE and r.history[-1]["qp_capped"] and r.n_iter < 50
    lines = [rec for rec in caplog.records if "duality gap" in rec.getMessage()]
    assert len(lines) == 1 and "the model is the last iterate" in lines[0].getMessage()
    assert f"({r.qp_capped_solves} of its solves hit the step cap)" in lines[0].getMessage()


def test_converged_means_the_gap_bound_holds_for_every_c_of_a_path():
    raw, labels, offsets = problem(4)
    from pyterrier_svmmap.features.layout import FeatureLayout
    X = FeatureLayout.fit(raw, offsets, "bins", 8).transform(raw, offsets)
    grid = [0.01, 1.0, 100.0]
    for r in train_path(X, labels, offsets, make_slack_groups("map", 1.0), grid, epsilon=1e-3, max_iter=3):
        assert r.converged == (r.duality_gap <= r.C * 1e-3 * (1 + 1e-6) + 1e-9 * abs(r.primal))
        assert r.stop == ("converged" if r.converged else "max_iter")
