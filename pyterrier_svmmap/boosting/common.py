"""What the boosted learners share: missing scores, labels and inputs, LightGBM, and the model state's parts.

Every learner of :mod:`pyterrier_svmmap.boosting` takes a dense matrix ``raw`` (candidates × base functions, NaN
where a function did not retrieve the candidate), ``labels`` and ``offsets`` (length Q + 1; candidates of a query
contiguous), like the rest of the numeric core, and fills missing scores itself (:func:`fill_missing`,
:func:`query_minmax`).

LightGBM is optional (``pip install pyterrier-svmmap[peers]``) and only imported when a LightGBM learner is
fitted or loaded (:func:`load_lightgbm`).

Model state. Every ranker of the package has ``get_params()`` (the constructor parameters),
``get_state() -> (meta, arrays)`` and ``from_state(meta, arrays)``: ``meta`` is JSON (constructor parameters
under ``meta["params"]``, learned scalars, ``meta["ranker"]`` the class name), ``arrays`` the learned numpy
arrays; a ranker rebuilt by ``from_state`` predicts bit-identically. The LightGBM boosters are kept as
LightGBM's text model (UTF-8 bytes in a uint8 array, :func:`booster_bytes`), which writes every threshold and
leaf value with 17 significant digits and so round-trips doubles exactly.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from pyterrier_svmmap.features.transforms import minmax_normalise, query_min_max
from pyterrier_svmmap.queries import Queries, query_ids
from pyterrier_svmmap.params import Parametrized
from pyterrier_svmmap.state import int_from_json, json_params, state_array

PEERS_HINT = ("this learner needs LightGBM, an optional dependency of pyterrier-svmmap; "
              "install it with: pip install pyterrier-svmmap[peers]")


def load_lightgbm():
    """Import LightGBM lazily, with an installation hint (:data:`PEERS_HINT`) when it is missing."""
    try:
        import lightgbm
    except ImportError as e:
        raise ImportError(PEERS_HINT) from e
    return lightgbm


# -- missing scores, labels, inputs ------------------------------------------------------------
def fill_missing(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Raw scores with a missing score replaced by the query's lowest score of that function, minus
    a margin (1% of the query's range, at least 1e-6), so "not retrieved" ranks below every retrieved
    candidate; a function retrieving nothing for a query gives 0 there."""
    raw = np.asarray(raw, dtype=float)
    lo, hi = query_min_max(raw, offsets)
    margin = np.maximum(0.01 * np.nan_to_num(hi - lo), 1e-6)
    fill = np.nan_to_num(lo - margin, nan=0.0)[query_ids(offsets)]
    return np.where(np.isnan(raw), fill, raw)


def query_minmax(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-query min–max normalised scores, missing → 0 (LETOR's "QueryLevelNorm", which AdaRank's
    experiments used; a linear combination of raw scores of different scales would be meaningless)."""
    return np.nan_to_num(minmax_normalise(np.asarray(raw, dtype=float), offsets), nan=0.0)


def int_labels(labels: np.ndarray) -> np.ndarray:
    """Relevance grades as non-negative integers (negative judgements count as 0). The boosted learners use
    graded labels as classes / gains, so a fractional label is an error, not silently rounded."""
    labels = np.asarray(labels, dtype=float)
    frac = labels != np.rint(labels)
    if frac.any():
        raise ValueError(f"{int(frac.sum())} labels are not whole numbers (e.g. {labels[frac][0]:g}); LambdaMART and "
                         "McRank learn from integer relevance grades: round the qrels' labels, or binarise them "
                         "(label >= 1 is relevant, the rule of the other learners)")
    return np.clip(labels, 0, None).astype(int)


# -- model state ----------------------------------------------------------------------------------
def booster_bytes(booster) -> np.ndarray:
    """LightGBM's text model of ``booster`` (all iterations) as a uint8 array of UTF-8 bytes."""
    return np.frombuffer(booster.model_to_string(num_iteration=-1).encode("utf-8"), dtype=np.uint8).copy()


def booster_from_bytes(arrays: Dict[str, np.ndarray], owner: str, n_functions: int):
    """The LightGBM booster of ``arrays["booster"]`` (see :func:`booster_bytes`), checked to take
    ``n_functions`` features."""
    lgb = load_lightgbm()
    raw = state_array(arrays, "booster", (None,), owner, dtype=np.uint8)
    try:
        booster = lgb.Booster(model_str=raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, lgb.basic.LightGBMError) as e:
        raise ValueError(f"{owner} state: arrays['booster'] is not a LightGBM text model ({e})") from None
    if booster.num_feature() != n_functions:
        raise ValueError(f"{owner} state: the booster takes {booster.num_feature()} features but "
                         f"meta['n_functions'] is {n_functions}")
    return booster


def n_functions_of(meta: dict, owner: str) -> int:
    """``meta["n_functions"]`` of a saved ranker, checked to be a whole number ≥ 1 (ValueError naming ``owner``)."""
    n = int_from_json(meta["n_functions"], f"{owner} state: meta['n_functions']")
    if n < 1:
        raise ValueError(f"{owner} state: meta['n_functions'] must be at least 1, got {n}")
    return n


class Peer(Parametrized):
    """Shared plumbing: scikit-learn's habits (``PARAMS`` declares the keyword-only constructor, which stores its
    parameters; learned attributes end in _), and the :class:`~pyterrier_svmmap.queries.QueryRanker` protocol
    over each learner's ``fit`` and ``predict``."""

    #: whether ``fit`` takes ``n_relevant``/``n_relevant_valid`` (the measure it boosts is normalised by them)
    _FIT_TAKES_N_RELEVANT = False

    def fit_queries(self, train: Queries, valid: Optional[Queries] = None):
        """``fit`` on :class:`~pyterrier_svmmap.queries.Queries` (the validation queries, when given, as
        ``fit``'s ``raw_valid``, ``labels_valid``, ``offsets_valid``); returns self."""
        args = (None, None, None) if valid is None else (valid.raw, valid.labels, valid.offsets)
        if self._FIT_TAKES_N_RELEVANT:
            return self.fit(train.raw, train.labels, train.offsets, *args, n_relevant=train.n_relevant,
                            n_relevant_valid=None if valid is None else valid.n_relevant)
        return self.fit(train.raw, train.labels, train.offsets, *args)

    def decision_function(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """``predict`` (the :class:`~pyterrier_svmmap.queries.QueryRanker` protocol's name)."""
        return self.predict(raw, offsets)

    def _check_fitted(self):
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def _check_width(self, raw):
        if raw.shape[1] != self.n_functions_:
            raise ValueError(f"trained on {self.n_functions_} base functions, got {raw.shape[1]}")

    def _meta(self) -> dict:
        self._check_fitted()
        name = type(self).__name__
        return {"ranker": name, "params": json_params(self.get_params(deep=False), name),
                "n_functions": int(self.n_functions_)}
