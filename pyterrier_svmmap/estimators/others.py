"""PyTerrier estimators for ApproxAP / ApproxNDCG and the boosted peers (LambdaMART, McRank, AdaRank).

All are :class:`~pyterrier_svmmap.estimators.structsvm.RankerEstimator` subclasses, the base class shared with
:class:`~pyterrier_svmmap.StructSVM`: ``fit(train_res, train_qrels, valid_res=None, valid_qrels=None)``
learns from a result frame with columns ``qid``, ``docno`` and ``features`` (an array per row, one value
per base function, NaN where the function did not retrieve the document) and qrels (``qid``, ``docno``,
``label``); ``transform(res)`` adds ``score`` and ``rank``. The subclasses implement ``_fit_arrays``
on :class:`~pyterrier_svmmap.frames.Candidates` and ``_score`` on arrays; their fitted state is the
array-level ranker's (``get_state``/``from_state``), with the feature layout for the Approx learners, so
every model saves and loads (:mod:`~pyterrier_svmmap.io.model_files`) to bit-identical scores.

Unlike the structural SVMs they keep training queries without a relevant (or a non-relevant)
candidate: those queries add nothing to ÂP/N̂DCG or to the
pairwise gradients, but McRank's classifier learns from them. LightGBM is imported only when a
LambdaMART or McRank model is fitted.
"""
from __future__ import annotations

import dataclasses

import logging
from typing import Optional, Sequence

import numpy as np

import pyterrier_svmmap.approx.ranker as approx
import pyterrier_svmmap.boosting.peers as peers
from pyterrier_svmmap.estimators.structsvm import RankerEstimator
from pyterrier_svmmap.frames import Candidates
from pyterrier_svmmap.features.layout import FeatureLayout

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# ApproxAP / ApproxNDCG
# ---------------------------------------------------------------------------------------------
def prefixed(prefix: str, arrays: dict) -> dict:
    """``arrays`` with keys ``prefix/name`` (several objects' arrays in one weights.npz)."""
    return {f"{prefix}/{k}": v for k, v in arrays.items()}


def unprefixed(prefix: str, arrays: dict) -> dict:
    """The arrays of :func:`prefixed` ``prefix``, keys without it."""
    return {k[len(prefix) + 1:]: v for k, v in arrays.items() if k.startswith(prefix + "/")}


class _Approx(RankerEstimator):
    measure = "ap"
    MODEL_PARAMS = ("features", "n_bins", "binning", "alphas", "betas", "n_iter", "learning_rate", "max_entries",
                    "random_state")

    def __init__(self, features: str = "minmax", n_bins: int = 50, binning: str = "quantile",
                 alphas: Optional[Sequence[float]] = None, betas: Optional[Sequence[float]] = None,
                 n_iter: int = 200, learning_rate: float = 0.01, track_error: bool = True,
                 max_entries: int = approx.DEFAULT_MAX_ENTRIES, random_state: Optional[int] = 0,
                 verbose: bool = False):
        self.features = features
        self.n_bins = n_bins
        self.binning = binning
        self.alphas = alphas
        self.betas = betas
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.track_error = track_error
        self.max_entries = max_entries
        self.random_state = random_state
        self.verbose = verbose

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        self.layout_ = FeatureLayout.fit(train.raw, train.offsets, self.features, self.n_bins, self.binning,
                                         base_names=self.base_names_)
        self.encoder_ = self.layout_.encoder
        kw = {}
        if valid is not None:
            kw = dict(X_valid=self.layout_.transform(valid.raw, valid.offsets), labels_valid=self._labels(valid.labels),
                      offsets_valid=valid.offsets, n_relevant_valid=valid.n_relevant)
        self.ranker_ = approx.ApproxRanker(
            self.measure, self.alphas, self.betas if self.measure == "ap" else None, self.n_iter,
            self.learning_rate, track_error=self.track_error, max_entries=self.max_entries,
            random_state=self.random_state, verbose=self.verbose,
        ).fit(self.layout_.transform(train.raw, train.offsets), self._labels(train.labels), train.offsets,
              train.n_relevant, **kw)
        self._adopt()

    def _labels(self, labels: np.ndarray) -> np.ndarray:
        """ApproxAP's AP is binary: label ≥ 1 is relevant (the package's rule); ApproxNDCG keeps the grades."""
        return (labels >= 1).astype(float) if self.measure == "ap" else labels

    def _adopt(self) -> None:
        for name in ("coef_", "alpha_", "beta_", "best_iteration_", "approx_error_", "search_results_"):
            setattr(self, name, getattr(self.ranker_, name))
        self.feature_names_ = self.layout_.names()

    def get_params(self) -> dict:
        return dict(super().get_params(), track_error=self.track_error, verbose=self.verbose)

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.ranker_.decision_function(self.layout_.transform(raw, offsets))

    def _get_state(self):
        layout_meta, layout_arrays = self.layout_.get_state()
        ranker_meta, ranker_arrays = self.ranker_.get_state()
        return (dict(layout=layout_meta, ranker=ranker_meta, tie_function=int(self.tie_function_)),
                {**prefixed("layout", layout_arrays), **prefixed("ranker", ranker_arrays)})

    def _set_state(self, meta: dict, arrays: dict) -> None:
        self.layout_ = FeatureLayout.from_state(meta["layout"], unprefixed("layout", arrays))
        self.encoder_ = self.layout_.encoder
        self.ranker_ = approx.ApproxRanker.from_state(meta["ranker"], unprefixed("ranker", arrays))
        self.n_functions_ = self.layout_.n_functions
        self.base_names_ = list(self.layout_.base_names)
        self.tie_function_ = int(meta["tie_function"])
        self._adopt()


