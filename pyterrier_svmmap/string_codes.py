"""String columns (qids, docnos) as int64 codes in the order of their ``str`` values."""
from __future__ import annotations

import numpy as np


def factorised_string_codes(raw_codes: np.ndarray, raw_uniques) -> tuple:
    """(codes, strings) of a factorised column as ``column.astype(str)`` gives them, codes ordered as strings."""
    rank, strings = sorted_string_codes(raw_uniques)
    return rank[np.asarray(raw_codes)], strings


def sorted_string_codes(column) -> tuple:
    """(codes, strings) of ``column``'s ``str`` values: codes ordered as the strings, the distinct strings sorted."""
    a = np.asarray(column)
    a = a if a.dtype.kind == "U" else np.asarray(a, dtype=object).astype(str)
    strings, codes = np.unique(a, return_inverse=True)
    return codes.astype(np.int64).ravel(), strings.astype(object)
