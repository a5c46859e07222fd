"""The compiled kernels of the structural losses (numba): loader and the shared batch driver.

:func:`kernels` returns :mod:`._rank_kernels` (the compiled batch violations and single-query argmaxes of
NDCG, NDCG-NC, MRR, ROC, DORM and MAP, and the classification baselines' batch), imported on first use.

:func:`run_sorted` is the one way the losses call a kernel: it checks the batch, sorts every query's
candidates by decreasing score once (:func:`.map.query_score_order`, ties in any order: the kernels
restore the stable order themselves), and hands the kernel the arrays it fills.
"""
from __future__ import annotations

import logging
from types import ModuleType
from typing import Callable, Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.threads as threads

log = logging.getLogger(__name__)



def kernels(module: str = "_rank_kernels") -> ModuleType:
    """A compiled kernels module of the losses: :mod:`._rank_kernels`, or :mod:`._dorm_kernels`."""
    return _jit.load(f"svm.losses.{module}")


def check_batch(scores: np.ndarray, labels: np.ndarray,
                offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores as contiguous floats, relevance as contiguous booleans, offsets as int64), checked.

    Raises ValueError naming what is wrong: arrays of different lengths, or offsets that do not run
    non-decreasing from 0 to the number of candidates.
    """
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(f"scores and labels must be 1-d arrays of one length, got shapes "
                         f"{scores.shape} and {labels.shape}")
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(scores) \
            or (np.diff(offsets) < 0).any():
        raise ValueError(f"offsets must run non-decreasing from 0 to len(scores)={len(scores)} "
                         f"(one more entry than queries), got {offsets[:3].tolist()}…{offsets[-2:].tolist()}")
    return scores, np.ascontiguousarray(labels > 0), offsets


#: a kernel and its parameters: ``kernel(scores, rel, order, offsets, *params, deltas, coef)``
KernelCall = Tuple[Callable, tuple]


def score_order(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every query's candidates (global indices, int64) by decreasing score, ties in any order."""
    from pyterrier_svmmap.svm.losses.map import query_score_order     # map imports nothing from here: no cycle

    return np.ascontiguousarray(query_score_order(scores, offsets), dtype=np.int64)


def run_sorted(call: KernelCall, scores: np.ndarray, labels: np.ndarray,
               offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(Δ per query, coefficients per candidate) from a kernel call (``kernel(scores, rel, order,
    offsets, *params, deltas, coef)``), ``order`` being :func:`score_order`."""
    return run_shared([call], scores, labels, offsets)[0]


def run_shared(calls, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
               order: Optional[np.ndarray] = None) -> list:
    """[(Δ per query, coefficients per candidate)] of several kernel calls on one batch, the score
    order computed once for all (what :class:`.combo.ComboLoss` uses), or ``order`` when given. Blocks of
    whole queries run on :func:`~pyterrier_svmmap.threads.current` threads; every query is computed by the
    same kernel whichever block it is in, so the results do not depend on the number of threads."""
    scores, rel, offsets = check_batch(scores, labels, offsets)
    n_q = len(offsets) - 1
    out = [(np.zeros(n_q), np.zeros(len(scores))) for _ in calls]
    if n_q == 0 or len(scores) == 0:
        return out
    order = score_order(scores, offsets) if order is None else order
    def block(lo: int, hi: int) -> None:
        for (kernel, params), (deltas, coef) in zip(calls, out):
            kernel(scores, rel, order, offsets[lo:hi + 1], *params, deltas[lo:hi], coef)
    threads.run_query_blocks(block, offsets)
    return out


def run_ranking(call: KernelCall, scores: np.ndarray, labels: np.ndarray,
                order: Optional[np.ndarray] = None) -> np.ndarray:
    """The most violated ranking of one query (candidate indices, best first) from a ranking kernel call
    (``kernel(scores, rel, order, lo, hi, *params, out)``), ``order`` being :func:`score_order` unless
    given."""
    scores, rel, offsets = check_batch(scores, labels, np.array([0, len(np.asarray(scores))]))
    out = np.empty(len(scores), dtype=np.int64)
    if len(scores):
        kernel, params = call
        kernel(scores, rel, score_order(scores, offsets) if order is None else order, 0, len(scores), *params, out)
    return out


def kernel_call(loss, n_max: int) -> Optional[KernelCall]:
    """How to compute ``loss.batch_violation`` from a shared score order on queries of at most
    ``n_max`` candidates, or None for a loss without a kernel (the classification baselines, a custom loss).

    Losses with a kernel define ``kernel_call(n_max)``; MAP's kernel lives in :mod:`._map_kernels` and is
    adapted here (its serial batch takes the same arguments, with the harmonic table as parameter).
    A subclass that overrides ``batch_violation`` must override ``kernel_call`` too.
    """
    from pyterrier_svmmap.svm.losses.map import MAPLoss, _jit, harmonic

    if type(loss).batch_violation is MAPLoss.batch_violation:
        return _jit().batch_violation_serial, (harmonic(n_max + 2),)
    make = getattr(loss, "kernel_call", None)
    return make(n_max) if make is not None else None


def longest(offsets: np.ndarray) -> int:
    """The largest query size of a batch (0 when empty): the length the kernels' tables need."""
    sizes = np.diff(np.asarray(offsets))
    return int(sizes.max()) if len(sizes) else 0


def as_int(value: Optional[int]) -> int:
    """A cutoff or window for the kernels: −1 stands for None (no cutoff / no window)."""
    return -1 if value is None else int(value)


class CompiledBatch:
    """Mixin of the losses with compiled kernels: ``batch_violation`` runs the loss's batch kernel
    (``kernel_call(n_max)``) over all queries after one score sort; ``argmax`` runs its ranking kernel
    (``ranking_call(n)``, the solver of its batch kernel)."""

    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The most violated ranking of one query, from the loss's compiled ranking kernel."""
        return run_ranking(self.ranking_call(len(scores)), scores, labels)

    def batch_violation(self, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray):
        """(Δ per query, coefficients per candidate), from the loss's compiled batch kernel."""
        return run_sorted(self.kernel_call(longest(offsets)), scores, labels, offsets)