class ApproxAP(_Approx):
    """ApproxAP (Qin et al., §4.3–4.4): a linear model on ``FeatureEncoder(features, n_bins,
    binning)`` features trained by gradient ascent on ÂP (Eq. (22)); (α, β) and the iteration chosen
    by validation MAP over the paper's grid (§6.3) unless ``alphas``/``betas`` are given. ρ per
    iteration is ``approx_error_``. See :class:`pyterrier_svmmap.approx.ranker.ApproxRanker`."""
    measure = "ap"


class ApproxNDCG(_Approx):
    """ApproxNDCG (Qin et al., §4.2, §4.4): as :class:`ApproxAP` with N̂DCG (Eq. (21)), gains
    2^label − 1, α chosen by validation NDCG@n over the paper's grid (§6.4); ``betas`` is ignored."""
    measure = "ndcg"


# ---------------------------------------------------------------------------------------------
# boosted peers
# ---------------------------------------------------------------------------------------------
class _Peer(RankerEstimator):
    ranker_class = None

    def __init__(self, **params):
        self.params = params
        self.ranker_class(**params)          # unknown or bad parameters fail here, not in fit()

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        self.ranker_ = self.ranker_class(**self.params)
        if isinstance(self.ranker_, peers.AdaRankRanker) and self.ranker_.measure == "ap":
            # AdaRank.MAP: binary relevance, label ≥ 1 (the package's rule)
            train = dataclasses.replace(train, labels=(train.labels >= 1).astype(float))
            if valid is not None:
                valid = dataclasses.replace(valid, labels=(valid.labels >= 1).astype(float))
        args = () if valid is None else (valid.raw, valid.labels, valid.offsets)
        if isinstance(self.ranker_, peers.AdaRankRanker):
            self.ranker_.fit(train.raw, train.labels, train.offsets, *(args or (None, None, None)),
                             n_relevant=train.n_relevant,
                             n_relevant_valid=None if valid is None else valid.n_relevant)
        else:
            self.ranker_.fit(train.raw, train.labels, train.offsets, *args)

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.ranker_.predict(raw, offsets)

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
    arguments go to :class:`pyterrier_svmmap.boosting.peers.LambdaMARTRanker`. Needs ``[peers]``."""
    ranker_class = peers.LambdaMARTRanker


class McRank(_Peer):
    """McRank (multiclass boosted trees, score = expected relevance, 30 rounds). Keyword arguments go
    to :class:`pyterrier_svmmap.boosting.peers.McRankRanker`. Needs ``[peers]``."""
    ranker_class = peers.McRankRanker


class AdaRank(_Peer):
    """AdaRank.MAP (Xu & Li 2007), single-feature weak rankers, pure numpy. Keyword arguments go to
    :class:`pyterrier_svmmap.boosting.peers.AdaRankRanker`."""
    ranker_class = peers.AdaRankRanker
