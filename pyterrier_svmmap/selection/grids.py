"""What a search chooses among: C grids, the (feature blocks, prior) settings and the folds."""
from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.encoder import parse_blocks

#: the default grid of C (OP 1's constant: ½‖w‖² + C/n Σ ξ_i), searched on validation queries
DEFAULT_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)

#: the paper's grid and two smaller C, near the prior's base function
SELECTION_C_GRID = (1e-4, 1e-3) + DEFAULT_C_GRID

#: ``C="auto"``: C = c / R² for each c (:func:`resolve_c_grid`); at c = 1 regulariser and loss weigh alike
AUTO_C_GRID = (1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0)

#: the C, feature blocks and prior of the estimators' default (``selection="auto"``)
DEFAULT_C = "auto"
DEFAULT_FEATURES = "auto"
DEFAULT_PRIOR = "best"

#: the selection methods: the paper's protocol (``"validation"``) and the default (``"auto"``)
SELECTION_METHODS = ("validation", "auto")

#: the default level of the fallback test: the median-unbiased decision
DEFAULT_ALPHA = 0.5

#: from this many validation queries on they alone are the evidence (None: always cross-validate)
DEFAULT_MIN_VALID_QUERIES = None

#: the feature blocks that ``features="auto"`` chooses among, jointly with C
AUTO_FEATURES = ("bins", "raw", "bins+raw")

#: a setting: (feature blocks, prior)
Setting = Tuple[Any, Optional[str]]


def is_auto_c(C) -> bool:
    """Whether ``C`` is ``"auto"`` (:data:`AUTO_C_GRID` relative to φ's spread)."""
    return isinstance(C, str) and C == "auto"


def c_grid(C) -> List[float]:
    """``C`` as a checked list of floats (finite, positive, distinct); :data:`AUTO_C_GRID` for ``"auto"``."""
    if is_auto_c(C):
        return list(AUTO_C_GRID)
    try:
        grid = [float(c) for c in np.atleast_1d(np.asarray(C, dtype=float))]
    except (TypeError, ValueError):
        grid = []
    if not grid or any(not math.isfinite(c) or c <= 0 for c in grid):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}")
    if len(set(grid)) != len(grid):
        raise ValueError(f"C has duplicate values: {C!r}")
    return grid


def resolve_c_grid(C, spread: float) -> List[float]:
    """``C``, or for ``"auto"`` :data:`AUTO_C_GRID` / ``spread`` (φ's R²: OP 1 depends on C only through C·R²)."""
    if not is_auto_c(C):
        return c_grid(C)
    finite = spread > 0 and math.isfinite(spread)
    return [float(c / spread) for c in AUTO_C_GRID] if finite else list(AUTO_C_GRID)


def feature_options(features: Union[str, Sequence[str]]) -> List[Union[str, Sequence[str]]]:
    """The feature blocks to train: :data:`AUTO_FEATURES` for ``"auto"``, else ``[features]``."""
    return list(AUTO_FEATURES) if isinstance(features, str) and features == "auto" else [features]


def features_name(features) -> str:
    return features if isinstance(features, str) else "+".join(features)


def prior_options(prior: Optional[str]) -> List[Optional[str]]:
    """The priors to train: ``[None, "best"]`` for ``"auto"``, else ``[prior]``."""
    return [None, "best"] if prior == "auto" else [prior]


def model_class(features) -> int:
    """0 for a linear function of the scores, 1 with the paper's threshold indicators (step functions)."""
    return max(BLOCK_KINDS[kind].model_class for kind in parse_blocks(features))


def setting_levels(settings: Sequence[Setting], n_c: int) -> List[List[int]]:
    """The evidence's columns grouped by :func:`model_class`, simplest first: :func:`~.rule.choose`'s ``levels``."""
    classes = sorted({model_class(features) for features, _ in settings})
    return [[s * n_c + i for s, (features, _) in enumerate(settings) if model_class(features) == c
             for i in range(n_c)] for c in classes]


def cv_folds(n_queries: int, n_folds: int, random_state: Optional[int], n_settings: int) -> np.ndarray:
    """Each query's fold: a seeded shuffle dealt round-robin; ValueError with fewer queries than folds."""
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
    """``"validation"`` with at least ``min_valid_queries`` validation queries, else ``"cv"``."""
    return "validation" if min_valid_queries is not None and n_valid >= min_valid_queries else "cv"
