"""String columns (qids, docnos) as int64 codes in the order of their ``str`` values."""
from __future__ import annotations

import numpy as np


def _as_strings(values) -> np.ndarray:
    a = np.asarray(values)
    return a if a.dtype.kind == "U" else np.asarray(a, dtype=object).astype(str)


def factorised_string_codes(raw_codes: np.ndarray, raw_uniques) -> tuple:
    """(codes, strings) of a factorised column as ``column.astype(str)`` gives them, codes ordered as strings."""
    strings, rank = np.unique(_as_strings(raw_uniques), return_inverse=True)
    return rank.astype(np.int64).ravel()[np.asarray(raw_codes)], strings.astype(object)


def sorted_string_codes(column) -> tuple:
    """(codes, strings) of ``column``'s ``str`` values: codes ordered as the strings, the distinct strings sorted."""
    strings, codes = np.unique(_as_strings(column), return_inverse=True)
    return codes.astype(np.int64).ravel(), strings.astype(object)
