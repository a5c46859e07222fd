"""PyTerrier estimators of ApproxAP and ApproxNDCG (Qin, Liu & Li 2010) over
:class:`~pyterrier_svmmap.approx.ranker.ApproxRanker`, on the feature layout of
:class:`~pyterrier_svmmap.features.layout.FeatureLayout` (per-query min–max by default)."""
from __future__ import annotations

import logging
from typing import Optional, Sequence

import numpy as np

import pyterrier_svmmap.approx.ranker as approx
from pyterrier_svmmap.estimators.base import RankerEstimator
from pyterrier_svmmap.features.layout import FeatureLayout
from pyterrier_svmmap.frames import Candidates

log = logging.getLogger(__name__)


def prefixed(prefix: str, arrays: dict) -> dict:
    """``arrays`` with keys ``prefix/name`` (several objects' arrays in one weights.npz)."""
    return {f"{prefix}/{k}": v for k, v in arrays.items()}


def unprefixed(prefix: str, arrays: dict) -> dict:
    """The arrays of :func:`prefixed` ``prefix``, keys without it."""
    return {k[len(prefix) + 1:]: v for k, v in arrays.items() if k.startswith(prefix + "/")}


class _Approx(RankerEstimator):
    measure = "ap"
    MODEL_PARAMS = ("features", "normalise", "n_bins", "binning", "alphas", "betas", "n_iter", "learning_rate", "max_entries",
                    "random_state")

    def __init__(self, features: str = "minmax", normalise: Optional[str] = "query", n_bins: int = 50,
                 binning: str = "quantile",
                 alphas: Optional[Sequence[float]] = None, betas: Optional[Sequence[float]] = None,
                 n_iter: int = 200, learning_rate: float = 0.01, track_error: bool = True,
                 max_entries: int = approx.DEFAULT_MAX_ENTRIES, random_state: Optional[int] = 0,
                 verbose: bool = False):
        """Store the parameters (the class docstring lists them)."""
        self.features = features
        self.normalise = normalise
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
                                         base_names=self.base_names_, normalise=self.normalise)
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


#: the parameters of ApproxAP and ApproxNDCG, documented once for both
_APPROX_PARAMETERS = """
    Parameters
    ----------
    features : str, default 'minmax'
        The blocks of φ (:class:`~pyterrier_svmmap.features.encoder.FeatureEncoder`): ``"minmax"``,
        ``"raw"``, ``"bins"`` or a combination such as ``"bins+raw"``.
    normalise : {'query', None}, default 'query'
        The ``"raw"`` block's scale: scores standardised within queries (free of their units) or as they are.
    n_bins : int, default 50
        Thresholds per base function, for the ``"bins"`` block.
    binning : {'quantile', 'minmax', 'percentile'}, default 'quantile'
        How scores are placed among the thresholds of the ``"bins"`` block.
    alphas, betas : sequence of float or None, default None
        The (α, β) grid of the position approximation and of the truncation (β: ApproxAP only); None: the
        paper's grid (§6.3, §6.4).
    n_iter : int, default 200
        T, the passes over the training queries per grid point; the best iteration is kept.
    learning_rate : float, default 0.01
        η, the step of the gradient ascent.
    track_error : bool, default True
        Record ρ, the approximation error per iteration (``approx_error_``).
    max_entries : int, default 4194304
        No effect (the compiled kernels take O(n) memory per query); kept in the parameters and model files.
    random_state : int or None, default 0
        The seed of the query order of every pass.
    verbose : bool, default False
        Show progress.
    """


class ApproxAP(_Approx):
    __doc__ = """ApproxAP (Qin et al., §4.3–4.4): a linear model on ``FeatureEncoder(features, n_bins,
    binning)`` features trained by gradient ascent on ÂP (Eq. (22)); (α, β) and the iteration chosen
    by validation MAP over the paper's grid (§6.3) unless ``alphas``/``betas`` are given. ρ per
    iteration is ``approx_error_``. See :class:`pyterrier_svmmap.approx.ranker.ApproxRanker`.
    """ + _APPROX_PARAMETERS
    measure = "ap"


class ApproxNDCG(_Approx):
    __doc__ = """ApproxNDCG (Qin et al., §4.2, §4.4): as :class:`ApproxAP` with N̂DCG (Eq. (21)), gains
    2^label − 1, α chosen by validation NDCG@n over the paper's grid (§6.4); ``betas`` is ignored.
    """ + _APPROX_PARAMETERS
    measure = "ndcg"
