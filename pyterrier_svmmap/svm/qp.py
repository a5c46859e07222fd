"""The dual QP of the 1-slack structural SVM over a working set, a budget per slack group (Joachims, Finley & Yu
2009, OP 4's dual), solved by :mod:`._qp_kernels`."""
from __future__ import annotations

from types import ModuleType
from typing import Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit

#: default cap on the QP's SMO pair steps per solve
QP_MAX_STEPS = 200_000


def compiled() -> ModuleType:
    return _jit.load("svm._qp_kernels")


def solve_dual(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray,
               alpha: Optional[np.ndarray] = None, tol: float = 1e-13,
               max_steps: int = QP_MAX_STEPS) -> Tuple[np.ndarray, int]:
    """Maximise bᵀα − ½αᵀGα s.t. α ≥ 0 and the group budgets ``C``; (α, steps ≥ ``max_steps`` at SMO's cap)."""
    jit = compiled()
    start = np.zeros(len(b)) if alpha is None else np.array(alpha, dtype=np.float64)   # a copy: overwritten
    return jit.solve_dual(np.ascontiguousarray(G, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64),
                          np.ascontiguousarray(group, dtype=np.int64), np.ascontiguousarray(C, dtype=np.float64),
                          start, float(tol), int(max_steps), True)


def warm_up() -> None:
    """Compile (or load) the dual QP and the working set's compaction, which every SVM fit runs: about a third
    of the package's compiling, worth starting in a second process beside the other kernels."""
    solve_dual(np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([1.0, 0.5]), np.zeros(2, dtype=np.int64),
               np.array([1.0]), np.zeros(2))
    compiled().compact_working_set(np.eye(2), np.eye(2), np.array([1], dtype=np.int64))
