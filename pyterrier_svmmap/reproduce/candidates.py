"""The candidate set of every query: the union of the base runs, one feature per base function.

Same output as ``pyterrier_svmmap.RunFeatures(base)`` given precomputed runs: one row per
(qid, docno) retrieved by at least one base function, with ``features`` a float array holding each
base function's score (NaN where that function did not retrieve the document). Used until
``RunFeatures`` is available; :func:`candidate_features` picks whichever exists.
"""
from __future__ import annotations

import logging
from typing import Dict, List

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)


def union_features(topics: pd.DataFrame, runs: Dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Columns qid, query, docno, features; queries in ``topics`` order, documents by docno."""
    names: List[str] = list(runs)
    frames = [r[["qid", "docno", "score"]].assign(_f=i) for i, r in enumerate(runs.values())]
    allr = pd.concat(frames, ignore_index=True)
    allr = allr[allr["qid"].isin(set(topics["qid"]))]
    keys = pd.MultiIndex.from_arrays([allr["qid"].astype(str).values, allr["docno"].astype(str).values])
    codes, uniq = pd.factorize(keys)
    matrix = np.full((len(uniq), len(names)), np.nan)
    matrix[codes, allr["_f"].values] = allr["score"].astype(float).values
    out = pd.DataFrame({"qid": uniq.get_level_values(0), "docno": uniq.get_level_values(1)})
    qorder = {q: i for i, q in enumerate(topics["qid"])}
    order = np.lexsort((out["docno"].values, out["qid"].map(qorder).values))
    out = out.iloc[order].reset_index(drop=True)
    matrix = matrix[order]
    out = out.merge(topics[["qid", "query"]], on="qid", how="left")[["qid", "query", "docno"]]
    out["features"] = list(matrix)
    return out


def candidate_features(topics: pd.DataFrame, runs: Dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The candidates with features, through ``RunFeatures`` when the package has it."""
    try:
        from pyterrier_svmmap import RunFeatures
    except ImportError:
        logger.debug("pyterrier_svmmap.RunFeatures not available: using the local union")
        return union_features(topics, runs)
    return RunFeatures(runs).transform(topics[["qid", "query"]])


def feature_matrix(frame: pd.DataFrame) -> np.ndarray:
    """The (rows, base functions) matrix of a frame's ``features`` column."""
    return np.stack(frame["features"].values) if len(frame) else np.empty((0, 0))
