"""``C="auto"``: a linear model's grid continues past its top while the best held-out C is the top
(:func:`pyterrier_svmmap.selection.extend_at_edge`); the step functions' grids do not."""
from __future__ import annotations

import numpy as np
import pytest

import pyterrier_svmmap.selection as sel


class _Calls(list):
    """A stand-in for :func:`cross_validate` that records each call and returns fixed evidence: the held-out
    AP of the new C is ``ap_of(C)`` for every query, its fold weights ``[C, C]``."""

    def __init__(self, ap_of):
        super().__init__()
        self.ap_of = ap_of

    def __call__(self, queries, settings, grids, train_path, encodings, cv, random_state, fit_map=None):
        self.append([g[0] for g in grids])
        n = 6
        ap = np.column_stack([np.full(n, self.ap_of(g[0])) for g in grids])
        return sel.HeldOut(np.arange(n) % cv, ap, None, [[np.array([[g[0], g[0]]]) for _ in range(cv)]
                                                          for g in grids])


SETTINGS = [("bins", "best"), ("raw", "best"), ("bins+raw", "best")]


def _evidence(raw_means, other=0.1, n=6, G=3):
    E = np.full((n, 3 * G), other)
    E[:, G:2 * G] = raw_means
    return E


def _run(monkeypatch, E, ap_of, G=3):
    calls = _Calls(ap_of)
    monkeypatch.setattr(sel, "cross_validate", calls)
    grids = [[1.0, 10.0, 100.0][:G] for _ in SETTINGS]
    fold_w = [[np.ones((G, 2)) * (s + 1) for _ in range(2)] for s in range(3)]
    out = sel.extend_at_edge(None, SETTINGS, grids, None, [None] * 3, 2, 0, E, fold_w)
    return calls, out


def test_the_raw_grid_grows_while_its_best_is_at_the_top(monkeypatch):
    calls, (E, fold_w, grids) = _run(monkeypatch, _evidence([0.2, 0.3, 0.4]), lambda C: 0.4 + C / 1e5)
    assert calls == [[1000.0], [10000.0]]                       # two decades, raw only, one C a call
    assert grids == [[1.0, 10.0, 100.0, 1000.0, 10000.0]] * 3
    assert E.shape == (6, 15)
    assert np.allclose(E[0, 5:10], [0.2, 0.3, 0.4, 0.41, 0.5])   # raw's columns, the new ones last
    assert np.isnan(E[:, [3, 4, 13, 14]]).all() and np.allclose(E[:, :3], 0.1)   # bins, bins+raw: no evidence
    assert np.allclose(fold_w[1][0][3:], [[1000.0, 1000.0], [10000.0, 10000.0]])
    assert np.isnan(fold_w[0][1][3:]).all() and np.allclose(fold_w[0][1][:3], 1.0)


def test_it_stops_where_the_new_c_is_not_the_best(monkeypatch):
    calls, (E, _, grids) = _run(monkeypatch, _evidence([0.2, 0.3, 0.4]), lambda C: 0.35)
    assert calls == [[1000.0]] and len(grids[0]) == 4


def test_nothing_grows_when_the_best_c_is_inside_the_grid(monkeypatch):
    E0 = _evidence([0.2, 0.5, 0.4])
    calls, (E, fold_w, grids) = _run(monkeypatch, E0, lambda C: 1.0)
    assert calls == [] and E is E0 and len(grids[0]) == 3


def test_the_step_functions_grid_never_grows(monkeypatch):
    E0 = np.full((6, 9), 0.1)
    E0[:, 2] = E0[:, 8] = 0.9                                   # bins and bins+raw best at their top
    calls, (E, _, _) = _run(monkeypatch, E0, lambda C: 1.0)
    assert calls == [] and E is E0


def test_choose_leaves_out_the_untrained_columns():
    rng = np.random.default_rng(0)
    E = rng.random((12, 4))
    E[:, 3] = np.nan
    fb = E[:, 0] - 0.2
    with_nan = sel.choose(E, fb, 0.5, levels=[[0, 1, 2, 3]])
    without = sel.choose(E[:, :3], fb, 0.5, levels=[[0, 1, 2]])
    assert (with_nan.index, with_nan.p_value) == (without.index, without.p_value)
    assert with_nan.index != 3


@pytest.mark.parametrize("C", [[0.1, 1.0], 1.0])
def test_a_given_grid_is_never_extended(C):
    """Only C="auto" extends: a user's grid is searched as given."""
    rng = np.random.default_rng(1)
    offsets = np.arange(11) * 20
    raw = rng.normal(size=(200, 3))
    labels = (raw[:, 0] + 0.3 * rng.normal(size=200) > 1).astype(float)
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    r = StructSVMRanker(C=C, features="raw", prior="best", selection="auto", cv=3).fit(raw, labels, offsets)
    assert len(r.path_) == len(sel.c_grid(C)) + (1 if len(sel.c_grid(C)) > 1 else 0)
