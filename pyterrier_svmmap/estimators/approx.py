"""PyTerrier estimators ApproxAP and ApproxNDCG (Qin, Liu & Li 2010)."""
from __future__ import annotations

import dataclasses
import logging
from typing import Optional

import numpy as np

import pyterrier_svmmap.approx.ranker as approx
from pyterrier_svmmap.approx.ranker import DEFAULT_MAX_ENTRIES
from pyterrier_svmmap.estimators.base import RankerEstimator
from pyterrier_svmmap.features.layout import FeatureLayout
from pyterrier_svmmap.frames import Candidates
from pyterrier_svmmap.params import Param, ParamSpec, positive_int
from pyterrier_svmmap.svm.params import STRUCT_SVM_PARAMS

log = logging.getLogger(__name__)


#: ApproxAP's and ApproxNDCG's parameters: φ's layout, then ApproxRanker's (``measure`` fixed, θ_0 = 0)
APPROX_PARAMS = ParamSpec([
    Param("features", "minmax", "str", "The blocks of φ (:class:`~pyterrier_svmmap.features.encoder.FeatureEncoder`): "
          "``\"minmax\"``, ``\"raw\"``, ``\"bins\"`` or a combination such as ``\"bins+raw\"``.",
          check=STRUCT_SVM_PARAMS["features"].check),
    Param("normalise", "query", "{'query', None}", "The ``\"raw\"`` block's scale: scores standardised within queries "
          "(free of their units) or as they are.", check=STRUCT_SVM_PARAMS["normalise"].check, implied=None),
    Param("n_bins", 50, "int", "Thresholds per base function, for the ``\"bins\"`` block.", check=positive_int),
    Param("binning", "quantile", "{'quantile', 'minmax', 'percentile'}", "How scores are placed among the thresholds "
          "of the ``\"bins\"`` block.", check=STRUCT_SVM_PARAMS["binning"].check),
    *[p for p in approx.ApproxRanker.PARAMS if p.name not in ("measure", "w0")],
])


class _Approx(RankerEstimator):
    measure = "ap"

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        self.layout_ = FeatureLayout.fit(train.raw, train.offsets, self.features, self.n_bins, self.binning,
                                         base_names=self.base_names_, normalise=self.normalise)
        kw = {} if valid is None else dict(X_valid=self.layout_.transform(valid.raw, valid.offsets),
                                           labels_valid=self._labels(valid.labels), offsets_valid=valid.offsets,
                                           n_relevant_valid=valid.n_relevant)
        taken = [name for name in approx.ApproxRanker.PARAMS.names if name not in ("measure", "betas", "w0")]
        self.ranker_ = approx.ApproxRanker(measure=self.measure, betas=self.betas if self.measure == "ap" else None,
                                           **{name: getattr(self, name) for name in taken})
        self.ranker_.fit(self.layout_.transform(train.raw, train.offsets), self._labels(train.labels), train.offsets,
                         train.n_relevant, **kw)
        self._adopt()

    def _labels(self, labels: np.ndarray) -> np.ndarray:
        """Binary labels (≥ ``rel``) for ApproxAP, the grades for ApproxNDCG."""
        return (labels >= self.rel).astype(float) if self.measure == "ap" else labels

    def _adopt(self) -> None:
        for name in ("coef_", "alpha_", "beta_", "best_iteration_", "approx_error_", "search_results_"):
            setattr(self, name, getattr(self.ranker_, name))
        self.encoder_ = self.layout_.encoder
        self.feature_names_ = self.layout_.names()

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return self.ranker_.decision_function(self.layout_.transform(raw, offsets))

    def _get_state(self):
        """Both parts' states, their arrays as ``part/name`` in one weights.npz."""
        states = {"layout": self.layout_.get_state(), "ranker": self.ranker_.get_state()}
        return (dict({part: meta for part, (meta, _) in states.items()}, tie_function=int(self.tie_function_)),
                {f"{part}/{k}": v for part, (_, arrays) in states.items() for k, v in arrays.items()})

    def _set_state(self, meta: dict, arrays: dict) -> None:
        parts = {p: {k[len(p) + 1:]: v for k, v in arrays.items() if k.startswith(p + "/")}
                 for p in ("layout", "ranker")}
        self.layout_ = FeatureLayout.from_state(meta["layout"], parts["layout"])
        self.ranker_ = approx.ApproxRanker.from_state(meta["ranker"], parts["ranker"])
        self.n_functions_ = self.layout_.n_functions
        self.base_names_ = list(self.layout_.base_names)
        self.tie_function_ = int(meta["tie_function"])
        self._adopt()


class ApproxAP(_Approx):
    """ApproxAP (Qin et al., §4.3–4.4): gradient ascent on ÂP over φ, (α, β) and iteration by validation MAP.

    {parameters}"""
    measure = "ap"
    PARAMS = ParamSpec([*APPROX_PARAMS, dataclasses.replace(STRUCT_SVM_PARAMS["rel"], implied=1.0)])

    def __init__(self, *, features="minmax", normalise="query", n_bins=50, binning="quantile", alphas=None,
                          betas=None, n_iter=200, learning_rate=0.01, track_error=True,
                          max_entries=DEFAULT_MAX_ENTRIES, random_state=0, verbose=False, rel=1.0):
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
        self.rel = rel


class ApproxNDCG(_Approx):
    """ApproxNDCG (Qin et al., §4.2, §4.4): as :class:`ApproxAP` with N̂DCG (gains 2^label − 1); ``betas`` ignored.

    {parameters}"""
    measure = "ndcg"
    PARAMS = APPROX_PARAMS

    def __init__(self, *, features="minmax", normalise="query", n_bins=50, binning="quantile", alphas=None,
                          betas=None, n_iter=200, learning_rate=0.01, track_error=True,
                          max_entries=DEFAULT_MAX_ENTRIES, random_state=0, verbose=False):
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
