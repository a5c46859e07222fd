"""PyTerrier estimators for ApproxAP / ApproxNDCG and the boosted peers (LambdaMART, McRank, AdaRank).

All are :class:`~pyterrier_svmmap.estimator.RankerEstimator` subclasses, the base class shared with
:class:`~pyterrier_svmmap.StructSVM`: ``fit(train_res, train_qrels, valid_res=None, valid_qrels=None)``
learns from a result frame with columns ``qid``, ``docno`` and ``features`` (an array per row, one value
per base function, NaN where the function did not retrieve the document) and qrels (``qid``, ``docno``,
``label``); ``transform(res)`` adds ``score`` and ``rank``. The subclasses implement ``_fit_arrays``
and ``_score`` on :class:`~pyterrier_svmmap.frames.Candidates`.

Unlike the structural SVMs they keep training queries without a relevant (or a non-relevant)
candidate (``needs_both_classes = False``): those queries add nothing to ÂP/N̂DCG or to the
pairwise gradients, but McRank's classifier learns from them. LightGBM is imported only when a
LambdaMART or McRank model is fitted.
"""
from __future__ import annotations

import logging
from typing import Optional, Sequence

import numpy as np

from . import approx, peers
from .estimator import RankerEstimator
from .features import FeatureEncoder
from .frames import Candidates

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# ApproxAP / ApproxNDCG
# ---------------------------------------------------------------------------------------------
class _Approx(RankerEstimator):
    measure = "ap"
    needs_both_classes = False

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
        self.encoder_ = FeatureEncoder(self.features, self.n_bins, self.binning).fit(train.raw, train.offsets)
        kw = {}
        if valid is not None:
            kw = dict(X_valid=self.encoder_.transform(valid.raw, valid.offsets), labels_valid=valid.labels,
                      offsets_valid=valid.offsets, n_relevant_valid=valid.n_relevant)
        self.ranker_ = approx.ApproxRanker(
            self.measure, self.alphas, self.betas if self.measure == "ap" else None, self.n_iter,
            self.learning_rate, track_error=self.track_error, max_entries=self.max_entries,
            random_state=self.random_state, verbose=self.verbose,
        ).fit(self.encoder_.transform(train.raw, train.offsets), train.labels, train.offsets,
              train.n_relevant, **kw)
        for name in ("coef_", "alpha_", "beta_", "best_iteration_", "approx_error_", "search_results_"):
            setattr(self, name, getattr(self.ranker_, name))

    def _score(self, cands: Candidates) -> np.ndarray:
        return self.ranker_.decision_function(self.encoder_.transform(cands.raw, cands.offsets))


class ApproxAP(_Approx):
    """ApproxAP (Qin et al., §4.3–4.4): a linear model on ``FeatureEncoder(features, n_bins,
    binning)`` features trained by gradient ascent on ÂP (Eq. (22)); (α, β) and the iteration chosen
    by validation MAP over the paper's grid (§6.3) unless ``alphas``/``betas`` are given. ρ per
    iteration is ``approx_error_``. See :class:`pyterrier_svmmap.approx.ApproxRanker`."""
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
    needs_both_classes = False

    def __init__(self, **params):
        self.params = params

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        self.ranker_ = self.ranker_class(**self.params)
        args = () if valid is None else (valid.raw, valid.labels, valid.offsets)
        if isinstance(self.ranker_, peers.AdaRankRanker):
            self.ranker_.fit(train.raw, train.labels, train.offsets, *(args or (None, None, None)),
                             n_relevant=train.n_relevant,
                             n_relevant_valid=None if valid is None else valid.n_relevant)
        else:
            self.ranker_.fit(train.raw, train.labels, train.offsets, *args)

    def _score(self, cands: Candidates) -> np.ndarray:
        return self.ranker_.predict(cands.raw, cands.offsets)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"


class LambdaMART(_Peer):
    """LambdaMART (LightGBM ``lambdarank``, early stopping on the validation queries). Keyword
    arguments go to :class:`pyterrier_svmmap.peers.LambdaMARTRanker`. Needs ``[peers]``."""
    ranker_class = peers.LambdaMARTRanker


class McRank(_Peer):
    """McRank (multiclass boosted trees, score = expected relevance, 30 rounds). Keyword arguments go
    to :class:`pyterrier_svmmap.peers.McRankRanker`. Needs ``[peers]``."""
    ranker_class = peers.McRankRanker


class AdaRank(_Peer):
    """AdaRank.MAP (Xu & Li 2007), single-feature weak rankers, pure numpy. Keyword arguments go to
    :class:`pyterrier_svmmap.peers.AdaRankRanker`."""
    ranker_class = peers.AdaRankRanker
