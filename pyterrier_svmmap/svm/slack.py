"""Slack groups: a structural SVM's losses, each with its own slack and C (SVM-COMBO's separate slacks, §3.7)."""
from __future__ import annotations

from dataclasses import dataclass

from pyterrier_svmmap.svm.losses import ComboLoss, LossSpec, get_loss
from pyterrier_svmmap.svm.losses.base import Loss


@dataclass
class SlackGroup:
    """One loss with its own slack variable and regularisation constant."""
    loss: Loss
    C: float


def make_slack_groups(loss: LossSpec, C: float, **params) -> list:
    """The solver's slack groups: one for a single loss; for ``"combo"`` one per member with C·C_weights[l]
    (``slack="separate"``) or one :class:`ComboLoss` (``slack="shared"``).

    Parameters
    ----------
    loss : str or Loss
        Anything :func:`~pyterrier_svmmap.svm.losses.get_loss` takes, or ``"combo"``.
    C : float
        The regularisation constant (positive).
    **params
        The loss's parameters; for ``"combo"``: ``losses``, ``slack`` and ``C_weights``.

    Returns
    -------
    list of SlackGroup
    """
    C = float(C)
    if C <= 0:
        raise ValueError(f"C must be positive, got {C}")
    if isinstance(loss, str) and loss.strip().lower() == "combo":
        members = params.pop("losses", None)
        slack = params.pop("slack", "separate")
        weights = params.pop("C_weights", None)
        if params:
            raise ValueError(f"unknown combo parameters {sorted(params)}; use losses, slack, C_weights")
        if not members:
            raise ValueError("loss='combo' needs losses=[...], e.g. ['map', 'ndcg@10']")
        members = [get_loss(m) for m in members]
        if slack == "shared":
            if weights is not None:
                raise ValueError("C_weights apply to slack='separate' only (shared slacks have one C)")
            return [SlackGroup(ComboLoss(members), C)]
        if slack != "separate":
            raise ValueError(f"slack must be 'separate' or 'shared', got {slack!r}")
        weights = [1.0] * len(members) if weights is None else [float(w) for w in weights]
        if len(weights) != len(members) or min(weights) <= 0:
            raise ValueError(f"C_weights must be {len(members)} positive numbers, got {weights}")
        return [SlackGroup(m, C * w) for m, w in zip(members, weights)]
    return [SlackGroup(get_loss(loss, **params), C)]
