"""The contract every structural-SVM loss implements.

A loss for the structural SVM of Yue et al. (SIGIR 2007, §3, OP 1) is three things:

* Δ(y*, y): how bad ranking ``y`` is for one query (e.g. 1 − AP);
* the joint feature map Ψ(x, y). Every map used here is linear in the per-document
  feature vectors, Ψ(x, y) = Σ_d c_d(y) φ(x, d), so a loss only has to give the
  per-document coefficients ``c(y)`` (:meth:`Loss.psi_coef`); the feature layer turns them
  into a vector with one weighted histogram per base function;
* the exact loss-augmented argmax ŷ = argmax_y H(y), H(y) = Δ(y) + wᵀΨ(x, y)
  (Algorithm 1, line 6). With s = Φw the candidates' scores, wᵀΨ(x, y) = c(y)·s, so
  the argmax only ever needs the scores.

Rankings are arrays of candidate indices, best first. Labels > 0 are relevant.
The numeric core works on one query at a time (:meth:`Loss.argmax`) or on all queries
at once, concatenated, with ``offsets`` (length Q + 1) delimiting the queries
(:meth:`Loss.batch_violation`, which the solver calls once per cutting-plane iteration).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional, Tuple

import numpy as np


def ideal_ranking(labels: np.ndarray) -> np.ndarray:
    """The correct ranking y*: candidates by decreasing label (stable, so ties keep input order)."""
    return np.argsort(-np.asarray(labels, dtype=float), kind="stable")


def positions(ranking: np.ndarray) -> np.ndarray:
    """Inverse permutation: ``positions(r)[d]`` is the 0-based rank of candidate ``d``."""
    pos = np.empty(len(ranking), dtype=np.int64)
    pos[ranking] = np.arange(len(ranking))
    return pos


def sort_by_score(indices: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``indices`` ordered by decreasing score (stable)."""
    return indices[np.argsort(-scores[indices], kind="stable")]


class Loss(ABC):
    """A structural-SVM loss: Δ, the joint feature map's coefficients, and the exact argmax of H."""

    #: name used in the registry and in model files (e.g. ``"map"``)
    name: str = ""
    #: whether φ needs a constant feature (a bias) for this loss; only classification losses do,
    #: rankings being invariant to a shift of all scores (see :func:`.classification.add_bias`)
    needs_bias: bool = False

    def params(self) -> dict:
        """Constructor parameters, for saving a model and for ``repr``."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    # -- the three parts of a loss -------------------------------------------------------------
    @abstractmethod
    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        """Δ(y*, y) of a ranking of one query.

        Parameters
        ----------
        ranking : ndarray of int
            A ranking of one query's candidates (their indices, best first).
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        float
        """

    @abstractmethod
    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Per-candidate coefficients c(y) with Ψ(x, y) = Σ_d c_d(y) φ(x, d).

        Parameters
        ----------
        ranking : ndarray of int
            A ranking of one query's candidates (their indices, best first).
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        ndarray of shape (n,)
        """

    @abstractmethod
    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The ranking maximising H(y) = Δ(y) + c(y)·scores, exactly.

        Parameters
        ----------
        scores : ndarray of shape (n,)
            The model's scores of the query's candidates.
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        ndarray of int
            The ranking (candidate indices, best first).
        """

    # -- derived, shared by all losses ----------------------------------------------------------
    def ideal(self, labels: np.ndarray) -> np.ndarray:
        """The correct ranking y* of the training example (Δ(y*, y*) = 0).

        Parameters
        ----------
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        ndarray of int
        """
        return ideal_ranking(labels)

    def ideal_psi_coef(self, labels: np.ndarray) -> np.ndarray:
        """c(y*), the coefficients of Ψ(x, y*) used in every constraint of the query.

        By default those of :meth:`ideal`; losses whose Ψ(x, y*) depends on how ties among equally
        relevant candidates are broken may use a tie-independent choice instead (e.g. DORM).

        Parameters
        ----------
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        ndarray of shape (n,)
        """
        return self.psi_coef(self.ideal(labels), labels)

    def objective(self, ranking: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> float:
        """H(y) = Δ(y) + wᵀΨ(x, y), with wᵀΨ(x, y) = c(y)·scores. Used by brute-force tests.

        Parameters
        ----------
        ranking : ndarray of int
            A ranking of one query's candidates (their indices, best first).
        scores : ndarray of shape (n,)
            The model's scores of the query's candidates.
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        float
        """
        return float(self.delta(ranking, labels) + self.psi_coef(ranking, labels) @ np.asarray(scores, float))

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        """Most violated constraint of one query.

        Parameters
        ----------
        scores : ndarray of shape (n,)
            The model's scores of the query's candidates.
        labels : ndarray of shape (n,)
            The query's relevance labels (> 0 relevant).

        Returns
        -------
        (float, ndarray of shape (n,))
            ``(Δ(ŷ), c(y*) − c(ŷ))``: the constraint of OP 1 reads wᵀΦᵀ(c(y*) − c(ŷ)) ≥ Δ(ŷ) − ξ.
        """
        labels = np.asarray(labels)
        y_hat = self.argmax(scores, labels)
        return self.delta(y_hat, labels), self.ideal_psi_coef(labels) - self.psi_coef(y_hat, labels)

    def batch_violation(self, scores: np.ndarray, labels: np.ndarray,
                        offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`violation` for every query. Losses with a vectorised form override this; the default loops
        over queries.

        Parameters
        ----------
        scores : ndarray of shape (n,)
            The model's scores of all candidates.
        labels : ndarray of shape (n,)
            Their relevance labels (> 0 relevant).
        offsets : ndarray of shape (Q + 1,)
            Query boundaries.

        Returns
        -------
        (ndarray of shape (Q,), ndarray of shape (n,))
            Δ per query, and the coefficients c(y*) − c(ŷ) of all candidates.
        """
        n_queries = len(offsets) - 1
        deltas = np.empty(n_queries)
        coef = np.empty(len(scores))
        for q in range(n_queries):
            lo, hi = offsets[q], offsets[q + 1]
            deltas[q], coef[lo:hi] = self.violation(scores[lo:hi], labels[lo:hi])
        return deltas, coef


class CutoffLoss(Loss):
    """A loss with an optional rank cutoff ``k`` (None: the whole ranking)."""

    def __init__(self, k: Optional[int] = None):
        if k is not None and int(k) < 1:
            raise ValueError(f"k must be a positive integer or None, got {k!r}")
        self.k = None if k is None else int(k)

    def params(self) -> dict:
        return {"k": self.k}
