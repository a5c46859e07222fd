"""McRank (Li, Burges & Wu, NIPS 2007) on arrays, through LightGBM (``[peers]``)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from pyterrier_svmmap.boosting.common import Peer, booster_bytes, booster_from_bytes, fill_missing, int_labels
from pyterrier_svmmap.params import Param, ParamSpec, boolean, optional_int, positive_int, positive_number
from pyterrier_svmmap.state import state_array


class McRankRanker(Peer):
    """McRank: multiclass boosted trees scoring the expected relevance Σ_z z·P(z | x); 30 rounds, as Chakrabarti et
    al. (2008) ran it, and no validation.

    {parameters}

    Learned attributes: ``n_functions_``, ``classes_``, ``booster_``."""

    PARAMS = ParamSpec([
        Param("n_estimators", 30, "int", "Boosting rounds (fixed: McRank uses no validation).", check=positive_int),
        Param("learning_rate", 0.1, "float", "LightGBM's shrinkage.", check=positive_number),
        Param("num_leaves", 31, "int", "Leaves per tree.", check=positive_int),
        Param("min_child_samples", 20, "int", "Candidates per leaf at least.", check=positive_int),
        Param("random_state", 0, "int or None", "LightGBM's seed.", check=optional_int),
        Param("params", None, "dict or None", "More ``lightgbm.LGBMClassifier`` parameters."),
        Param("verbose", False, "bool", "LightGBM's own output.", check=boolean, model=False),
    ])

    def __init__(self, *, n_estimators=30, learning_rate=0.1, num_leaves=31, min_child_samples=20, random_state=0,
                          params=None, verbose=False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.random_state = random_state
        self.params = params
        self.verbose = verbose

    def fit(self, raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
            raw_valid: Optional[np.ndarray] = None, labels_valid: Optional[np.ndarray] = None,
            offsets_valid: Optional[np.ndarray] = None) -> "McRankRanker":
        self.check_params()
        raw, offsets = self._training(raw, labels, offsets)
        y = int_labels(labels)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError("McRank needs at least two relevance grades among the training candidates")
        # two grades: the binary logistic model, the two-class case of the multinomial one
        model = self._lightgbm_model("LGBMClassifier", "multiclass" if len(self.classes_) > 2 else "binary")
        model.fit(fill_missing(raw, offsets), y)
        self.booster_ = model.booster_     # trained on the grades' indices 0..K-1 in classes_
        return self

    def predict(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Expected relevance Σ_z z·P(z | x) of every candidate."""
        raw, offsets = self._scored(raw, offsets)
        p = self.booster_.predict(fill_missing(raw, offsets), num_iteration=-1)
        return (p if p.ndim == 2 else np.vstack((1.0 - p, p)).transpose()) @ self.classes_.astype(float)

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        return self._meta(), {"classes": np.array(self.classes_, dtype=np.int64),
                              "booster": booster_bytes(self.booster_)}

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "McRankRanker":
        name = cls.__name__
        self = cls._restored(meta, arrays, (), ("classes", "booster"))
        self.classes_ = state_array(arrays, "classes", (None,), name, dtype=np.int64)
        k = len(self.classes_)
        if k < 2 or np.any(np.diff(self.classes_) <= 0):
            raise ValueError(f"{name} state: arrays['classes'] must be at least two ascending distinct "
                             f"grades, got {self.classes_.tolist()}")
        self.booster_ = booster_from_bytes(arrays, name, self.n_functions_)
        per_round = self.booster_.num_model_per_iteration()
        if per_round != (k if k > 2 else 1):
            raise ValueError(f"{name} state: the booster models {per_round} class(es) per round, "
                             f"which does not fit the {k} grades of arrays['classes']")
        return self
