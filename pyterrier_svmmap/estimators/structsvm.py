"""PyTerrier estimators StructSVM (any loss) and SVMMap (Δ = 1 − AP) over StructSVMRanker."""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from pyterrier_svmmap.estimators.base import RankerEstimator
from pyterrier_svmmap.frames import Candidates
from pyterrier_svmmap.selection import (DEFAULT_ALPHA, DEFAULT_C, DEFAULT_FEATURES, DEFAULT_MIN_VALID_QUERIES,
                                        DEFAULT_PRIOR)
from pyterrier_svmmap.svm.docs import ATTRIBUTES, compose
from pyterrier_svmmap.svm.params import ESTIMATOR_PARAMS, STRUCT_SVM_PARAMS, SVMMAP_PARAMS
from pyterrier_svmmap.svm.ranker import StructSVMRanker

log = logging.getLogger(__name__)

#: the estimators' attributes in their docstrings: the ranker's, and the ranker itself
_ATTRIBUTES = dict(attributes=(*ATTRIBUTES, "ranker_"), extra_attributes=dict(
    ranker_=("StructSVMRanker", "The array-level model, which scores without PyTerrier.")))


class StructSVM(RankerEstimator):
    __doc__ = compose("""A linear ranking function trained as a structural SVM for a ranking loss (1-slack cutting planes).

    Place it after :class:`~pyterrier_svmmap.RunFeatures`; ``transform`` adds ``score`` and ``rank``. The default
    chooses its model from the judged queries, keeping the first stage unless learning's gain passes a max-gain
    test (docs/model-selection.md).""", ESTIMATOR_PARAMS, **_ATTRIBUTES)

    PARAMS = ESTIMATOR_PARAMS
    RANKER = StructSVMRanker

    def __init__(self, *, C=DEFAULT_C, loss="map", loss_params=None, features=DEFAULT_FEATURES, normalise="query",
                          n_bins=50, binning="quantile", threshold_depth=200, epsilon=1e-3, max_iter=1000,
                          prior=DEFAULT_PRIOR, prior_scale=1.0, first_stage="auto", cv=5, random_state=0,
                          selection="auto", fallback_alpha=DEFAULT_ALPHA, min_valid_queries=DEFAULT_MIN_VALID_QUERIES,
                          average_folds=True, share_cuts="auto", rel=1.0, verbose=False, executor=None,
                          queries_per_shard=1000, n_jobs=None):
        self.C = C
        self.loss = loss
        self.loss_params = loss_params
        self.features = features
        self.normalise = normalise
        self.n_bins = n_bins
        self.binning = binning
        self.threshold_depth = threshold_depth
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.prior = prior
        self.prior_scale = prior_scale
        self.first_stage = first_stage
        self.cv = cv
        self.random_state = random_state
        self.selection = selection
        self.fallback_alpha = fallback_alpha
        self.min_valid_queries = min_valid_queries
        self.average_folds = average_folds
        self.share_cuts = share_cuts
        self.rel = rel
        self.verbose = verbose
        self.executor = executor
        self.queries_per_shard = queries_per_shard
        self.n_jobs = n_jobs

    def _ranker(self) -> StructSVMRanker:
        """The array-level ranker of these parameters, with ``executor``'s shard executor."""
        params = {k: getattr(self, k) for k in STRUCT_SVM_PARAMS.names}
        if self.executor is not None:
            from pyterrier_svmmap.scale.dask import executor_for
            params["executor"] = executor_for(self.executor)
        return StructSVMRanker(**params)

    def check_params(self) -> None:
        """ValueError naming the first parameter that cannot work (:meth:`StructSVMRanker.check_params`)."""
        super().check_params()
        self._ranker().check_params()

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        valid_arrays = None if valid is None else (valid.raw, valid.labels, valid.offsets, valid.n_relevant,
                                                   valid.frame["docno"].to_numpy())
        self._adopt(self._ranker().fit(train.raw, train.labels, train.offsets, train.n_relevant, valid=valid_arrays,
                                       base_names=self.base_names_, declared_first_stage=train.reference))

    #: learned attributes of the ranker that the estimator exposes as its own
    _LEARNED = ("coef_", "coefs_", "C_", "features_", "validation_", "selection_", "path_", "history_", "n_iter_",
                "converged_", "feature_names_", "base_names_", "n_functions_", "layout_", "training_summary_",
                "prior_function_", "first_stage_", "tie_function_", "choice_")

    def _adopt(self, ranker: StructSVMRanker) -> None:
        self.ranker_ = ranker
        for name in self._LEARNED:
            if hasattr(ranker, name):
                setattr(self, name, getattr(ranker, name))
        self.encoder_ = ranker.layout_.encoder

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.ranker_.decision_function(raw, offsets)

    def _get_state(self):
        return self.ranker_.get_state()

    def _set_state(self, meta: dict, arrays: dict) -> None:
        ranker = StructSVMRanker.from_state(meta, arrays)
        ranker.n_jobs = getattr(self, "n_jobs", None)           # this machine's setting, not the model's
        self._adopt(ranker)

    def plot(self, **kwargs):
        """Figure 2 of the paper: each base function's learned contribution to the score (needs matplotlib).

        Parameters
        ----------
        **kwargs
            Passed to :func:`pyterrier_svmmap.plot.plot_model`.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from pyterrier_svmmap.plot import plot_model
        return plot_model(self, **kwargs)


class SVMMap(StructSVM):
    __doc__ = compose("""SVM-map (Yue, Finley, Radlinski & Joachims, SIGIR 2007): a :class:`StructSVM` with Δ = 1 − AP.

    ``RunFeatures(base) >> SVMMap()``; the paper's configuration (§4.2, §5) is ``SVMMap(C=DEFAULT_C_GRID,
    features="bins", prior=None, selection="validation")``.""", SVMMAP_PARAMS, **_ATTRIBUTES)

    PARAMS = SVMMAP_PARAMS
    #: SVM-map's loss: 1 − AP (not a parameter)
    loss = "map"
    loss_params = None

    def __init__(self, *, C=DEFAULT_C, features=DEFAULT_FEATURES, normalise="query", n_bins=50, binning="quantile",
                          threshold_depth=200, epsilon=1e-3, max_iter=1000, prior=DEFAULT_PRIOR, prior_scale=1.0,
                          first_stage="auto", cv=5, random_state=0, selection="auto", fallback_alpha=DEFAULT_ALPHA,
                          min_valid_queries=DEFAULT_MIN_VALID_QUERIES, average_folds=True, share_cuts="auto", rel=1.0,
                          verbose=False, executor=None, queries_per_shard=1000, n_jobs=None):
        self.C = C
        self.features = features
        self.normalise = normalise
        self.n_bins = n_bins
        self.binning = binning
        self.threshold_depth = threshold_depth
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.prior = prior
        self.prior_scale = prior_scale
        self.first_stage = first_stage
        self.cv = cv
        self.random_state = random_state
        self.selection = selection
        self.fallback_alpha = fallback_alpha
        self.min_valid_queries = min_valid_queries
        self.average_folds = average_folds
        self.share_cuts = share_cuts
        self.rel = rel
        self.verbose = verbose
        self.executor = executor
        self.queries_per_shard = queries_per_shard
        self.n_jobs = n_jobs
