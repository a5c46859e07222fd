"""PyTerrier Estimators over the numeric core: StructSVM (any loss) and SVMMap (loss = 1 − AP).

A thin layer, in the manner of ``pyterrier.ltr``: ``fit`` turns the frames into arrays
(:mod:`~pyterrier_svmmap.frames`) and hands them to the array-level learner
(:class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`), which learns φ's thresholds, trains every C of the
grid and selects a model: by default with the package's rule (:func:`~pyterrier_svmmap.selection.select_auto`:
cross-validation over every judged query, the best base function kept unless learning beats it), or with
``selection="validation"`` the model with the best validation MAP (Yue et al. 2007 §5: "The model which
performed best on the validation set was selected"). ``transform`` scores candidates by wᵀφ(x, d) and ranks them.
Every learner here is also a ``pt.Artifact``: ``save(path)`` / ``load(path)`` through
:mod:`~pyterrier_svmmap.io.model_files`.
"""
from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
import pyterrier as pt

import pyterrier_svmmap.io.model_files as model_io
from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.features.layout import default_base_names
from pyterrier_svmmap.frames import Candidates, candidates_from_frame
from pyterrier_svmmap.measures import ranks_within_queries
from pyterrier_svmmap.selection import (DEFAULT_ALPHA, DEFAULT_C_GRID, DEFAULT_FEATURES, DEFAULT_MIN_VALID_QUERIES,
                                        DEFAULT_PRIOR, SELECTION_C_GRID, best_function)
from pyterrier_svmmap.svm.ranker import StructSVMRanker
from pyterrier_svmmap.ties import break_ties

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_C_GRID", "SELECTION_C_GRID", "RankerEstimator", "StructSVM", "SVMMap"]


