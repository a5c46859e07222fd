"""String columns (qids, docnos) as int64 codes in the order of their strings: what the canonical row order
of :func:`~pyterrier_svmmap.frames.candidates_from_frame`, the tie policy's docno key
(:mod:`~pyterrier_svmmap.ties`) and the evaluator of ``svmmap reproduce`` sort by. Only the distinct values
are converted to ``str`` and sorted. Needs pandas only (not PyTerrier), for the command line's sake.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def factorised_string_codes(raw_codes: np.ndarray, raw_uniques) -> tuple:
    """(codes, strings) of a factorised column as ``column.astype(str)`` would give it: the distinct raw
    values are converted (merged where two print the same, 1 and "1") and sorted, so that the codes
    (int64) order the rows exactly as their strings do."""
    merged, strings = pd.factorize(pd.Series(raw_uniques).astype(str).to_numpy(dtype=object))
    strings = np.asarray(strings, dtype=object)
    by_string = np.argsort(strings, kind="stable")
    rank = np.empty(len(strings), dtype=np.int64)
    rank[by_string] = np.arange(len(strings))
    return rank[merged][raw_codes], strings[by_string]


def sorted_string_codes(column) -> tuple:
    """(codes, strings) of ``column`` as its ``astype(str)`` values: int64 codes that order the rows as
    their strings do, and the distinct strings sorted (``strings[codes]`` is each row's string). Only the
    distinct values are converted."""
    return factorised_string_codes(*pd.factorize(pd.Series(column), use_na_sentinel=False))
