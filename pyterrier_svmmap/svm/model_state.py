"""A structural SVM's saved state: save, restore and the checks that name the field of a faulty model file."""
from __future__ import annotations

import math
from typing import Dict, List, Tuple

import numpy as np

from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.encoder import parse_blocks
from pyterrier_svmmap.features.layout import FeatureLayout
from pyterrier_svmmap.selection import c_grid, feature_options, features_name, is_auto_c
from pyterrier_svmmap.state import StateError, check_tie_function

#: the values of ``selection`` in a state (how C was chosen)
SELECTIONS = ("validation", "cv", "none")


def _integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _numbers(arrays: Dict[str, np.ndarray], key: str) -> np.ndarray:
    """``arrays[key]`` as floats, refused unless it holds numbers."""
    a = np.asarray(arrays[key])
    if a.dtype.kind not in "fiu":
        raise StateError(key, f"holds {a.dtype} values, not numbers", array=True)
    return a.astype(float)


def check_layout(layout, arrays: Dict[str, np.ndarray], params: dict, fallback: bool) -> None:
    """The layout's meta against the parameters, the ``thresholds`` against the layout (``fallback``: raw layout)."""
    if not isinstance(layout, dict):
        raise StateError("layout", f"must be a dict, got {type(layout).__name__}")
    for key in ("features", "n_bins", "binning", "n_functions", "base_names"):
        if key not in layout:
            raise StateError(f"layout.{key}", "is missing")
    try:
        blocks = parse_blocks(layout["features"])
    except (ValueError, TypeError, AttributeError) as e:
        raise StateError("layout.features", str(e)) from None
    allowed = [features_name(parse_blocks(o)) for o in feature_options(params["features"])] + \
        (["raw"] if fallback else [])
    if features_name(blocks) not in allowed:
        raise StateError("layout.features", f"is {features_name(blocks)!r} but params.features is "
                                            f"{params['features']!r}, whose blocks are {' or '.join(allowed)}")
    for key in ("n_bins", "binning", "threshold_depth", "normalise"):   # normalise: absent in old models, both
        if layout.get(key) != params.get(key):
            raise StateError(f"layout.{key}", f"is {layout.get(key)!r} but params.{key} is {params.get(key)!r}")
    F = layout["n_functions"]
    if not _integer(F) or F < 1:
        raise StateError("layout.n_functions", f"must be a positive integer, got {F!r}")
    names = layout["base_names"]
    if not isinstance(names, list) or len(names) != F:
        raise StateError("layout.base_names", f"must list a name for each of the layout.n_functions = {F} base "
                                              f"functions, got {names!r}")
    if any(BLOCK_KINDS[kind].thresholds for kind in blocks):
        if "thresholds" not in arrays:
            raise StateError("thresholds", f"is missing (the {'+'.join(blocks)} blocks need it)", array=True)
        thresholds = _numbers(arrays, "thresholds")
        if thresholds.shape != (F, params["n_bins"]):
            raise StateError("thresholds", f"has shape {thresholds.shape}, but layout.n_functions = {F} and "
                                           f"params.n_bins = {params['n_bins']} make it ({F}, {params['n_bins']})",
                             array=True)
        if np.isnan(thresholds).any() or (np.diff(thresholds, axis=1) < 0).any():
            raise StateError("thresholds", "must ascend per base function, without NaN", array=True)


def check_weights(arrays: Dict[str, np.ndarray], dim: int, described: str) -> Tuple[np.ndarray, np.ndarray]:
    """(coef, coefs) as floats, checked against the layout's ``dim`` (``described`` in the message)."""
    for key in ("coef", "coefs"):
        if key not in arrays:
            raise StateError(key, "is missing", array=True)
    coef, coefs = _numbers(arrays, "coef"), _numbers(arrays, "coefs")
    if coef.shape != (dim,):
        raise StateError("coef", f"has shape {coef.shape} but the feature layout has {dim} dimensions ({described})",
                         array=True)
    if coefs.ndim != 2 or coefs.shape[1] != dim:
        raise StateError("coefs", f"has shape {coefs.shape} but the feature layout has {dim} dimensions "
                                  f"({described}): expected (C values, {dim})", array=True)
    if not np.isfinite(coef).all():
        raise StateError("coef", "holds NaN or infinite weights", array=True)
    return coef, coefs


def check_fitted(meta: dict, params: dict, n_functions: int, base_names, blocks) -> None:
    """The fitted fields: each index, name, C and count in range, the path's entries with a C."""
    check_tie_function(meta.get("tie_function", 0), n_functions)
    if "features" in meta and meta["features"] != features_name(blocks):
        raise StateError("features", f"is {meta['features']!r} but the layout's blocks are {features_name(blocks)!r}")
    C = meta["C_"]
    grid = c_grid(params["C"])
    if isinstance(C, bool) or not isinstance(C, (int, float)) or not math.isfinite(C) or (C not in grid and C != 0):
        raise StateError("C_", f"is {C!r}, not a C of params.C = {grid} (or 0, the base function kept)")
    prior = meta.get("prior_function")
    if prior is not None and prior not in base_names:
        raise StateError("prior_function", f"is {prior!r}, not one of the base functions {list(base_names)}")
    if "selection" in meta and meta["selection"] not in SELECTIONS:
        raise StateError("selection", f"is {meta['selection']!r}, not one of {list(SELECTIONS)}")
    if not _integer(meta["n_iter"]) or meta["n_iter"] < 0:
        raise StateError("n_iter", f"must be a non-negative integer, got {meta['n_iter']!r}")
    path = meta["path"]
    if not isinstance(path, list) or not all(isinstance(p, dict) and "C" in p for p in path):
        raise StateError("path", "must be a list of entries, each with its C")


