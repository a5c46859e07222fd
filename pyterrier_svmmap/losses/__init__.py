"""Structural-SVM losses, one module each, and :func:`most_violated`, their public argmax.

Adding a loss is one new module with a :class:`~pyterrier_svmmap.losses.base.Loss` subclass and one
line in :data:`LOSSES`.
"""
from __future__ import annotations

from typing import Callable, Dict, List

import numpy as np

from .base import Loss, ideal_ranking, positions
from .map import MAPLoss

#: loss name → factory taking the loss's keyword parameters (e.g. ``k`` for cutoffs)
LOSSES: Dict[str, Callable[..., Loss]] = {
    "map": MAPLoss,
}


def get_loss(loss, **params) -> Loss:
    """A :class:`Loss` from a name (``"map"``, ...) and its parameters, or a Loss instance as is."""
    if isinstance(loss, Loss):
        if params:
            raise ValueError(f"loss parameters {sorted(params)} were given with a Loss instance; "
                             "set them on the instance instead")
        return loss
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {sorted(LOSSES)}")
    return LOSSES[loss](**params)


def make_slack_groups(loss, C: float, **params) -> List["SlackGroup"]:
    """The solver's slack groups for an estimator's ``loss`` and ``C``: one group for a single loss."""
    from ..solver import SlackGroup
    return [SlackGroup(get_loss(loss, **params), float(C))]


def most_violated(scores, labels, loss="map", **params) -> np.ndarray:
    """The ranking (candidate indices, best first) maximising H(y) = Δ(y) + wᵀΨ(x, y) for one query.

    ``scores`` are the current model's scores wᵀφ(x, d) of the query's candidates; ``labels`` > 0
    marks the relevant ones. This is the loss-augmented inference of Algorithm 1, line 6 in
    Yue et al. (2007); for ``loss="map"`` it is their Algorithm 2.
    """
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(f"scores and labels must be 1-d arrays of one length, got shapes "
                         f"{scores.shape} and {labels.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite (no NaN or inf)")
    return get_loss(loss, **params).argmax(scores, labels)


__all__ = ["Loss", "LOSSES", "get_loss", "make_slack_groups", "most_violated", "ideal_ranking", "positions", "MAPLoss"]
