"""The compiled kernels of the structural losses (numba): loader and the shared batch driver.

:func:`kernels` returns :mod:`._rank_kernels` (the compiled batch violations and single-query argmaxes of
NDCG, NDCG-NC, MRR, ROC, DORM and MAP, and the classification baselines' batch), imported on first use.

:func:`run_shared` is the one way the losses call a batch kernel: it checks the batch, sorts every query's
candidates by decreasing score once (:func:`~pyterrier_svmmap.measures.score_sorter`, a stable sort; the kernels
would restore the stable order of equal scores from any other), and hands the kernel the arrays it fills.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable, Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.measures import rank_within_queries, score_sorter


def kernels(module: str = "_rank_kernels") -> ModuleType:
    """A compiled kernels module of the losses: :mod:`._rank_kernels`, or :mod:`._dorm_kernels`."""
    return _jit.load(f"svm.losses.{module}")


def check_batch(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
                within: bool = False) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores as contiguous floats, relevance as contiguous booleans, offsets as int64), checked.

    Raises ValueError naming what is wrong: arrays of different lengths, or offsets that do not run
    non-decreasing from 0 to the number of candidates (``within``: between them, queries inside the candidates).
    """
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(f"scores and labels must be 1-d arrays of one length, got shapes "
                         f"{scores.shape} and {labels.shape}")
    if offsets.ndim != 1 or len(offsets) < 1 or (np.diff(offsets) < 0).any() or offsets[0] < 0 \
            or offsets[-1] > len(scores) or not within and (offsets[0] != 0 or offsets[-1] != len(scores)):
        raise ValueError(f"offsets must run non-decreasing {'between 0 and' if within else 'from 0 to'} len(scores)="
                         f"{len(scores)} (one more entry than queries), got "
                         f"{offsets[:3].tolist()}…{offsets[-2:].tolist()}")
    return scores, np.ascontiguousarray(labels > 0), offsets


def run_shared(losses, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, within: bool = False) -> list:
    """[(Δ per query, coefficients per candidate)] of the batch kernels of ``losses`` (:class:`CompiledBatch`) on one
    batch, ``order`` (:func:`~pyterrier_svmmap.measures.score_sorter`) shared by all (what :class:`.combo.ComboLoss`
    uses). Blocks of whole queries run on :func:`~pyterrier_svmmap.threads.current` threads, each block's score
    order and kernels in one task; every query is computed by the same kernel whichever block it is in, so the
    results do not depend on the number of threads. ``within``: the queries may lie inside the candidates (those
    outside them get 0)."""
    scores, rel, offsets = check_batch(scores, labels, offsets, within)
    n_q = len(offsets) - 1
    out = [(np.zeros(n_q), np.zeros(len(scores))) for _ in losses]
    if n_q == 0 or len(scores) == 0:
        return out
    calls = [loss.kernel_call(int(np.diff(offsets).max())) for loss in losses]
    order, sort = score_sorter(scores, offsets)

    def block(lo: int, hi: int) -> None:
        sort(lo, hi)
        for (kernel, params), (deltas, coef) in zip(calls, out):
            kernel(scores, rel, order, offsets[lo:hi + 1], *params, deltas[lo:hi], coef)
    threads.run_query_blocks(block, offsets)
    return out


def as_int(value: Optional[int]) -> int:
    """A cutoff or window for the kernels: −1 stands for None (no cutoff / no window)."""
    return -1 if value is None else int(value)


class CompiledBatch:
    """Mixin of the losses with compiled kernels ``<name>_batch`` and ``<name>_ranking`` in :attr:`kernel_module`,
    both taking the parameters ``kernel_params(n)`` for queries of at most n candidates: ``batch_violation``
    runs the batch kernel over all queries after one score sort; ``argmax`` runs the ranking kernel (the solver
    of the batch kernel) on one query. A subclass that overrides ``batch_violation`` must override ``kernel_call``
    too (:class:`.combo.ComboLoss` runs its members' kernel calls on one shared score sort)."""

    name: str
    #: the module of :func:`kernels` that holds the loss's kernels
    kernel_module = "_rank_kernels"
    #: whether :meth:`batch_violation` takes queries inside the candidates (offsets from above 0 to below the end)
    queries_within = False

    def kernel_params(self, n: int) -> tuple:
        """The kernels' parameters after the data (cutoffs, tables) for queries of at most ``n`` candidates."""
        return ()

    def kernel_call(self, n: int, kind: str = "batch") -> Tuple[Callable, tuple]:
        """The compiled batch violation (``kind="batch"``) or single-query argmax (``"ranking"``) and its parameters
        for queries of at most ``n`` candidates."""
        return getattr(kernels(self.kernel_module), f"{self.name}_{kind}"), self.kernel_params(n)

    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The most violated ranking of one query (candidate indices, best first), from the ranking kernel."""
        scores, rel, offsets = check_batch(scores, labels, np.array([0, len(np.asarray(scores))]))
        out = np.empty(len(scores), dtype=np.int64)
        if len(scores):
            kernel, params = self.kernel_call(len(scores), "ranking")
            kernel(scores, rel, rank_within_queries(scores, offsets), 0, len(scores), *params, out)
        return out

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        """(Δ(ŷ), c(y*) − c(ŷ)) of one query: :meth:`batch_violation` of a batch of one, the same numbers."""
        deltas, coef = self.batch_violation(scores, labels, np.array([0, np.size(scores)]))
        return float(deltas[0]), coef

    def batch_violation(self, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray):
        """(Δ per query, coefficients per candidate), from the loss's compiled batch kernel."""
        return run_shared([self], scores, labels, offsets, self.queries_within)[0]
