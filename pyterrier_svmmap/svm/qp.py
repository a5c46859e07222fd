"""The dual QP of the 1-slack structural SVM over a working set of constraints (knows nothing of data).

max_α bᵀα − ½ αᵀGα  subject to  α ≥ 0  and  Σ_{c: group[c]=k} α_c ≤ C_k  for every slack group k,

with G = AAᵀ the Gram matrix of the constraints (Joachims, Finley & Yu, MLJ 2009, OP 4's dual; one
budget per slack group for SVM-COMBO with separate slacks, Chakrabarti et al. 2008 §3.7). Solved
exactly by an active-set method, polished by SMO-style pair steps; :mod:`.cutting_plane` calls it once per
cutting-plane iteration, warm-started from the previous multipliers.

The solver is the numba-compiled :mod:`._qp_kernels` (the algorithm is documented there); the tests compare it
with a numpy reference implementation (``tests/oracles/qp_reference.py``) that takes the same rounds and steps.
"""
from __future__ import annotations

from types import ModuleType
from typing import Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit

#: default cap on the QP's SMO pair steps per solve
QP_MAX_STEPS = 200_000


def compiled() -> ModuleType:
    """The compiled QP module :mod:`._qp_kernels` (imported on first use: numba is not loaded with the
    package)."""
    return _jit.load("svm._qp_kernels")


def solve_dual(G: np.ndarray, b: np.ndarray, group: np.ndarray, C: np.ndarray,
               alpha: Optional[np.ndarray] = None, tol: float = 1e-13,
               max_steps: int = QP_MAX_STEPS) -> Tuple[np.ndarray, int]:
    """Maximise bᵀα − ½αᵀGα s.t. α ≥ 0 and Σ_{c: group[c]=k} α_c ≤ C[k] (α: a warm start, or None
    for 0); returns (α, steps) with ``steps >= max_steps`` when SMO hit its cap.

    Runs the compiled :func:`._qp_kernels.solve_dual`.
    """
    jit = compiled()
    m = len(b)
    start = np.zeros(m) if alpha is None else np.array(alpha, dtype=np.float64)   # a copy: overwritten
    return jit.solve_dual(np.ascontiguousarray(G, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64),
                          np.ascontiguousarray(group, dtype=np.int64), np.ascontiguousarray(C, dtype=np.float64),
                          start, float(tol), int(max_steps), True)
