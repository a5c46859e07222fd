"""PyTerrier Estimators over the numeric core: StructSVM (any loss) and SVMMap (loss = 1 − AP).

A thin layer, in the manner of ``pyterrier.ltr``: ``fit`` turns the frames into arrays
(:mod:`~pyterrier_svmmap.frames`) and hands them to the array-level learner
(:class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`), which learns φ's thresholds, trains every C of the
grid and keeps the model with the best validation MAP (Yue et al. 2007 §5: "The model which performed
best on the validation set was selected"). ``transform`` scores candidates by wᵀφ(x, d) and ranks them.
Every learner here is also a ``pt.Artifact``: ``save(path)`` / ``load(path)`` through
:mod:`~pyterrier_svmmap.io.model_files`.
"""
from __future__ import annotations

import logging
from typing import Optional, Sequence, Union

import numpy as np

from pyterrier_svmmap.estimators.base import RankerEstimator
from pyterrier_svmmap.frames import Candidates
from pyterrier_svmmap.selection import (DEFAULT_ALPHA, DEFAULT_C, DEFAULT_FEATURES, DEFAULT_MIN_VALID_QUERIES,
                                        DEFAULT_PRIOR)
from pyterrier_svmmap.svm.docs import ATTRIBUTES, ESTIMATOR_DEFAULTS, compose
from pyterrier_svmmap.svm.ranker import PARAMETER_ORDER, StructSVMRanker

log = logging.getLogger(__name__)


class StructSVM(RankerEstimator):
    __doc__ = compose("""A linear ranking function trained as a structural SVM for a ranking loss (1-slack cutting planes).

    A PyTerrier estimator: place it after :class:`~pyterrier_svmmap.RunFeatures` (or any transformer that
    gives each candidate a ``features`` vector of base-function scores), ``fit(train_res, train_qrels,
    valid_res=None, valid_qrels=None)`` it, and its ``transform`` adds ``score`` and ``rank``. The training
    is :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`'s (``ranker_``); ``save(path)`` / ``load(path)``
    and ``pt.Artifact.load(path)`` keep the model.

    **The default** chooses from the judged queries it is given (:func:`~pyterrier_svmmap.selection.select_auto`,
    docs/model-selection.md): raw base scores, regularised towards the base function with the best training
    MAP (``prior="best"``), C from :data:`~pyterrier_svmmap.selection.SELECTION_C_GRID` (1e-4 … 1000; at the
    smallest C the model is that base function), selected by per-query held-out AP of ``cv``-fold
    cross-validation over training ∪ validation queries (the final weights: the fold models and the refit on
    all of them, averaged) — and the base function itself is kept unless the learned model's gain passes a
    sign-flip max-gain test at ``fallback_alpha``. So the default never trusts a grid's arg-max on a handful
    of validation queries, and keeps the ranking a user would pick without learning when learning shows no
    evidence.""", PARAMETER_ORDER, defaults=ESTIMATOR_DEFAULTS,
                      attributes=(*ATTRIBUTES, "ranker_"), extra_attributes=dict(
                          ranker_=("StructSVMRanker", "The array-level model, which scores without PyTerrier.")))

    MODEL_PARAMS = StructSVMRanker.MODEL_PARAMS
    RANKER = StructSVMRanker

    def __init__(self, C: Union[float, Sequence[float], str] = DEFAULT_C, loss="map",
                 loss_params: Optional[dict] = None, features: Union[str, Sequence[str]] = DEFAULT_FEATURES,
                 normalise: Optional[str] = "query", n_bins: int = 50, binning: str = "quantile", epsilon: float = 1e-3, max_iter: int = 1000,
                 verbose: bool = False, prior: Optional[str] = DEFAULT_PRIOR, prior_scale: float = 1.0,
                 threshold_depth: Optional[int] = 200, cv: int = 5, random_state: Optional[int] = 0,
                 rel: float = 1.0, executor=None, queries_per_shard: int = 1000, selection: str = "auto",
                 fallback_alpha: Optional[float] = DEFAULT_ALPHA,
                 min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES, average_folds: bool = True,
                 n_jobs: Optional[int] = None):
        """Store the parameters (the class docstring lists them) and check them at once."""
        for name, value in dict(locals()).items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)
        self._ranker()                       # validates every parameter now (scikit-learn's habit)

    def _ranker(self, checked: bool = True) -> StructSVMRanker:
        """The array-level ranker of these parameters, checked now, or not (``checked=False``: ``fit`` checks
        them)."""
        params = dict(verbose=self.verbose, executor=self.executor, queries_per_shard=self.queries_per_shard,
                      n_jobs=self.n_jobs, **{k: getattr(self, k) for k in self.MODEL_PARAMS})
        return StructSVMRanker(**params) if checked else StructSVMRanker.unchecked(**params)

    #: constructor parameters that change neither the model nor its file: not saved
    RUNTIME_PARAMS = ("n_jobs", "executor")

    def get_params(self) -> dict:
        """Every constructor parameter (scikit-learn's convention, so that ``clone`` keeps them all)."""
        return dict(super().get_params(), verbose=self.verbose, n_jobs=self.n_jobs, executor=self.executor,
                    queries_per_shard=self.queries_per_shard)

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        valid_arrays = None if valid is None else (valid.raw, valid.labels, valid.offsets, valid.n_relevant,
                                                   valid.frame["docno"].to_numpy())
        ranker = self._ranker(checked=False).fit(train.raw, train.labels, train.offsets, train.n_relevant, valid=valid_arrays,
                                    base_names=self.base_names_)
        self._adopt(ranker)

    #: learned attributes of the ranker that the estimator exposes as its own
    _LEARNED = ("coef_", "coefs_", "C_", "features_", "validation_", "selection_", "path_", "history_", "n_iter_", "converged_",
                "feature_names_", "base_names_", "n_functions_", "layout_", "training_summary_", "prior_function_",
                "tie_function_", "choice_")

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
        """Figure 2 of the paper: each base function's learned contribution to the score, as a function
        of its score (needs matplotlib); see :func:`pyterrier_svmmap.plot.plot_model`."""
        from pyterrier_svmmap.plot import plot_model
        return plot_model(self, **kwargs)


