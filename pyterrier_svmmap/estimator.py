"""PyTerrier Estimators over the numeric core: StructSVM (any loss) and SVMMap (loss = 1 − AP).

A thin layer, in the manner of ``pyterrier.ltr``: ``fit`` turns the frames into arrays
(:mod:`~pyterrier_svmmap.frames`), learns thresholds and φ (:mod:`~pyterrier_svmmap.features`), trains
with the cutting-plane solver (:mod:`~pyterrier_svmmap.solver`) for every C of the grid, and keeps the
model with the best validation MAP (Yue et al. 2007 §5: "The model which performed best on the
validation set was selected"). ``transform`` scores candidates by wᵀφ(x, d) and ranks them.
"""
from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from . import model_io
from .features import FeatureEncoder
from .frames import Candidates, candidates_from_frame
from .losses import add_bias, make_slack_groups
from .measures import average_precision
from .solver import train_structural_svm

log = logging.getLogger(__name__)

#: the default grid of C (OP 1's constant: ½‖w‖² + C/n Σ ξ_i), searched on validation queries
DEFAULT_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)


class RankerEstimator(pt.Estimator):
    """Shared PyTerrier plumbing of the learners: frames in, arrays to ``_fit_arrays``/``_score``.

    Subclasses implement ``_fit_arrays(train, valid)`` (both :class:`Candidates`, ``valid`` may be None)
    and ``_score(cands) -> np.ndarray``. Learned attributes end in ``_``; ``base_names_`` holds the base
    functions' names when the frames carried them (``RunFeatures`` does).
    """

    #: skip training queries without a relevant or without a non-relevant candidate
    needs_both_classes = True

    def fit(self, train_res: pd.DataFrame, train_qrels: pd.DataFrame,
            valid_res: Optional[pd.DataFrame] = None, valid_qrels: Optional[pd.DataFrame] = None):
        """Train on ``train_res`` (candidates with ``features``) judged by ``train_qrels``; the optional
        validation pair selects hyper-parameters. Returns self."""
        if train_res is None or len(train_res) == 0:
            raise ValueError("fit() got no training candidates; pass the result frame of the training topics "
                             "(e.g. RunFeatures(...).transform(train_topics))")
        if (valid_res is None) != (valid_qrels is None):
            raise ValueError("give both valid_res and valid_qrels, or neither")
        train = candidates_from_frame(train_res, train_qrels, context=self)
        self.n_functions_ = train.raw.shape[1]
        names = train_res.attrs.get("feature_names")            # set by RunFeatures
        self.base_names_ = (list(names) if names and len(names) == self.n_functions_
                            else [f"f{i}" for i in range(self.n_functions_)])
        train = self._usable_training_queries(train)
        valid = None
        if valid_res is not None and len(valid_res):
            valid = candidates_from_frame(valid_res, valid_qrels, n_functions=self.n_functions_, context=self)
        self._fit_arrays(train, valid)
        return self

    def _usable_training_queries(self, train: Candidates) -> Candidates:
        if not self.needs_both_classes:
            return train
        rel = train.labels > 0
        n_rel = np.add.reduceat(rel, train.offsets[:-1]) if len(rel) else np.zeros(0)
        sizes = np.diff(train.offsets)
        ok = (n_rel > 0) & (n_rel < sizes)
        if not ok.all():
            warnings.warn(f"skipping {int((~ok).sum())} of {len(ok)} training queries that have no relevant "
                          f"or no non-relevant candidate: they cannot form ranking constraints", stacklevel=3)
        if not ok.any():
            raise ValueError("no training query has both a relevant and a non-relevant candidate; check that "
                             "the qrels match the topics (same qid and docno strings)")
        return train.subset(ok)

    def transform(self, res: pd.DataFrame) -> pd.DataFrame:
        """Add ``score`` (the model's) and ``rank`` to every candidate."""
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() or load() before transform()")
        if len(res) == 0:
            pt.validate.result_frame(res, extra_columns=["features"], context=self)
            out = res.copy()
            out["score"] = pd.Series(dtype=float)
            out["rank"] = pd.Series(dtype="int64")
            return out
        cands = candidates_from_frame(res, n_functions=self.n_functions_, context=self)
        out = cands.frame.copy()
        out["score"] = self._score(cands)
        return pt.model.add_ranks(out)

    def transform_outputs(self, inp_cols: List[str]) -> List[str]:
        return list(inp_cols) + [c for c in ("score", "rank") if c not in inp_cols]

    # -- to implement ---------------------------------------------------------------------------
    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        raise NotImplementedError

    def _score(self, cands: Candidates) -> np.ndarray:
        raise NotImplementedError


def validation_map(scores: np.ndarray, valid: Candidates) -> float:
    """MAP of ``scores`` on the validation candidates, AP normalised by the qrels' relevant count."""
    return float(average_precision(scores, valid.labels, valid.offsets, valid.n_relevant).mean())


