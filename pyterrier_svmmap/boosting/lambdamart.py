"""LambdaMART (Burges, MSR-TR-2010-82) on arrays, through LightGBM (``[peers]``)."""
from __future__ import annotations

import inspect
import logging
from typing import Dict, Optional, Tuple

import numpy as np

from pyterrier_svmmap.boosting.common import Peer, booster_bytes, booster_from_bytes, fill_missing, int_labels, \
    load_lightgbm
from pyterrier_svmmap.params import Param, ParamSpec, boolean, optional_int, positive_int, positive_number
from pyterrier_svmmap.queries import check_ranking_arrays
from pyterrier_svmmap.state import int_from_json

log = logging.getLogger(__name__)


class LambdaMARTRanker(Peer):
    """LambdaMART via LightGBM's ``lambdarank``, stopped early on the validation queries' ``metric``.

    {parameters}

    Learned attributes: ``n_functions_``, ``booster_``, ``best_iteration_``."""

    PARAMS = ParamSpec([
        Param("n_estimators", 500, "int", "Boosting rounds at most.", check=positive_int),
        Param("learning_rate", 0.05, "float", "LightGBM's shrinkage.", check=positive_number),
        Param("num_leaves", 31, "int", "Leaves per tree.", check=positive_int),
        Param("min_child_samples", 20, "int", "Candidates per leaf at least.", check=positive_int),
        Param("metric", "ndcg", "str", "LightGBM's validation metric for early stopping (``\"ndcg\"``, ``\"map\"``)."),
        Param("eval_at", 10, "int", "The metric's cutoff.", check=positive_int),
        Param("early_stopping_rounds", 50, "int", "Rounds without improvement on the validation queries before "
              "boosting stops.", check=positive_int),
        Param("random_state", 0, "int or None", "LightGBM's seed.", check=optional_int),
        Param("params", None, "dict or None", "More ``lightgbm.LGBMRanker`` parameters."),
        Param("verbose", False, "bool", "LightGBM's own output.", check=boolean, model=False),
    ])

    def __init__(self, *, n_estimators=500, learning_rate=0.05, num_leaves=31, min_child_samples=20, metric="ndcg",
                          eval_at=10, early_stopping_rounds=50, random_state=0, params=None, verbose=False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.metric = metric
        self.eval_at = eval_at
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.params = params
        self.verbose = verbose

    def fit(self, raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
            raw_valid: Optional[np.ndarray] = None, labels_valid: Optional[np.ndarray] = None,
            offsets_valid: Optional[np.ndarray] = None) -> "LambdaMARTRanker":
        self.check_params()
        lgb = load_lightgbm()
        raw, offsets = self._training(raw, labels, offsets)
        model = self._lightgbm_model("LGBMRanker", "lambdarank")
        kwargs = {}
        if raw_valid is not None:
            raw_valid, _, offsets_valid = check_ranking_arrays(raw_valid, labels_valid, offsets_valid, "validation")
            Xv, yv = fill_missing(raw_valid, offsets_valid), int_labels(labels_valid)
            new = "eval_X" in inspect.signature(model.fit).parameters         # LightGBM ≥ 4.6
            kwargs = dict(eval_X=(Xv,), eval_y=(yv,)) if new else dict(eval_set=[(Xv, yv)])
            kwargs.update(eval_group=[np.diff(offsets_valid)], eval_at=[self.eval_at], eval_metric=self.metric,
                          callbacks=[lgb.early_stopping(self.early_stopping_rounds, first_metric_only=True,
                                                        verbose=self.verbose)])
        model.fit(fill_missing(raw, offsets), int_labels(labels), group=np.diff(offsets), **kwargs)
        self.booster_ = model.booster_
        self.best_iteration_ = int(model.best_iteration_ or self.n_estimators)
        log.info("LambdaMART: %d trees", self.best_iteration_)
        return self

    def predict(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        raw, offsets = self._scored(raw, offsets)
        # what LGBMRanker.predict does, on the booster alone (so a loaded model predicts the same)
        return self.booster_.predict(fill_missing(raw, offsets), num_iteration=self.best_iteration_)

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        return dict(self._meta(), best_iteration=int(self.best_iteration_)), {"booster": booster_bytes(self.booster_)}

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "LambdaMARTRanker":
        self = cls._restored(meta, arrays, ("best_iteration",), ("booster",))
        self.best_iteration_ = int_from_json(meta["best_iteration"], f"{cls.__name__} state: meta['best_iteration']")
        if self.best_iteration_ < 1:
            raise ValueError(f"{cls.__name__} state: meta['best_iteration'] must be at least 1, "
                             f"got {self.best_iteration_}")
        self.booster_ = booster_from_bytes(arrays, cls.__name__, self.n_functions_)
        return self