def save(ranker) -> Tuple[dict, Dict[str, np.ndarray]]:
    """(meta, arrays) of a fitted StructSVMRanker: everything :func:`restore` needs."""
    if not hasattr(ranker, "coef_"):
        raise RuntimeError("get_state() needs a fitted ranker")
    layout_meta, layout_arrays = ranker.layout_.get_state()
    params = {k: getattr(ranker, k) for k in ranker.MODEL_PARAMS}
    params["C"] = ranker.C if is_auto_c(ranker.C) else c_grid(ranker.C)
    if not isinstance(params["loss"], str):
        raise ValueError(f"a model with a Loss instance ({ranker.loss!r}) cannot be saved; give the loss by name "
                         "and its parameters in loss_params")
    meta = dict(params=params, C_=ranker.C_, layout=layout_meta, path=ranker.path_, history=ranker.history_,
                n_iter=int(ranker.n_iter_), converged=bool(ranker.converged_),
                training=ranker.training_summary_, prior_function=getattr(ranker, "prior_function_", None),
                selection=ranker.selection_, features=ranker.features_, tie_function=int(ranker.tie_function_),
                **({"first_stage": ranker.first_stage_} if getattr(ranker, "first_stage_", None) is not None else {}),
                **({"choice": ranker.choice_} if getattr(ranker, "choice_", None) is not None else {}))
    arrays = dict(coef=np.asarray(ranker.coef_, dtype=float), coefs=np.asarray(ranker.coefs_, dtype=float),
                  **layout_arrays)
    return meta, arrays


def restore(ranker, meta: dict, arrays: Dict[str, np.ndarray]):
    """The state :func:`save` wrote, checked whole and set on ``ranker`` (built from the state's parameters)."""
    layout = meta["layout"]
    if isinstance(layout, dict) and layout.get("bias", False) is None:    # format 1/2: the loss decides
        layout = dict(layout, bias=ranker.needs_bias)
    check_layout(layout, arrays, ranker.get_params(), fallback=meta["C_"] == 0)
    try:
        ranker.layout_ = FeatureLayout.from_state(layout, arrays)
    except (TypeError, ValueError, KeyError) as e:
        raise StateError("layout", str(e)) from None
    if ranker.layout_.bias != ranker.needs_bias:
        has, uses = ("has", "does not use") if ranker.layout_.bias else ("lacks", "needs")
        raise StateError("layout.bias", f"is {ranker.layout_.bias}: the layout {has} a bias, which params.loss="
                                        f"{ranker.loss!r} {uses}")
    coef, coefs = check_weights(
        arrays, ranker.layout_.dim, f"features={ranker.layout_.blocks} on {ranker.layout_.n_functions} base functions"
                                  f"{', bias' if ranker.layout_.bias else ''}")
    check_fitted(meta, ranker.get_params(), ranker.layout_.n_functions, ranker.layout_.base_names,
                 ranker.layout_.blocks)
    ranker.coef_, ranker.coefs_ = coef, coefs
    ranker.features_ = meta.get("features", features_name(ranker.layout_.blocks))
    ranker.tie_function_ = int(meta.get("tie_function", 0))
    ranker.C_ = float(meta["C_"])
    ranker.n_functions_ = ranker.layout_.n_functions
    ranker.base_names_ = list(ranker.layout_.base_names)
    ranker.feature_names_ = ranker.layout_.names()
    ranker.path_ = [dict(p, validation=_nan_if_none(p.get("validation")),
                         **({"cv_scores": [_nan_if_none(x) for x in p["cv_scores"]]} if "cv_scores" in p else {}))
                    for p in meta["path"]]
    learned = (meta.get("choice") or {}).get("best_learned") or {"features": ranker.features_}
    ranker.validation_ = block_validation(ranker.path_, learned)
    ranker.history_ = list(meta.get("history") or [])
    ranker.n_iter_ = int(meta["n_iter"])
    ranker.converged_ = bool(meta["converged"])
    ranker.training_summary_ = dict(meta.get("training") or {})
    ranker.selection_ = meta.get("selection", "validation" if len(ranker.path_) > 1 else "none")
    if meta.get("prior_function") is not None:
        ranker.prior_function_ = meta["prior_function"]
    ranker.first_stage_ = meta.get("first_stage")
    if meta.get("choice") is not None:
        ranker.choice_ = meta["choice"]
    return ranker


def block_validation(path: List[dict], learned: dict) -> Dict[float, float]:
    """``validation_``: C → the score of the path's entries of ``learned``'s features and prior (fallback left
    out)."""
    return {float(p["C"]): p["validation"] for p in path
            if p.get("features", learned["features"]) == learned["features"]
            and p.get("prior") == learned.get("prior") and not p.get("fallback")}


def _nan_if_none(v):
    return float("nan") if v is None else float(v)