class SVMMap(StructSVM):
    __doc__ = compose("""SVM-map (Yue, Finley, Radlinski & Joachims, SIGIR 2007): a :class:`StructSVM` with Δ = 1 − AP.

    ``RunFeatures(base) >> SVMMap()``: a linear combination of the base functions' scores trained to optimise
    average precision, its setting chosen from the judged queries (``selection="auto"``, see
    :class:`StructSVM`). The paper's configuration (§4.2, §5) is ``SVMMap(C=DEFAULT_C_GRID, features="bins",
    prior=None, selection="validation")``.""", PARAMETER_ORDER, defaults=ESTIMATOR_DEFAULTS,
                      attributes=(*ATTRIBUTES, "ranker_"), extra_attributes=dict(
                          ranker_=("StructSVMRanker", "The array-level model, which scores without PyTerrier.")))

    def __init__(self, C: Union[float, Sequence[float], str] = DEFAULT_C,
                 features: Union[str, Sequence[str]] = DEFAULT_FEATURES, normalise: Optional[str] = "query",
                 n_bins: int = 50, binning: str = "quantile", epsilon: float = 1e-3, max_iter: int = 1000,
                 verbose: bool = False, loss="map", loss_params: Optional[dict] = None,
                 prior: Optional[str] = DEFAULT_PRIOR, prior_scale: float = 1.0, threshold_depth: Optional[int] = 200,
                 cv: int = 5, random_state: Optional[int] = 0, rel: float = 1.0, executor=None,
                 queries_per_shard: int = 1000, selection: str = "auto", fallback_alpha: Optional[float] = DEFAULT_ALPHA,
                 min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES, average_folds: bool = True,
                 n_jobs: Optional[int] = None):
        """Store the parameters (the class docstring lists them) and check them at once."""
        super().__init__(C=C, loss=loss, loss_params=loss_params, features=features, normalise=normalise,
                         n_bins=n_bins,
                         binning=binning, epsilon=epsilon, max_iter=max_iter, verbose=verbose,
                         prior=prior, prior_scale=prior_scale, threshold_depth=threshold_depth, cv=cv,
                         random_state=random_state, rel=rel, executor=executor, queries_per_shard=queries_per_shard,
                         selection=selection, fallback_alpha=fallback_alpha, min_valid_queries=min_valid_queries,
                         average_folds=average_folds, n_jobs=n_jobs)
