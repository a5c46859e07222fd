"""PyTerrier estimators of the boosted peers LambdaMART, McRank (LightGBM, ``[peers]``) and AdaRank."""
from __future__ import annotations

import dataclasses
import logging
from typing import Optional

import numpy as np

from pyterrier_svmmap.boosting.adarank import AdaRankRanker
from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker
from pyterrier_svmmap.boosting.mcrank import McRankRanker
from pyterrier_svmmap.estimators.base import RankerEstimator
from pyterrier_svmmap.frames import Candidates
from pyterrier_svmmap.params import Param, positive_number

log = logging.getLogger(__name__)


class _Peer(RankerEstimator):
    """A boosted peer: the keyword arguments of its array-level ranker (``ranker_class``), stored as they are."""
    ranker_class = None

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        taken = self.ranker_class.PARAMS.names
        self.ranker_ = self.ranker_class(**{k: v for k, v in self.get_params(deep=False).items() if k in taken})
        self.ranker_.fit_queries(self._relevance(train), None if valid is None else self._relevance(valid))

    def _relevance(self, cands: Candidates) -> Candidates:
        """The candidates with the labels the ranker trains on."""
        return cands

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.ranker_.decision_function(raw, offsets)

    def _get_state(self):
        meta, arrays = self.ranker_.get_state()
        return dict(ranker=meta, base_names=list(self.base_names_), tie_function=int(self.tie_function_)), arrays

    def _set_state(self, meta: dict, arrays: dict) -> None:
        self.ranker_ = self.ranker_class.from_state(meta["ranker"], arrays)
        self.n_functions_ = int(getattr(self.ranker_, "n_functions_"))
        self.base_names_ = list(meta["base_names"])
        self.tie_function_ = int(meta["tie_function"])


class LambdaMART(_Peer):
    """LambdaMART (LightGBM ``lambdarank``, :class:`~pyterrier_svmmap.boosting.lambdamart.LambdaMARTRanker`).

    {parameters}"""
    ranker_class = LambdaMARTRanker
    PARAMS = LambdaMARTRanker.PARAMS

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


class McRank(_Peer):
    """McRank (multiclass boosted trees, :class:`~pyterrier_svmmap.boosting.mcrank.McRankRanker`).

    {parameters}"""
    ranker_class = McRankRanker
    PARAMS = McRankRanker.PARAMS

    def __init__(self, *, n_estimators=30, learning_rate=0.1, num_leaves=31, min_child_samples=20, random_state=0,
                          params=None, verbose=False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.random_state = random_state
        self.params = params
        self.verbose = verbose


class AdaRank(_Peer):
    """AdaRank.MAP (Xu & Li 2007, :class:`~pyterrier_svmmap.boosting.adarank.AdaRankRanker`).

    {parameters}"""
    ranker_class = AdaRankRanker
    PARAMS = AdaRankRanker.PARAMS.plus(
        Param("rel", 1.0, "float", "The lowest label that counts as relevant: AdaRank.MAP trains on binary relevance "
              "(label ≥ ``rel``), as the structural SVMs do; AdaRank.NDCG on the graded labels.",
              check=positive_number, implied=1.0))

    def __init__(self, *, n_rounds=100, measure="ap", k=10, verbose=False, rel=1.0):
        self.n_rounds = n_rounds
        self.measure = measure
        self.k = k
        self.verbose = verbose
        self.rel = rel

    def _relevance(self, cands: Candidates) -> Candidates:
        if self.measure != "ap":
            return cands
        return dataclasses.replace(cands, labels=(cands.labels >= self.rel).astype(float))
