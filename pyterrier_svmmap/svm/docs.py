"""The structural SVM learners' docstrings: their learned attributes, documented once, and their spec's Parameters."""
from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from pyterrier_svmmap.params import ParamSpec

#: the learned attributes every structural SVM learner sets in ``fit``
ATTRIBUTES: Dict[str, Tuple[str, str]] = {
    "coef_": ("ndarray", "w, the weights of the kept model."),
    "C_": ("float", "The kept C."),
    "features_": ("str", "The feature blocks of the kept model (``features``, or the one ``\"auto\"`` chose)."),
    "path_": ("list of dict", "Per (features, prior, C), in order: its score (``validation``, per fold "
              "``cv_scores``) and training figures."),
    "coefs_": ("ndarray", "w of every C of the kept features' path, in the grid's order."),
    "validation_": ("dict", "C → validation MAP of the kept features."),
    "selection_": ("str", "How the setting was chosen: ``\"validation\"``, ``\"cv\"`` or ``\"none\"``."),
    "history_": ("list of dict", "Per cutting-plane iteration of the kept model: objectives, gap, seconds, …"),
    "n_iter_": ("int", "Cutting-plane iterations of the kept model."),
    "converged_": ("bool", "Whether the kept model reached the tolerance ε."),
    "layout_": ("FeatureLayout", "φ's layout: blocks, thresholds, base names."),
    "feature_names_": ("list of str", "A name per dimension of φ."),
    "base_names_": ("list of str", "A name per base function."),
    "tie_function_": ("int", "The base function whose score breaks ties (:mod:`pyterrier_svmmap.ties`)."),
    "prior_function_": ("str", "With ``prior=\"best\"``: the base function regularised towards."),
    "first_stage_": ("str or None", "The reference function given or declared (``first_stage``), or None."),
    "choice_": ("dict", "With ``selection=\"auto\"``: the decision and its evidence (docs/model-selection.md)."),
}

def compose(summary: str, parameters: "ParamSpec", attributes: Sequence[str] = tuple(ATTRIBUTES),
            extra_attributes: Optional[Dict[str, Tuple[str, str]]] = None) -> str:
    """A class docstring: ``summary``, the Parameters of ``parameters`` and the Attributes of ``attributes``."""
    entries = dict(ATTRIBUTES, **(extra_attributes or {}))
    lines = ["Attributes", "----------"]
    for name in attributes:
        kind, text = entries[name]
        lines.append(f"{name} : {kind}")
        lines += textwrap.wrap(text, width=100, initial_indent="    ", subsequent_indent="    ")
    return (summary.rstrip() + "\n\n" + parameters.doc_section() + "\n\n" + textwrap.indent("\n".join(lines), "    ")
            + "\n    ")
