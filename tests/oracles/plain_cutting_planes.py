"""The plain 1-slack cutting-plane loop (Joachims, Finley & Yu, MLJ 2009, Algorithm 4; svm_struct's loop): the
reference the tests compare the package's loop with a line search (``svm.cutting_plane._cutting_planes_ls``)
against. It asks the oracle at the QP's solution only.

:func:`plain_loop` makes ``train_structural_svm`` and ``train_path`` run it instead, with everything else
theirs (working set, warm start along a path, results, warnings)::

    with plain_loop():
        plain = train_structural_svm(X, labels, offsets, groups, epsilon=EPS)
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import List, Optional
from unittest import mock

import numpy as np

import pyterrier_svmmap.products as products
from pyterrier_svmmap.svm import cutting_plane
from pyterrier_svmmap.svm.cutting_plane import QP_CAP_PATIENCE, _gap_bound


def working_set_slacks(ws, n_groups: int) -> np.ndarray:
    """ξ_k = max(0, max_{c∈k} b_c − a_cᵀw) of the working set ``ws``, from the QP gradient b − Gα (= b − Av)."""
    xi = np.zeros(n_groups)
    if ws.m:
        support = np.flatnonzero(ws.alpha[:ws.m] > 0)
        gradient = ws.b[:ws.m] - (products.rows_dot(ws.G[:ws.m, support], ws.alpha[support]) if len(support) else 0.0)
        np.maximum.at(xi, ws.grp[:ws.m], gradient)
    return xi


def plain_cutting_planes(oracle, ws, C: np.ndarray, epsilon: float, max_iter: int, drop_after: Optional[int],
                         qp_max_steps: int, start=None):
    """MLJ 2009 Alg. 4 at constants C from the working set ``ws`` as it is (empty, or a warm start), with the
    signature and results of ``_cutting_planes_ls`` (``start`` ignored, no point to start the next C from).

    A non-empty working set is first re-solved at C. Each iteration asks the oracle for every group's most
    violated constraint at w, records primal (exact, from the oracle), dual, gap and violation (per group, the
    largest), stops when no group's constraint exceeds its ξ_k by more than ε, otherwise adds the violated ones,
    re-solves the QP and drops constraints idle for ``drop_after`` solves.
    """
    t0 = time.perf_counter()
    steps = ws.solve(C, qp_max_steps) if ws.m else 0
    v = ws.v()
    dual = ws.dual(v) if ws.m else 0.0
    history: List[dict] = []
    converged, stop, in_a_row, n_capped = False, "max_iter", 0, int(steps >= qp_max_steps)
    for iteration in range(1, max_iter + 1):
        w = ws.w0 + v
        cuts = oracle(w)
        xi = working_set_slacks(ws, len(C))
        viol = np.array([b_k - products.dot(a_k, w) - xi[k] for k, (a_k, b_k) in enumerate(cuts)])
        # the objective of the full (1-slack) problem at w: the new constraints are the most violated
        primal = 0.5 * products.dot(v, v) + float(C @ np.maximum(xi, xi + viol))
        history.append(dict(iteration=iteration, primal=primal, dual=dual, gap=primal - dual,
                            violation=float(viol.max()), xi=float(xi.max()), working_set=ws.m, qp_steps=steps,
                            qp_capped=steps >= qp_max_steps, dropped=ws.n_dropped, oracle_calls=iteration,
                            seconds=time.perf_counter() - t0))
        if viol.max() <= epsilon:
            # with an exact QP, primal − dual ≤ Σ_k C_k ε follows (MLJ 2009 Thm. 3); a larger gap means the QP
            # could not be solved to the precision needed (features of extreme scale at this C)
            converged = history[-1]["gap"] <= _gap_bound(C, epsilon, primal)
            stop = "converged" if converged else "qp_inaccurate"
            break
        for k in np.flatnonzero(viol > epsilon):
            ws.add(cuts[k][0], cuts[k][1], int(k))
        steps = ws.solve(C, qp_max_steps)
        in_a_row, n_capped = (in_a_row + 1, n_capped + 1) if steps >= qp_max_steps else (0, n_capped)
        if in_a_row >= QP_CAP_PATIENCE:
            stop = "qp_inaccurate"
            break
        if drop_after:
            ws.drop_idle(drop_after)
        v = ws.v()
        dual = ws.dual(v)
    return cutting_plane.TrainingResult(w=ws.w0 + v, converged=converged, history=history, group_C=C,
                                        seconds=time.perf_counter() - t0, stop=stop, qp_capped_solves=n_capped), None


@contextmanager
def plain_loop():
    """Within it, ``train_structural_svm`` and ``train_path`` train with :func:`plain_cutting_planes`."""
    with mock.patch.object(cutting_plane, "_cutting_planes_ls", plain_cutting_planes):
        yield
