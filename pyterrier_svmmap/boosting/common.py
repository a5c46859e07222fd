"""What the boosted learners share: inputs, labels, LightGBM (``[peers]``) and their state (LightGBM's text model)."""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from pyterrier_svmmap.features.transforms import minmax_normalise, query_min_max
from pyterrier_svmmap.params import Parametrized
from pyterrier_svmmap.queries import Queries, check_ranking_arrays, query_ids
from pyterrier_svmmap.state import check_state, int_from_json, json_params, state_array

def load_lightgbm():
    """LightGBM, with an installation hint when it is missing."""
    try:
        import lightgbm
    except ImportError as e:
        raise ImportError("this learner needs LightGBM, an optional dependency of pyterrier-svmmap; "
                          "install it with: pip install pyterrier-svmmap[peers]") from e
    return lightgbm


def fill_missing(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Raw scores, a missing one just below the query's lowest of that function (ranked below every retrieved one)."""
    raw = np.asarray(raw, dtype=float)
    lo, hi = query_min_max(raw, offsets)
    margin = np.maximum(0.01 * np.nan_to_num(hi - lo), 1e-6)
    fill = np.nan_to_num(lo - margin, nan=0.0)[query_ids(offsets)]
    return np.where(np.isnan(raw), fill, raw)


def query_minmax(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-query min–max normalised scores, missing → 0 (LETOR's "QueryLevelNorm", AdaRank's features)."""
    return np.nan_to_num(minmax_normalise(np.asarray(raw, dtype=float), offsets), nan=0.0)


def int_labels(labels: np.ndarray) -> np.ndarray:
    """Relevance grades as non-negative integers; a fractional label is an error, not silently rounded."""
    labels = np.asarray(labels, dtype=float)
    frac = labels != np.rint(labels)
    if frac.any():
        raise ValueError(f"{int(frac.sum())} labels are not whole numbers (e.g. {labels[frac][0]:g}); LambdaMART and "
                         "McRank learn from integer relevance grades: round the qrels' labels, or binarise them "
                         "(label >= 1 is relevant, the rule of the other learners)")
    return np.clip(labels, 0, None).astype(int)


def booster_bytes(booster) -> np.ndarray:
    return np.frombuffer(booster.model_to_string(num_iteration=-1).encode("utf-8"), dtype=np.uint8).copy()


def booster_from_bytes(arrays: Dict[str, np.ndarray], owner: str, n_functions: int):
    """The LightGBM booster of ``arrays["booster"]``, checked to take ``n_functions`` features."""
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


class Peer(Parametrized):
    """The boosted learners' common part: the QueryRanker protocol, input checks and state."""

    #: whether ``fit`` takes ``n_relevant``/``n_relevant_valid`` (the measure it boosts is normalised by them)
    _FIT_TAKES_N_RELEVANT = False

    def fit_queries(self, train: Queries, valid: Optional[Queries] = None):
        args = (None, None, None) if valid is None else (valid.raw, valid.labels, valid.offsets)
        kw = dict(n_relevant=train.n_relevant, n_relevant_valid=getattr(valid, "n_relevant", None)) \
            if self._FIT_TAKES_N_RELEVANT else {}
        return self.fit(train.raw, train.labels, train.offsets, *args, **kw)

    def decision_function(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.predict(raw, offsets)

    def _lightgbm_model(self, kind: str, objective: str):
        """LightGBM's model ``kind`` for ``objective``: the learner's tree parameters, then ``params``."""
        return getattr(load_lightgbm(), kind)(
            objective=objective, n_estimators=self.n_estimators, learning_rate=self.learning_rate,
            num_leaves=self.num_leaves, min_child_samples=self.min_child_samples, random_state=self.random_state,
            verbose=1 if self.verbose else -1, **(self.params or {}))

    def _check_fitted(self):
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def _training(self, raw, labels, offsets):
        """(raw, offsets) of the training queries, checked; sets ``n_functions_``."""
        raw, _, offsets = check_ranking_arrays(raw, labels, offsets)
        self.n_functions_ = raw.shape[1]
        return raw, offsets

    def _scored(self, raw, offsets):
        """(raw, offsets) of candidates to score, checked against the fitted model."""
        self._check_fitted()
        raw, _, offsets = check_ranking_arrays(raw, None, offsets, "scored")
        if raw.shape[1] != self.n_functions_:
            raise ValueError(f"trained on {self.n_functions_} base functions, got {raw.shape[1]}")
        return raw, offsets

    def _meta(self) -> dict:
        self._check_fitted()
        name = type(self).__name__
        return {"ranker": name, "params": json_params(self.get_params(deep=False), name),
                "n_functions": int(self.n_functions_)}

    @classmethod
    def _restored(cls, meta: dict, arrays: Dict[str, np.ndarray], meta_keys: tuple, array_keys: tuple):
        """A ranker of the saved parameters with its ``n_functions_``, checked."""
        self = cls(**check_state(cls, meta, arrays, ("n_functions", *meta_keys), array_keys))
        self.n_functions_ = int_from_json(meta["n_functions"], f"{cls.__name__} state: meta['n_functions']")
        if self.n_functions_ < 1:
            raise ValueError(f"{cls.__name__} state: meta['n_functions'] must be at least 1, got {self.n_functions_}")
        return self
