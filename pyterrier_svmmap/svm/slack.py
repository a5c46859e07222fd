"""Slack groups: the losses of a structural SVM, each with its own slack variable and constant C.

One loss is one group; SVM-COMBO with separate slacks (Chakrabarti et al. 2008 §3.7) is one group per member
loss. The cutting-plane solver (:mod:`~pyterrier_svmmap.svm.cutting_plane`) adds one constraint per group
and iteration.
"""
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
    """The solver's slack groups (:class:`SlackGroup`) for a loss specification.

    * a single loss (name, shorthand or Loss; ``params`` go to :func:`get_loss`): one group with ``C``;
    * ``loss="combo"`` (SVM-COMBO, Chakrabarti et al. 2008 §3.7) with ``losses=[...]`` (names or Loss
      instances), ``slack="separate"`` (default; one group per loss, each with its own slack and
      constant C·C_weights[l]) or ``slack="shared"`` (one group with a :class:`ComboLoss`, Δ = max_l Δ_l
      in effect, constant C), and ``C_weights`` (per-loss multipliers of C; separate slacks only).
      A :class:`ComboLoss` instance is a shared-slack combo.

    Parameters
    ----------
    loss : str or Loss
        The loss specification (:func:`~pyterrier_svmmap.svm.losses.get_loss`), or ``"combo"``.
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