class RankerEstimator(pt.Estimator, pt.Artifact):
    """Shared PyTerrier plumbing of the learners: frames in, arrays to ``_fit_arrays``/``_score``, models
    saved and loaded as ``pt.Artifact`` s.

    Subclasses implement ``_fit_arrays(train, valid)`` (both :class:`Candidates`, ``valid`` may be None),
    ``_score(raw, offsets) -> np.ndarray``, ``get_params()`` (the constructor parameters; ``repr`` shows
    those that change the model, ``MODEL_PARAMS``) and ``_get_state()`` / ``_set_state(meta, arrays)``
    (the fitted state for :mod:`~pyterrier_svmmap.io.model_files`). Learned attributes end in ``_``;
    ``base_names_`` holds the base functions' names when the frames carried them (``RunFeatures`` does).
    """

    #: constructor parameters that change the model, shown by ``repr`` (PyTerrier hashes transformers by it)
    MODEL_PARAMS: Tuple[str, ...] = ()
    #: the array-level ranker class whose state is the model's (scores without PyTerrier), or None
    RANKER: Optional[type] = None

    #: pt.Artifact: type and format of a saved model (see :mod:`~pyterrier_svmmap.io.model_files`)
    ARTIFACT_TYPE = model_io.ARTIFACT_TYPE
    ARTIFACT_FORMAT = model_io.ARTIFACT_FORMAT
    ARTIFACT_PACKAGE_HINT = "pyterrier-svmmap"
    #: pt.Artifact: where the model was saved to or loaded from (NO_PATH until then)
    path = pt.Artifact.NO_PATH

    def fit(self, train_res: pd.DataFrame, train_qrels: pd.DataFrame,
            valid_res: Optional[pd.DataFrame] = None, valid_qrels: Optional[pd.DataFrame] = None):
        """Train on ``train_res`` (candidates with ``features``) judged by ``train_qrels``; the optional
        validation pair selects hyper-parameters. Returns self."""
        if train_res is None or len(train_res) == 0:
            raise ValueError("fit() got no training candidates; pass the result frame of the training topics "
                             "(e.g. RunFeatures(...).transform(train_topics))")
        if train_qrels is None:
            raise ValueError("fit() needs train_qrels (columns qid, docno, label) to know the relevant candidates")
        if (valid_res is None) != (valid_qrels is None):
            raise ValueError("give both valid_res and valid_qrels, or neither")
        rel = getattr(self, "rel", 1.0)                    # the relevance rule: label >= rel
        train = candidates_from_frame(train_res, train_qrels, context=self, rel=rel)
        valid = None
        if valid_res is not None:
            if len(valid_res) == 0:
                raise ValueError("valid_res has no rows: give the validation topics' candidates (e.g. "
                                 "RunFeatures(...).transform(valid_topics)), or valid_res=None and valid_qrels=None "
                                 "to choose by cross-validation over the training queries")
            valid = candidates_from_frame(valid_res, valid_qrels, n_functions=train.raw.shape[1], context=self,
                                          rel=rel, feature_names=train_res.attrs.get("feature_names"))
        return self.fit_candidates(train, valid, feature_names=train_res.attrs.get("feature_names"))

    def fit_candidates(self, train: Candidates, valid: Optional[Candidates] = None,
                       feature_names: Optional[Sequence[str]] = None):
        """``fit`` on frames already converted by :func:`~pyterrier_svmmap.frames.candidates_from_frame`
        (``train`` and ``valid`` with qrels, at this estimator's ``rel``; ``valid`` with as many features
        as ``train``). ``feature_names`` are the base functions' names (``RunFeatures`` puts them in
        ``attrs["feature_names"]``). The same model as ``fit`` on the frames; lets a caller that trains
        several estimators on the same frames (``svmmap reproduce``) convert them once. Returns self."""
        if train.labels is None or train.n_relevant is None or (
                valid is not None and (valid.labels is None or valid.n_relevant is None)):
            raise ValueError("fit_candidates() needs candidates converted with their qrels "
                             "(candidates_from_frame(res, qrels))")
        if valid is not None and valid.raw.shape[1] != train.raw.shape[1]:
            raise ValueError(f"valid has {valid.raw.shape[1]} features per row, train {train.raw.shape[1]}")
        rel = getattr(self, "rel", 1.0)
        if not (train.labels >= rel).any():
            raise ValueError(f"none of the {len(train.labels)} training candidates is relevant (label >= {rel:g}) "
                             "in the qrels; check that the qrels' qid and docno strings match the candidates'")
        self.n_functions_ = train.raw.shape[1]
        names = feature_names
        self.base_names_ = (list(names) if names and len(names) == self.n_functions_
                            else [f"f{i}" for i in range(self.n_functions_)])
        # the tie policy (pyterrier_svmmap.ties): equal scores ordered by the best training base function;
        # a ranker that chooses it itself (StructSVMRanker, on the usable queries) sets it in _fit_arrays
        self.__dict__.pop("tie_function_", None)
        self._fit_arrays(train, valid)
        if not hasattr(self, "tie_function_"):
            self.tie_function_ = best_function(train.raw, (train.labels >= rel).astype(float), train.offsets)
        return self

    def score_candidates(self, cands: Candidates) -> np.ndarray:
        """The scores ``transform`` gives the rows of ``cands`` (in ``cands``' order): the model's, with
        equal scores separated by the tie policy (:func:`~pyterrier_svmmap.ties.break_ties`)."""
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() or load() first")
        if len(cands.raw) and cands.raw.shape[1] != self.n_functions_:
            raise ValueError(f"the model was trained with {self.n_functions_} features per row but these rows "
                             f"have {cands.raw.shape[1]}; use the same RunFeatures (same base functions) as in "
                             "training")
        scores, ties = break_ties(self._score(cands.raw, cands.offsets), cands.offsets,
                                  base_order=cands.tie_base_order(self.tie_function_))
        log.debug("%s: %d of %d top-%d rows tied before the tie policy", type(self).__name__, ties.tied_top_k,
                  ties.top_k, ties.k)
        return scores

    def transform(self, res: pd.DataFrame) -> pd.DataFrame:
        """Add ``score`` (the model's) and ``rank`` to every candidate; equal model scores are separated by the
        tie policy of :mod:`~pyterrier_svmmap.ties` (the best training base function's score, then docno), so
        that ``pt.Experiment`` ranks as validation did. Rows come in the input's query order, by rank."""
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() or load() before transform()")
        if len(res) == 0:
            pt.validate.result_frame(res, extra_columns=["features"], context=self)
            out = res.copy()
            out["score"] = pd.Series(dtype=float)
            out["rank"] = pd.Series(dtype="int64")
            return out
        cands = candidates_from_frame(res, n_functions=self.n_functions_, context=self,
                                      feature_names=self.named_features())
        scores = self.score_candidates(cands)
        # rank (0-based) within each query by decreasing score, equal scores in the candidates' order (as
        # pt.model.add_ranks: method "first"); queries in the input's order of first appearance
        q = query_ids(cands.offsets)
        by_rank, rank = ranks_within_queries(scores, cands.offsets)
        _, uniques = pd.factorize(res["qid"], use_na_sentinel=False)
        first_seen = pd.unique(pd.Series(uniques).astype(str).to_numpy(dtype=object))
        position = pd.Index(first_seen).get_indexer(cands.qids)
        rows = by_rank[np.argsort(position[q[by_rank]], kind="stable")]
        frame = cands.frame
        out = frame.drop(columns="rank").iloc[rows] if "rank" in frame.columns else frame.iloc[rows]
        out = out.reset_index(drop=True)
        out["score"] = scores[rows]
        out["rank"] = rank[rows]
        return out

    def named_features(self) -> Optional[List[str]]:
        """The base functions' names the model was trained with, or None when the training frames carried no
        names (``base_names_`` are then the placeholders ``f0, f1, ...``)."""
        names = list(getattr(self, "base_names_", []))
        return None if names in (default_base_names(len(names)), default_base_names(len(names), start=1)) else names

    def transform_inputs(self) -> List[List[str]]:
        """The columns ``transform`` needs (``pt.inspect``): candidates with their base scores."""
        return [["qid", "docno", "features"]]

    def transform_outputs(self, inp_cols: List[str]) -> List[str]:
        """The input's columns, then ``score`` and ``rank`` (``pt.inspect``)."""
        return list(inp_cols) + [c for c in ("score", "rank") if c not in inp_cols]

    def decision_function(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The model's scores of a score matrix (candidates × base functions, NaN = missing) grouped by
        ``offsets``, ties not broken (``transform`` breaks them)."""
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() or load() first")
        return self._score(np.asarray(raw, dtype=float), np.asarray(offsets))

    # -- parameters -------------------------------------------------------------------------------
    def get_params(self) -> dict:
        """Constructor parameters (scikit-learn's convention)."""
        return {k: getattr(self, k) for k in self.MODEL_PARAMS}

    def __repr__(self) -> str:
        params = self.get_params()
        return f"{type(self).__name__}({', '.join(f'{k}={params[k]!r}' for k in self.MODEL_PARAMS if k in params)})"

    def __str__(self) -> str:
        """A short name for tables such as ``pt.Experiment``'s: the class and the model-changing parameters whose
        value differs from the constructor's default (``SVMMap(features='bins', prior=None)``); ``repr``
        shows every one."""
        defaults = {k: v.default for k, v in inspect.signature(type(self).__init__).parameters.items()}
        params = self.get_params()
        changed = [f"{k}={params[k]!r}" for k in self.MODEL_PARAMS
                   if k in params and not _same_value(params[k], defaults.get(k, inspect.Parameter.empty))]
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- persistence ------------------------------------------------------------------------------
    def save(self, path: Union[str, Path]) -> None:
        """Write the trained model to directory ``path`` (model.json + weights.npz + pt_meta.json, see
        :mod:`~pyterrier_svmmap.io.model_files`); afterwards the model is a pt.Artifact at ``path``."""
        if not hasattr(self, "n_functions_"):
            raise RuntimeError("save() needs a fitted model: call fit() first")
        self.path = model_io.save_model(path, model_io.class_path(type(self)), self.get_params(), self._get_state(),
                                        ranker=model_io.class_path(self.RANKER) if self.RANKER else None)

    @classmethod
    def load(cls, path: Union[str, Path]) -> "RankerEstimator":
        """Read a model written by :meth:`save` (or ``svmmap learn``)."""
        return model_io.load_model(path, cls=cls)

    @classmethod
    def _from_state(cls, params: dict, meta: dict, arrays: dict) -> "RankerEstimator":
        model = cls(**params)
        model._set_state(meta, arrays)
        return model

    # -- to implement -----------------------------------------------------------------------------
    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        raise NotImplementedError

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _get_state(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be saved yet")

    def _set_state(self, meta: dict, arrays: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be loaded yet")


class StructSVM(RankerEstimator):
    """A linear ranking function trained as a structural SVM for a ranking loss (1-slack cutting planes).

    A PyTerrier layer over :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`, which validates the
    parameters (when constructed) and does the training.

    **The default** (``SVMMap()``) chooses from the judged queries it is given
    (:func:`~pyterrier_svmmap.selection.select_auto`, docs/model-selection.md): raw base scores, regularised
    towards the base function with the best training MAP (``prior="best"``), C from
    :data:`~pyterrier_svmmap.selection.SELECTION_C_GRID` (1e-4 … 1000; at the smallest C the model is that
    base function), selected by per-query held-out AP of 5-fold cross-validation over training ∪ validation
    queries (the final weights: the fold models and the refit on all of them, averaged) — and the base
    function itself is kept unless the learned model's gain passes a sign-flip max-gain test at
    ``fallback_alpha`` (0.5). So the default never trusts a grid's arg-max on five validation queries, and
    falls back to the ranking a user would pick without learning when learning shows no evidence. The
    paper's configuration (Yue et al. §4.2/§5) is
    ``SVMMap(C=DEFAULT_C_GRID, features="bins", prior=None, selection="validation")``.

    Args:
        C: OP 1's regularisation constant (objective ½‖w‖² + C/n Σ_i ξ_i), or a list of them; with a list,
            one model per C is trained (a warm-started path) and one is selected (``selection``); with
            ``selection="validation"`` the one with the best validation MAP is kept — MAP on the validation
            queries given to ``fit``, or, without them, the mean held-out MAP of ``cv``-fold
            cross-validation over the training queries.
        loss: the structural loss: ``"map"`` (SVM-map), or any name of ``pyterrier_svmmap.svm.losses.LOSSES``
            (cutoffs as ``"ndcg@10"``), or ``"combo"``.
        loss_params: parameters of the loss (e.g. ``{"k": 10}``; combo: ``losses``, ``slack``, ``C_weights``).
        features: blocks of φ: ``"bins"`` (the paper's threshold indicators), ``"raw"`` (base scores as
            they are), ``"minmax"`` (per-query min–max normalised), or a combination like
            ``"bins+minmax"``, or ``"auto"``: bins, raw and bins+raw are each trained and selected jointly with
            C (``features_`` says which was kept).
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
        prior: ``None`` (the paper: regularise towards w = 0) or ``"best"`` (default): regularise towards the
            base function with the highest MAP on the training queries (½‖w − w₀‖²), so that a small C keeps
            that function's ranking and a larger C moves away from it only as far as the training
            constraints ask; with ``selection="auto"`` also ``"auto"`` (both, chosen with C).
        prior_scale: size of w₀: the prior function's contribution spans about [0, prior_scale].
        cv: folds of the cross-validation that chooses C when ``fit`` gets no validation data (by query,
            shuffled with ``random_state``); see :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`.
        random_state: seed of those folds.
        selection: ``"auto"`` (default; see above) or ``"validation"`` (the paper's: the best validation MAP
            over the grid, or ``cv``-fold CV over the training queries without validation data).
        fallback_alpha: level of the test that keeps the base function (``None``: never fall back).
        min_valid_queries: with ``selection="auto"``, the validation set size from which it alone is the
            evidence (default None: always cross-validation over training ∪ validation).
        average_folds: with cross-validation and raw/minmax φ, the final weights are the average of the fold
            models and the refit at the chosen setting (default True).
        rel: relevance threshold: a candidate is relevant when its qrels label ≥ ``rel`` (default 1, as
            ir_measures' ``AP(rel=1)`` and LETOR's MAP); used for the loss, validation MAP and the relevant count.
        executor: ``None`` (train in this process), a ``dask.distributed.Client``, a scheduler address or
            ``"local"``: where the cutting-plane iterations run (:mod:`~pyterrier_svmmap.scale.dask`); the
            model is the same. ``queries_per_shard``: the shards' size on a cluster.

    Learned attributes: ``coef_`` (w), ``C_`` (chosen; 0 when the base function was kept), ``selection_``
    (the evidence: ``"cv"``, ``"validation"`` or ``"none"``), ``choice_`` (with ``selection="auto"``: the
    decision and its evidence), ``validation_`` (C → validation MAP), ``path_``
    (per C: validation MAP, iterations, gap, seconds), ``coefs_`` (w of every C), ``history_``
    (per-iteration objective, violation, working set of the kept model), ``n_iter_``, ``converged_``,
    ``feature_names_``, ``base_names_``, ``layout_`` (φ's layout), ``encoder_`` (its thresholds),
    ``ranker_`` (the array-level model).
    """

    MODEL_PARAMS = StructSVMRanker.MODEL_PARAMS
    RANKER = StructSVMRanker

    def __init__(self, C: Union[float, Sequence[float]] = SELECTION_C_GRID, loss="map",
                 loss_params: Optional[dict] = None, features: Union[str, Sequence[str]] = DEFAULT_FEATURES,
                 n_bins: int = 50, binning: str = "quantile", epsilon: float = 1e-3, max_iter: int = 1000,
                 verbose: bool = False, prior: Optional[str] = DEFAULT_PRIOR, prior_scale: float = 1.0,
                 threshold_depth: Optional[int] = 200, cv: int = 5, random_state: Optional[int] = 0,
                 rel: float = 1.0, executor=None, queries_per_shard: int = 1000, selection: str = "auto",
                 fallback_alpha: Optional[float] = DEFAULT_ALPHA,
                 min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES, average_folds: bool = True):
        # the ranker's parameters, stored as given (scikit-learn's habit); StructSVMRanker documents them
        for name, value in dict(locals()).items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)
        self._ranker()                       # validates every parameter now (scikit-learn's habit)

    def _ranker(self) -> StructSVMRanker:
        return StructSVMRanker(verbose=self.verbose, executor=self.executor, queries_per_shard=self.queries_per_shard,
                               **{k: getattr(self, k) for k in self.MODEL_PARAMS})

    def get_params(self) -> dict:
        return dict(super().get_params(), verbose=self.verbose)

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        valid_arrays = None if valid is None else (valid.raw, valid.labels, valid.offsets, valid.n_relevant,
                                                   valid.frame["docno"].to_numpy())
        ranker = self._ranker().fit(train.raw, train.labels, train.offsets, train.n_relevant, valid=valid_arrays,
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
        self._adopt(StructSVMRanker.from_state(meta, arrays))

    def plot(self, **kwargs):
        """Figure 2 of the paper: each base function's learned contribution to the score, as a function
        of its score (needs matplotlib); see :func:`pyterrier_svmmap.plot.plot_model`."""
        from pyterrier_svmmap.plot import plot_model
        return plot_model(self, **kwargs)


class SVMMap(StructSVM):
    """SVM-map (Yue, Finley, Radlinski & Joachims, SIGIR 2007): a StructSVM with Δ = 1 − AP.

    ``SVMMap(C=[...])`` >> after ``RunFeatures([...])``; see :class:`StructSVM` for the parameters.
    """

    def __init__(self, C: Union[float, Sequence[float]] = SELECTION_C_GRID,
                 features: Union[str, Sequence[str]] = DEFAULT_FEATURES,
                 n_bins: int = 50, binning: str = "quantile", epsilon: float = 1e-3, max_iter: int = 1000,
                 verbose: bool = False, loss="map", loss_params: Optional[dict] = None,
                 prior: Optional[str] = DEFAULT_PRIOR, prior_scale: float = 1.0, threshold_depth: Optional[int] = 200,
                 cv: int = 5, random_state: Optional[int] = 0, rel: float = 1.0, executor=None,
                 queries_per_shard: int = 1000, selection: str = "auto", fallback_alpha: Optional[float] = DEFAULT_ALPHA,
                 min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES, average_folds: bool = True):
        super().__init__(C=C, loss=loss, loss_params=loss_params, features=features, n_bins=n_bins,
                         binning=binning, epsilon=epsilon, max_iter=max_iter, verbose=verbose,
                         prior=prior, prior_scale=prior_scale, threshold_depth=threshold_depth, cv=cv,
                         random_state=random_state, rel=rel, executor=executor, queries_per_shard=queries_per_shard,
                         selection=selection, fallback_alpha=fallback_alpha, min_valid_queries=min_valid_queries,
                         average_folds=average_folds)


def _same_value(value, default) -> bool:
    """Whether a parameter's value is its default (sequences compared by their items: ``[1, 2] == (1, 2)``)."""
    if isinstance(value, (list, tuple, np.ndarray)) and isinstance(default, (list, tuple, np.ndarray)):
        return len(value) == len(default) and all(_same_value(a, b) for a, b in zip(value, default))
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False
