"""The fitted state of the array-level learners as (JSON-able meta, arrays): the checks and conversions they share."""
from __future__ import annotations

import inspect
import math
from typing import Dict, Iterable, Optional, Sequence

import numpy as np


class StateError(ValueError):
    """A fitted state that does not hold together: its ``field`` (in meta, or an array) and ``problem``."""

    def __init__(self, field: str, problem: str, array: bool = False):
        self.field, self.problem, self.array = field, problem, array
        super().__init__(f"{'arrays' if array else 'state'}.{field}: {problem}")


def check_tie_function(tie, n_functions: int) -> None:
    """:class:`StateError` unless a state's ``tie_function`` indexes one of its ``n_functions``."""
    if isinstance(tie, (bool, np.bool_)) or not isinstance(tie, (int, np.integer)) or not 0 <= tie < n_functions:
        raise StateError("tie_function", f"is {tie!r}, not the index of one of the {n_functions} base functions "
                                         f"(0 to {n_functions - 1})")


def json_float(x: float):
    """``x`` for JSON: a float if finite (its repr round-trips), else "nan", "inf" or "-inf"."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def float_from_json(v, what: str) -> float:
    """Inverse of :func:`json_float`; ValueError naming ``what`` for anything else."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) or v in ("nan", "inf", "-inf"):
        return float(v)
    raise ValueError(f"{what} must be a number (or 'nan', 'inf', '-inf'), got {v!r}")


def int_from_json(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, got {v!r}")
    return int(v)


def json_params(params: dict, owner: str) -> dict:
    """Constructor parameters as JSON values; ValueError naming one that cannot be stored."""
    def conv(v, where):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(float(v)):
                raise ValueError(f"{owner}: parameter {where}={v!r} is not finite and cannot be saved")
            return float(v)
        if isinstance(v, (list, tuple, np.ndarray)):
            return [conv(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: conv(x, f"{where}[{k!r}]") for k, x in v.items()}
        raise ValueError(f"{owner}: parameter {where}={v!r} ({type(v).__name__}) cannot be saved in a "
                         "model file; pass None, numbers, strings, lists or dicts of these")
    return {k: conv(v, k) for k, v in params.items()}


def check_state(cls, meta: dict, arrays: Dict[str, np.ndarray], meta_keys: Iterable[str],
                array_keys: Iterable[str]) -> dict:
    """Check that a state is ``cls``'s and complete; ``meta["params"]`` checked against ``cls``'s constructor."""
    name = cls.__name__
    if not isinstance(meta, dict) or not isinstance(arrays, dict):
        raise ValueError(f"{name} state must be (meta dict, arrays dict), got "
                         f"({type(meta).__name__}, {type(arrays).__name__})")
    if meta.get("ranker") != name:
        raise ValueError(f"this state is of ranker {meta.get('ranker')!r}, not {name!r}; load it with "
                         f"the class named in meta['ranker']")
    missing = [f"meta[{k!r}]" for k in ("params", *meta_keys) if k not in meta] + \
              [f"arrays[{k!r}]" for k in array_keys if k not in arrays]
    if missing:
        raise ValueError(f"{name} state is incomplete: missing {', '.join(missing)} (was it written "
                         "by get_state of this version?)")
    params = meta["params"]
    if not isinstance(params, dict):
        raise ValueError(f"{name} state: meta['params'] must be a dict, got {type(params).__name__}")
    expected = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
    lacking, unknown = [n for n in expected if n not in params], [n for n in params if n not in expected]
    problems = [f"{what} {names}" for what, names in (("lacks", lacking), ("has unknown", unknown)) if names]
    if problems:
        raise ValueError(f"{name} state: meta['params'] {'; '.join(problems)} (the constructor takes {expected})")
    return dict(params)


def state_array(arrays: Dict[str, np.ndarray], key: str, shape: Sequence[Optional[int]], owner: str,
                dtype=float) -> np.ndarray:
    """A copy of ``arrays[key]`` as ``dtype``, checked to have ``shape`` (None: any length)."""
    try:
        a = np.array(arrays[key], dtype=dtype, copy=True)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{owner} state: arrays[{key!r}] is not a {np.dtype(dtype).name} array ({e})") from None
    if a.ndim != len(shape) or any(n is not None and n != m for n, m in zip(shape, a.shape)):
        want = "(" + ", ".join("any" if n is None else str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"{owner} state: arrays[{key!r}] has shape {a.shape}, expected {want}")
    return a
