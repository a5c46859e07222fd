"""String columns (qids, docnos) as int64 codes in the order of their strings (compared as their ``str``, in
code-point order): what the canonical row order of candidates, the tie policy's docno key and ``svmmap
reproduce``'s evaluator sort by. numpy only: the PyTerrier layer factorises large columns with pandas first.
"""
from __future__ import annotations

import numpy as np


def _as_strings(values) -> np.ndarray:
    a = np.asarray(values)
    return a if a.dtype.kind == "U" else np.asarray(a, dtype=object).astype(str)


def factorised_string_codes(raw_codes: np.ndarray, raw_uniques) -> tuple:
    """(codes, strings) of a factorised column (``raw_uniques[raw_codes]`` are its values) as
    ``column.astype(str)`` would give them: the distinct raw values are converted (merged where two print
    the same, 1 and "1") and sorted, so that the codes (int64) order the rows exactly as their strings do."""
    strings, rank = np.unique(_as_strings(raw_uniques), return_inverse=True)
    return rank.astype(np.int64).ravel()[np.asarray(raw_codes)], strings.astype(object)


def sorted_string_codes(column) -> tuple:
    """(codes, strings) of ``column`` as its ``astype(str)`` values: int64 codes that order the rows as
    their strings do, and the distinct strings sorted (``strings[codes]`` is each row's string)."""
    strings, codes = np.unique(_as_strings(column), return_inverse=True)
    return codes.astype(np.int64).ravel(), strings.astype(object)
