"""PyTerrier estimators of the boosted peers: LambdaMART and McRank (LightGBM, ``[peers]``) and AdaRank,
over the array-level rankers of :mod:`pyterrier_svmmap.boosting` (:mod:`~pyterrier_svmmap.boosting.lambdamart`,
:mod:`~pyterrier_svmmap.boosting.mcrank`, :mod:`~pyterrier_svmmap.boosting.adarank`)."""
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

log = logging.getLogger(__name__)


def _keyword_parameters(ranker_class) -> str:
    """The Parameters section of an estimator whose keyword arguments go to ``ranker_class``."""
    return f"""
    Parameters
    ----------
    **params
        The keyword arguments of :class:`{ranker_class.__module__}.{ranker_class.__name__}`.
    """


class _Peer(RankerEstimator):
    ranker_class = None

    def __init__(self, **params):
        """Keep ``params`` (the array-level ranker's keyword arguments) and check them at once."""
        self.params = params
        self.ranker_class(**params)          # unknown or bad parameters fail here, not in fit()

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        self.ranker_ = self.ranker_class(**self.params)
        if isinstance(self.ranker_, AdaRankRanker) and self.ranker_.measure == "ap":
            # AdaRank.MAP: binary relevance, label ≥ 1 (the package's rule)
            train = dataclasses.replace(train, labels=(train.labels >= 1).astype(float))
            if valid is not None:
                valid = dataclasses.replace(valid, labels=(valid.labels >= 1).astype(float))
        self.ranker_.fit_queries(train.queries(), None if valid is None else valid.queries())

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.ranker_.decision_function(raw, offsets)

    def get_params(self) -> dict:
        """The ranker's full parameter set (defaults included), so that ``repr`` shows every parameter."""
        return dict(self.ranker_class(**self.params).get_params())

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_params().items())})"

    def _get_state(self):
        meta, arrays = self.ranker_.get_state()
        return dict(ranker=meta, base_names=list(self.base_names_), tie_function=int(self.tie_function_)), arrays

    def _set_state(self, meta: dict, arrays: dict) -> None:
        self.ranker_ = self.ranker_class.from_state(meta["ranker"], arrays)
        self.n_functions_ = int(getattr(self.ranker_, "n_functions_"))
        self.base_names_ = list(meta["base_names"])
        self.tie_function_ = int(meta["tie_function"])


class LambdaMART(_Peer):
    """LambdaMART (LightGBM ``lambdarank``, early stopping on the validation queries). Keyword
    arguments go to :class:`pyterrier_svmmap.boosting.lambdamart.LambdaMARTRanker`. Needs ``[peers]``."""
    ranker_class = LambdaMARTRanker
    __doc__ += _keyword_parameters(ranker_class)


class McRank(_Peer):
    """McRank (multiclass boosted trees, score = expected relevance, 30 rounds). Keyword arguments go
    to :class:`pyterrier_svmmap.boosting.mcrank.McRankRanker`. Needs ``[peers]``."""
    ranker_class = McRankRanker
    __doc__ += _keyword_parameters(ranker_class)


class AdaRank(_Peer):
    """AdaRank.MAP (Xu & Li 2007), single-feature weak rankers, pure numpy. Keyword arguments go to
    :class:`pyterrier_svmmap.boosting.adarank.AdaRankRanker`."""
    ranker_class = AdaRankRanker
    __doc__ += _keyword_parameters(ranker_class)
