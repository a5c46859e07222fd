"""Model selection: the one home of choosing among a learner's settings.

A learner with a grid (a C path, feature blocks, an (α, β) grid, …) trains every setting, scores each on
validation queries or by cross-validation over its training queries, and keeps one. This module holds
what every learner shares for that:

* the grids: :data:`DEFAULT_C_GRID`, :func:`c_grid` (a C grid, checked), :data:`AUTO_FEATURES` and
  :func:`feature_options` (the feature blocks ``features="auto"`` compares), :func:`features_name`;
* the score: :func:`validation_map` (MAP, the measure every setting is compared by);
* internal cross-validation: :func:`cv_folds` (folds by query, shuffled with a seed);
* the rule that picks: :func:`select` applies :data:`RULE` (:func:`first_best`, the first maximum) to the
  settings' scores and returns a :class:`Selection`, the evidence of the choice (what ``path_`` and
  ``selection_`` record);
* :func:`best_function`: the base function with the highest training MAP (the tie-break function and the
  prior's function).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Union

import numpy as np

import pyterrier_svmmap._jit as _jit
from pyterrier_svmmap.measures import average_precision

#: the default grid of C (OP 1's constant: ½‖w‖² + C/n Σ ξ_i), searched on validation queries
DEFAULT_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)

#: the feature blocks that ``features="auto"`` chooses among, jointly with C (no block wins everywhere:
#: on Vaswani raw scores beat the paper's bins, on LETOR MQ2008 bins beat raw)
AUTO_FEATURES = ("bins", "raw", "bins+raw")


def c_grid(C) -> List[float]:
    """``C`` (a number or a sequence) as a list of floats, checked: finite, positive, no duplicates."""
    try:
        grid = [float(c) for c in np.atleast_1d(np.asarray(C, dtype=float))]
    except (TypeError, ValueError):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}") from None
    if not grid or any(not math.isfinite(c) or c <= 0 for c in grid):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}")
    if len(set(grid)) != len(grid):
        raise ValueError(f"C has duplicate values: {C!r}")
    return grid


def feature_options(features: Union[str, Sequence[str]]) -> List[Union[str, Sequence[str]]]:
    """The feature blocks to train: :data:`AUTO_FEATURES` for ``features="auto"``, else ``[features]``."""
    return list(AUTO_FEATURES) if isinstance(features, str) and features == "auto" else [features]


def features_name(features) -> str:
    """``"bins+raw"`` for ``("bins", "raw")`` or ``"bins+raw"``."""
    return features if isinstance(features, str) else "+".join(features)


def validation_map(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
                   n_relevant: Optional[np.ndarray] = None) -> float:
    """MAP of ``scores`` (AP normalised by ``n_relevant`` when given, else by the relevant candidates)."""
    return float(average_precision(scores, labels, offsets, n_relevant).mean())


def cv_folds(n_queries: int, n_folds: int, random_state: Optional[int], n_settings: int) -> np.ndarray:
    """The fold (0 … ``n_folds`` − 1) of each of ``n_queries`` queries: queries shuffled with ``random_state``,
    then dealt round-robin, so that the folds differ in size by one at most. ValueError when there are
    fewer queries than folds (``n_settings``, the settings to compare, for the message)."""
    if n_queries < n_folds:
        raise ValueError(f"{n_settings} (features, C) settings and no validation data were given, so they are chosen "
                         f"by {n_folds}-fold cross-validation, which needs at least {n_folds} usable training "
                         f"queries (got {n_queries}); give validation data, a single C, or a smaller cv")
    fold = np.empty(n_queries, dtype=np.int64)
    fold[np.random.default_rng(random_state).permutation(n_queries)] = np.arange(n_queries) % n_folds
    return fold


def first_best(values: Sequence[float]) -> int:
    """The rule that picks: the index of the first maximum, NaN (or None) counting as lowest, so that
    without any score (no validation) the first setting is kept."""
    v = np.array([-np.inf if (x is None or np.isnan(x)) else x for x in values])
    return int(np.argmax(v))


#: the rule that picks a setting from the settings' scores
RULE: Callable[[Sequence[float]], int] = first_best


@dataclass
class Selection:
    """The evidence of one choice among settings.

    Attributes
    ----------
    method : str
        How the settings were scored: ``"validation"`` (on validation queries), ``"cv"`` (mean held-out score
        of cross-validation over the training queries) or ``"none"`` (one setting, nothing compared).
    scores : list of float
        One score per setting, in the settings' order (NaN when not scored).
    fold_scores : ndarray or None
        With ``"cv"``: the held-out score of every (fold, setting).
    chosen : int
        The index of the setting kept.
    """
    method: str
    scores: List[float]
    fold_scores: Optional[np.ndarray]
    chosen: int


def select(scores: Sequence[float], method: str, fold_scores: Optional[np.ndarray] = None) -> Selection:
    """Apply :data:`RULE` to the settings' ``scores`` (``method`` and ``fold_scores`` as in
    :class:`Selection`) and return the evidence with the choice."""
    if method not in ("validation", "cv", "none"):
        raise ValueError(f"method must be 'validation', 'cv' or 'none', got {method!r}")
    scores = [float("nan") if s is None else float(s) for s in scores]
    return Selection(method, scores, fold_scores, RULE(scores))


#: above this many relevant candidates in a query, best_function sorts (its kernel counts |query| per one)
_COUNT_RELEVANT_MAX = 256


def best_function(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> int:
    """The base function with the highest MAP on these queries (a missing score ranks last; the first of
    equal MAPs). Compiled (:mod:`pyterrier_svmmap.measures._kernels`: counts instead of sorts, ~5× faster on Vaswani's
    queries, the same APs bit for bit) when numba is there and no query has many relevant candidates."""
    raw = np.asarray(raw, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    rel = np.ascontiguousarray(np.asarray(labels) > 0)
    jit = _jit.load("measures._kernels", "best_function sorts with numpy")
    if jit is not None and len(raw) and raw.shape[1] and \
            np.add.reduceat(rel.astype(np.int64), offsets[:-1][np.diff(offsets) > 0]).max(initial=0) <= _COUNT_RELEVANT_MAX:
        ap = np.empty((raw.shape[1], len(offsets) - 1))
        jit.function_ap(np.ascontiguousarray(raw), rel, offsets, ap)
        return int(np.argmax([row.mean() for row in ap]))
    filled = np.where(np.isnan(raw), -np.inf, raw)
    return int(np.argmax([average_precision(filled[:, f], labels, offsets).mean() for f in range(raw.shape[1])]))
