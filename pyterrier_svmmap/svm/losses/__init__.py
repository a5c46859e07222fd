"""Structural-SVM losses, one module each, and :func:`most_violated`, their public argmax (docs/losses.md)."""
from __future__ import annotations

import re
from typing import Callable, Dict, Union

import numpy as np

from pyterrier_svmmap.svm.losses._numba import check_batch
from pyterrier_svmmap.svm.losses.base import Loss, ideal_ranking, positions
from pyterrier_svmmap.svm.losses.classification import BalancedClassificationLoss, ClassificationLoss, add_bias
from pyterrier_svmmap.svm.losses.combo import ComboLoss
from pyterrier_svmmap.svm.losses.dorm import DORMLoss
from pyterrier_svmmap.svm.losses.map import MAPLoss
from pyterrier_svmmap.svm.losses.mrr import MRRLoss
from pyterrier_svmmap.svm.losses.ndcg import NDCGLoss
from pyterrier_svmmap.svm.losses.roc import ROCLoss

#: loss name → factory taking the loss's keyword parameters (e.g. ``k`` for cutoffs)
LOSSES: Dict[str, Callable[..., Loss]] = {
    "map": MAPLoss,
    "roc": ROCLoss,
    "ndcg": NDCGLoss,
    "mrr": MRRLoss,
    "dorm": DORMLoss,
    "acc": ClassificationLoss,
    "acc2": BalancedClassificationLoss,
}

_CUTOFF = re.compile(r"^([a-z0-9_]+)@(\d+)$")

LossSpec = Union[str, Loss]


def get_loss(loss: LossSpec, **params) -> Loss:
    """A :class:`Loss` from a name and its parameters, or a Loss instance as is.

    Parameters
    ----------
    loss : str or Loss
        A name of :data:`LOSSES`, with a cutoff as ``"ndcg@10"``, or ``"combo"`` with ``losses=[...]``.
    **params
        The loss's parameters (e.g. ``k``); none with a Loss instance.

    Returns
    -------
    Loss
    """
    if isinstance(loss, Loss):
        if params:
            raise ValueError(f"loss parameters {sorted(params)} were given with a Loss instance; "
                             "set them on the instance instead")
        return loss
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a name or a Loss, got {type(loss).__name__}")
    name = loss.strip().lower()
    if name == "combo":
        members = params.pop("losses", None)
        if not members or params:
            raise ValueError("loss='combo' takes exactly losses=[...] here (use pyterrier_svmmap.svm.slack.make_slack_groups for "
                             f"slack='separate'); got losses={members!r} and {sorted(params)}")
        return ComboLoss([get_loss(m) for m in members])
    m = _CUTOFF.match(name)
    if m:
        name = m.group(1)
        if "k" in params:
            raise ValueError(f"loss {loss!r} gives a cutoff, and k={params['k']!r} was given too")
        params["k"] = int(m.group(2))
    if name not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {sorted(LOSSES) + ['combo']} "
                         "(cutoffs as e.g. 'ndcg@10')")
    return LOSSES[name](**params)


def most_violated(scores, labels, loss: LossSpec = "map", **params) -> np.ndarray:
    """The ranking maximising H(y) = Δ(y) + wᵀΨ(x, y) for one query (Yue et al. 2007, Algorithm 1 line 6).

    Parameters
    ----------
    scores : array-like of shape (n,)
        The current model's finite scores of the query's candidates.
    labels : array-like of shape (n,)
        Relevance labels; > 0 is relevant.
    loss : str or Loss, default "map"
        Anything :func:`get_loss` takes.
    **params
        The loss's parameters.

    Returns
    -------
    ndarray
        The ranking (candidate indices, best first); for ``"acc"``/``"acc2"`` a boolean labelling.
    """
    scores, labels = check_batch(scores, labels, np.array([0, np.size(scores)]))[0], np.asarray(labels)
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite (no NaN or inf)")
    return get_loss(loss, **params).argmax(scores, labels)


__all__ = ["Loss", "LOSSES", "LossSpec", "get_loss", "most_violated", "ideal_ranking",
           "positions", "MAPLoss", "ROCLoss", "NDCGLoss", "MRRLoss", "DORMLoss", "ComboLoss",
           "ClassificationLoss", "BalancedClassificationLoss", "add_bias"]