class StructSVM(RankerEstimator, pt.Artifact):
    """A linear ranking function trained as a structural SVM for a ranking loss (1-slack cutting planes).

    Args:
        C: OP 1's regularisation constant (objective ½‖w‖² + C/n Σ_i ξ_i), or a list of them; with a list,
            one model per C is trained and the one with the best validation MAP is kept (then validation
            data is required).
        loss: the structural loss: ``"map"`` (SVM-map), or any name of ``pyterrier_svmmap.losses.LOSSES``,
            or a :class:`~pyterrier_svmmap.losses.Loss`.
        loss_params: parameters of the loss (e.g. ``{"k": 10}``).
        features: blocks of φ: ``"bins"`` (the paper's threshold indicators), ``"raw"`` (base scores as
            they are), ``"minmax"`` (per-query min–max normalised), or a combination like
            ``"bins+minmax"``.
        n_bins: |K_f|, thresholds per base function (50 in the paper).
        binning: how scores are scaled before the thresholds: ``"quantile"`` (thresholds at quantiles of
            the training scores), ``"minmax"`` or ``"percentile"`` (per query; thresholds evenly spaced in
            [0, 1]).
        threshold_depth: with quantile binning, take the thresholds' quantiles over each training query's
            top ``threshold_depth`` candidates per function (None: over all candidates). The paper asks
            for thresholds that "capture the sensitive region of f"; over all ~1,900 candidates of a
            Vaswani query most quantiles fall among low scorers, and on Vaswani depth 200 raised test
            MAP from 0.278 to 0.286 (9 splits, 10/5 queries).
        epsilon: cutting-plane tolerance (stop when no constraint is violated by more than ε).
        max_iter: cap on cutting-plane iterations per C.
        verbose: progress bar over the C grid.
        prior: ``None`` (the paper: regularise towards w = 0) or ``"best"``: regularise towards the base
            function with the highest MAP on the training queries (½‖w − w₀‖², see
            :func:`~pyterrier_svmmap.solver.train_structural_svm`), so that a small C keeps that function's
            ranking and a larger C moves away from it only as far as the training constraints ask.
        prior_scale: size of w₀: the prior function's contribution spans about [0, prior_scale].

    Learned attributes: ``coef_`` (w), ``encoder_`` (thresholds), ``C_`` (chosen), ``validation_``
    (C → validation MAP), ``history_`` (per-iteration objective, violation, working set of the kept
    model), ``n_iter_``, ``converged_``, ``feature_names_``, ``base_names_``.
    """

    def __init__(self, C: Union[float, Sequence[float]] = DEFAULT_C_GRID, loss="map",
                 loss_params: Optional[dict] = None, features: Union[str, Sequence[str]] = "bins",
                 n_bins: int = 50, binning: str = "quantile", epsilon: float = 1e-3, max_iter: int = 1000,
                 verbose: bool = False, prior: Optional[str] = None, prior_scale: float = 1.0,
                 threshold_depth: Optional[int] = 200):
        self.threshold_depth = threshold_depth
        if prior not in (None, "best"):
            raise ValueError(f"prior must be None or 'best', got {prior!r}")
        self.prior = prior
        self.prior_scale = prior_scale
        self.C = C
        self.loss = loss
        self.loss_params = loss_params
        self.features = features
        self.n_bins = n_bins
        self.binning = binning
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.verbose = verbose
        FeatureEncoder(features, n_bins, binning, threshold_depth)   # fail early on bad feature options

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(C={self.C!r}, loss={self.loss!r}, features={self.features!r}, "
                f"n_bins={self.n_bins})")

    def _c_grid(self) -> List[float]:
        grid = [float(c) for c in np.atleast_1d(np.asarray(self.C, dtype=float))]
        if not grid or any(not np.isfinite(c) or c <= 0 for c in grid):
            raise ValueError(f"C must be a positive number or a list of them, got {self.C!r}")
        return grid

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        grid = self._c_grid()
        if len(grid) > 1 and valid is None:
            raise ValueError(f"C is a grid of {len(grid)} values but no validation data was given: pass "
                             "valid_res and valid_qrels to fit() (pipe.fit(tr_topics, tr_qrels, va_topics, "
                             "va_qrels)), or a single C")
        encoder = FeatureEncoder(self.features, self.n_bins, self.binning, self.threshold_depth).fit(
            train.raw, train.offsets)
        X = self._phi(encoder, train.raw, train.offsets)
        X_valid = self._phi(encoder, valid.raw, valid.offsets) if valid is not None else None
        params = dict(self.loss_params or {})
        w0 = self._prior_weights(encoder, train, X.dim) if self.prior else None
        best = None
        self.validation_: Dict[float, float] = {}
        for C in pt.tqdm(grid, desc=type(self).__name__, unit="C", disable=not self.verbose or len(grid) == 1):
            result = train_structural_svm(X, train.labels, train.offsets, make_slack_groups(self.loss, C, **params),
                                          epsilon=self.epsilon, max_iter=self.max_iter, prior=w0)
            score = validation_map(X_valid.dot(result.w), valid) if X_valid is not None else np.nan
            self.validation_[C] = score
            log.debug("C=%g: %d iterations, validation MAP %.4f", C, result.n_iter, score)
            if best is None or score > best[0]:
                best = (score, C, result)
        _, self.C_, result = best
        self.encoder_ = encoder
        self.coef_ = result.w
        self.history_ = result.history
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.feature_names_ = encoder.feature_names(self.base_names_) + (["bias"] if self._needs_bias() else [])

    def _needs_bias(self) -> bool:
        """Whether φ gets a constant feature 1 (the classifier's bias, last weight): when the loss,
        or the loss of any slack group (combo), is a classification loss (``Loss.needs_bias``)."""
        groups = make_slack_groups(self.loss, 1.0, **dict(self.loss_params or {}))
        return any(getattr(g.loss, "needs_bias", False) for g in groups)

    def _phi(self, encoder: FeatureEncoder, raw: np.ndarray, offsets: np.ndarray):
        X = encoder.transform(raw, offsets)
        return add_bias(X) if self._needs_bias() else X

    def _prior_weights(self, encoder: FeatureEncoder, train: Candidates, dim: int) -> np.ndarray:
        """w₀ that ranks like the base function with the best training MAP (missing documents last)."""
        filled = np.where(np.isnan(train.raw), -np.inf, train.raw)
        maps = [average_precision(filled[:, f], train.labels, train.offsets, train.n_relevant).mean()
                for f in range(train.raw.shape[1])]
        f = int(np.argmax(maps))
        self.prior_function_ = self.base_names_[f]
        F = train.raw.shape[1]
        # the prior lives in the first block of φ; the other blocks start at 0
        first = encoder.blocks[0]
        if first == "bins":
            head = np.zeros((F, encoder.n_bins))
            head[f] = 1.0 / encoder.n_bins
        else:
            head = np.zeros((2, F))                            # scores, then the retrieved indicators
            col = train.raw[:, f]
            span = float(np.nanmax(col) - np.nanmin(col)) if first == "raw" else 1.0
            head[0, f] = 1.0 / span if span > 0 else 1.0
        w0 = np.zeros(dim)
        w0[:head.size] = head.ravel()
        return self.prior_scale * w0

    def _score(self, cands: Candidates) -> np.ndarray:
        return self._phi(self.encoder_, cands.raw, cands.offsets).dot(self.coef_)

    def decision_function(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Scores wᵀφ(x, d) for a score matrix (candidates × base functions, NaN = missing); for the
        classification losses this includes the bias, so ``> 0`` is the predicted relevance."""
        return self._phi(self.encoder_, np.asarray(raw, float), np.asarray(offsets)).dot(self.coef_)

    # -- persistence, pictures, pt.Artifact ------------------------------------------------------
    #: pt.Artifact: type and format of a saved model (see :mod:`~pyterrier_svmmap.model_io`)
    ARTIFACT_TYPE = model_io.ARTIFACT_TYPE
    ARTIFACT_FORMAT = model_io.ARTIFACT_FORMAT
    ARTIFACT_PACKAGE_HINT = "pyterrier-svmmap"
    #: pt.Artifact: where the model was saved to or loaded from (NO_PATH until then)
    path = pt.Artifact.NO_PATH

    def save(self, path: Union[str, Path]) -> None:
        """Write the trained model to directory ``path`` (model.json + weights.npz + pt_meta.json, see
        :mod:`~pyterrier_svmmap.model_io`); afterwards the model is a pt.Artifact at ``path``."""
        self.path = model_io.save_model(self, path)

    @classmethod
    def load(cls, path: Union[str, Path]) -> "StructSVM":
        """Read a model written by :meth:`save` (or ``svmmap learn``)."""
        return model_io.load_model(path, cls=cls)

    def plot(self, **kwargs):
        """Figure 2 of the paper: each base function's learned contribution to the score, as a function
        of its score (needs matplotlib); see :func:`pyterrier_svmmap.plot.plot_model`."""
        from .plot import plot_model
        return plot_model(self, **kwargs)


class SVMMap(StructSVM):
    """SVM-map (Yue, Finley, Radlinski & Joachims, SIGIR 2007): a StructSVM with Δ = 1 − AP.

    ``SVMMap(C=[...])`` >> after ``RunFeatures([...])``; see :class:`StructSVM` for the parameters.
    """

    def __init__(self, C: Union[float, Sequence[float]] = DEFAULT_C_GRID, features: Union[str, Sequence[str]] = "bins",
                 n_bins: int = 50, binning: str = "quantile", epsilon: float = 1e-3, max_iter: int = 1000,
                 verbose: bool = False, loss="map", loss_params: Optional[dict] = None,
                 prior: Optional[str] = None, prior_scale: float = 1.0, threshold_depth: Optional[int] = 200):
        super().__init__(C=C, loss=loss, loss_params=loss_params, features=features, n_bins=n_bins,
                         binning=binning, epsilon=epsilon, max_iter=max_iter, verbose=verbose,
                         prior=prior, prior_scale=prior_scale, threshold_depth=threshold_depth)
