"""What a search chooses among: the C grids, the feature blocks and priors of its settings, and the folds.

A *setting* is a pair (feature blocks, prior); each setting is trained along a path of C values. The default
(``selection="auto"``) compares :data:`AUTO_FEATURES` with the prior ``"best"`` over :data:`AUTO_C_GRID`,
relative to φ's spread (:func:`resolve_c_grid`); the paper's protocol the user's blocks over
:data:`DEFAULT_C_GRID`. docs/model-selection.md gives the held-out evidence for these ranges.
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.encoder import parse_blocks

#: the default grid of C (OP 1's constant: ½‖w‖² + C/n Σ ξ_i), searched on validation queries
DEFAULT_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)

#: the paper's grid and two smaller C, with which the prior-regularised model ½‖w − w₀‖² comes close to the
#: base function itself
SELECTION_C_GRID = (1e-4, 1e-3) + DEFAULT_C_GRID

#: ``C="auto"`` (the estimators' default): this grid relative to φ's spread R², i.e. C = c / R² for each c
#: (:func:`resolve_c_grid`). At c = 1 the regulariser and the loss weigh alike (a margin of 1 between candidates
#: a distance R apart needs ‖w‖ ≈ 1/R); the grid spans from nearly the prior's base function (1e-4) to two decades
#: above that balance (100); beyond it each C costs the most iterations of its path
AUTO_C_GRID = (1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0)

#: the C, feature blocks and prior of the estimators' default (``selection="auto"``)
DEFAULT_C = "auto"
DEFAULT_FEATURES = "auto"
DEFAULT_PRIOR = "best"

#: the selection methods a learner with a grid takes: ``"validation"`` (the paper's protocol: the best
#: validation MAP, or cross-validation over the training queries without validation data) or ``"auto"``
SELECTION_METHODS = ("validation", "auto")

#: the default level of the fallback test (:func:`~pyterrier_svmmap.selection.rule.choose`): the
#: median-unbiased decision
DEFAULT_ALPHA = 0.5

#: the default size from which a given validation set alone is the evidence of ``selection="auto"``
#: (:func:`evidence_source`): None, always cross-validate over every judged query
DEFAULT_MIN_VALID_QUERIES = None

#: the feature blocks that ``features="auto"`` chooses among, jointly with C (no block wins on every collection:
#: docs/model-selection.md)
AUTO_FEATURES = ("bins", "raw", "bins+raw")

#: a setting: (feature blocks, prior)
Setting = Tuple[Any, Optional[str]]


def is_auto_c(C) -> bool:
    """Whether ``C`` is ``"auto"``: the grid :data:`AUTO_C_GRID` relative to φ's spread (:func:`resolve_c_grid`)."""
    return isinstance(C, str) and C == "auto"


def c_grid(C) -> List[float]:
    """``C`` (a number or a sequence) as a list of floats, checked: finite, positive, no duplicates; for
    ``"auto"``, :data:`AUTO_C_GRID` (relative values, :func:`resolve_c_grid` scales them)."""
    if is_auto_c(C):
        return list(AUTO_C_GRID)
    try:
        grid = [float(c) for c in np.atleast_1d(np.asarray(C, dtype=float))]
    except (TypeError, ValueError):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}") from None
    if not grid or any(not math.isfinite(c) or c <= 0 for c in grid):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}")
    if len(set(grid)) != len(grid):
        raise ValueError(f"C has duplicate values: {C!r}")
    return grid


def resolve_c_grid(C, spread: float) -> List[float]:
    """The C values to train: ``C`` itself (:func:`c_grid`), or for ``C="auto"`` the relative grid
    :data:`AUTO_C_GRID` divided by ``spread``, φ's R² (:meth:`~pyterrier_svmmap.features.matrices.FeatureMatrix.spread`).

    The constraints of a ranking loss are differences of φ within a query, and the solution of OP 1 depends on
    C only through C·R² once φ is rescaled, so a relative grid means the same regularisation for every feature
    block and number of base functions (SVMlight's default C = 1/mean ‖x‖² rests on the same argument)."""
    if not is_auto_c(C):
        return c_grid(C)
    if not spread > 0 or not math.isfinite(spread):
        return list(AUTO_C_GRID)
    return [float(c / spread) for c in AUTO_C_GRID]


def feature_options(features: Union[str, Sequence[str]]) -> List[Union[str, Sequence[str]]]:
    """The feature blocks to train: :data:`AUTO_FEATURES` for ``features="auto"``, else ``[features]``."""
    return list(AUTO_FEATURES) if isinstance(features, str) and features == "auto" else [features]


def features_name(features) -> str:
    """``"bins+raw"`` for ``("bins", "raw")`` or ``"bins+raw"``."""
    return features if isinstance(features, str) else "+".join(features)


def prior_options(prior: Optional[str]) -> List[Optional[str]]:
    """The priors to train: both (``None`` and ``"best"``) for ``prior="auto"``, else ``[prior]``."""
    return [None, "best"] if prior == "auto" else [prior]


def model_class(features) -> int:
    """How rich the model of feature blocks ``features`` is: 0 for a linear function of the scores (``raw``,
    ``minmax``), 1 with the paper's threshold indicators (``bins``: a step function of each score, fitted
    thresholds and many more weights)."""
    return max(BLOCK_KINDS[kind].model_class for kind in parse_blocks(features))


def setting_levels(settings: Sequence[Setting], n_c: int) -> List[List[int]]:
    """The evidence's columns (``n_c`` per setting, setting-major) grouped by :func:`model_class` of each
    setting's features, simplest first: the ``levels`` of :func:`~pyterrier_svmmap.selection.rule.choose`."""
    classes = sorted({model_class(features) for features, _ in settings})
    return [[s * n_c + i for s, (features, _) in enumerate(settings) if model_class(features) == c
             for i in range(n_c)] for c in classes]


def cv_folds(n_queries: int, n_folds: int, random_state: Optional[int], n_settings: int) -> np.ndarray:
    """The fold (0 … ``n_folds`` − 1) of each of ``n_queries`` queries: queries shuffled with ``random_state``,
    then dealt round-robin, so that the folds differ in size by one at most. ValueError when there are
    fewer queries than folds (``n_settings``, the settings to compare, for the message) or fewer than 2 folds."""
    if n_folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {n_folds}")
    if n_queries < n_folds:
        raise ValueError(f"{n_settings} (features, C) settings and no validation data were given, so they are chosen "
                         f"by {n_folds}-fold cross-validation, which needs at least {n_folds} usable training "
                         f"queries (got {n_queries}); give validation data, a single C, or a smaller cv")
    fold = np.empty(n_queries, dtype=np.int64)
    fold[np.random.default_rng(random_state).permutation(n_queries)] = np.arange(n_queries) % n_folds
    return fold


def evidence_source(n_valid: int, min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES) -> str:
    """``"validation"`` when ``min_valid_queries`` is given and the validation set has at least that many
    queries, else ``"cv"`` (cross-validation)."""
    return "validation" if min_valid_queries is not None and n_valid >= min_valid_queries else "cv"
