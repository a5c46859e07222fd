"""The PyTerrier estimator every learner shares: frames in, arrays to the learner, frames out, ``pt.Artifact`` files."""
from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from pyterrier_svmmap.features.layout import default_base_names
from pyterrier_svmmap.frames import Candidates, candidates_from_frame
import pyterrier_svmmap.io.model_files as model_io
from pyterrier_svmmap.params import Parametrized, ParamSpec
from pyterrier_svmmap.measures import ranks_within_queries
from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.selection import best_function
from pyterrier_svmmap.state import StateError, check_tie_function
from pyterrier_svmmap.ties import break_ties

log = logging.getLogger(__name__)


class RankerEstimator(Parametrized, pt.Estimator, pt.Artifact):
    """Shared PyTerrier plumbing of the learners. A subclass declares ``PARAMS``, writes their keyword-only
    ``__init__`` out and implements ``_fit_arrays(train, valid)``, ``_score(raw, offsets)``, ``_get_state()`` and
    ``_set_state(meta, arrays)`` (docs/architecture.md)."""

    PARAMS = ParamSpec([])
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
        """Train on candidates judged by qrels; the optional validation pair selects hyper-parameters.

        Parameters
        ----------
        train_res : DataFrame
            Training candidates: ``qid``, ``docno`` and ``features`` (a score per base function, NaN where missed).
        train_qrels : DataFrame
            Their judgements: ``qid``, ``docno``, ``label`` (candidates not in it count as label 0).
        valid_res, valid_qrels : DataFrame, optional
            Validation candidates and judgements (both or neither).

        Returns
        -------
        self
        """
        self.check_params()
        if train_res is None or len(train_res) == 0:
            raise ValueError("fit() got no training candidates; pass the result frame of the training topics "
                             "(e.g. RunFeatures(...).transform(train_topics))")
        if train_qrels is None:
            raise ValueError("fit() needs train_qrels (columns qid, docno, label) to know the relevant candidates")
        if (valid_res is None) != (valid_qrels is None):
            raise ValueError("give both valid_res and valid_qrels, or neither")
        rel = getattr(self, "rel", 1.0)                    # the relevance rule: label >= rel
        train = candidates_from_frame(train_res, train_qrels, context=self, rel=rel)
        if valid_res is not None and len(valid_res) == 0:
            raise ValueError("valid_res has no rows: give the validation topics' candidates (e.g. "
                             "RunFeatures(...).transform(valid_topics)), or valid_res=None and valid_qrels=None "
                             "to choose by cross-validation over the training queries")
        valid = None if valid_res is None else candidates_from_frame(
            valid_res, valid_qrels, n_functions=train.raw.shape[1], context=self, rel=rel,
            feature_names=train_res.attrs.get("feature_names"))
        return self._fit_converted(train, valid, feature_names=train_res.attrs.get("feature_names"))

    def fit_candidates(self, train: Candidates, valid: Optional[Candidates] = None,
                       feature_names: Optional[Sequence[str]] = None):
        """``fit`` on frames converted once by :func:`~pyterrier_svmmap.frames.candidates_from_frame` (the same model).

        Parameters
        ----------
        train, valid : Candidates
            Converted with their qrels at this estimator's ``rel`` (``valid`` optional).
        feature_names : sequence of str, optional
            The base functions' names.

        Returns
        -------
        self
        """
        self.check_params()
        return self._fit_converted(train, valid, feature_names)

    def _fit_converted(self, train: Candidates, valid: Optional[Candidates],
                       feature_names: Optional[Sequence[str]]):
        if any(c is not None and (c.labels is None or c.n_relevant is None) for c in (train, valid)):
            raise ValueError("fit_candidates() needs candidates converted with their qrels "
                             "(candidates_from_frame(res, qrels))")
        if valid is not None and valid.raw.shape[1] != train.raw.shape[1]:
            raise ValueError(f"valid has {valid.raw.shape[1]} features per row, train {train.raw.shape[1]}")
        rel = getattr(self, "rel", 1.0)
        if not (train.labels >= rel).any():
            raise ValueError(f"none of the {len(train.labels)} training candidates is relevant (label >= {rel:g}) "
                             "in the qrels; check that the qrels' qid and docno strings match the candidates'")
        self.n_functions_ = train.raw.shape[1]
        self.base_names_ = (list(feature_names) if feature_names and len(feature_names) == self.n_functions_
                            else default_base_names(self.n_functions_))
        # the tie policy (pyterrier_svmmap.ties), unless the ranker sets it in _fit_arrays
        self.__dict__.pop("tie_function_", None)
        self._fit_arrays(train, valid)
        if not hasattr(self, "tie_function_"):
            self.tie_function_ = best_function(train.raw, (train.labels >= rel).astype(float), train.offsets)
        return self

    def score_candidates(self, cands: Candidates) -> np.ndarray:
        """The scores ``transform`` gives: the model's, ties separated by :func:`~pyterrier_svmmap.ties.break_ties`.

        Parameters
        ----------
        cands : Candidates

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted("first")
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
        """Add ``score`` and ``rank`` to every candidate, ties broken by the tie policy (:mod:`~pyterrier_svmmap.ties`).

        Parameters
        ----------
        res : DataFrame
            Candidates with ``qid``, ``docno`` and ``features``.

        Returns
        -------
        DataFrame
            The input's columns with ``score`` and ``rank``, rows in the input's query order, by rank.
        """
        self._check_fitted("before transform()")
        if len(res) == 0:
            pt.validate.result_frame(res, extra_columns=["features"], context=self)
            return res.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype="int64"))
        cands = candidates_from_frame(res, n_functions=self.n_functions_, context=self,
                                      feature_names=self.named_features())
        scores = self.score_candidates(cands)
        # ranks as pt.model.add_ranks (method "first"); queries in the input's order of first appearance
        q = query_ids(cands.offsets)
        by_rank, rank = ranks_within_queries(scores, cands.offsets)
        _, uniques = pd.factorize(res["qid"], use_na_sentinel=False)
        first_seen = pd.unique(pd.Series(uniques).astype(str).to_numpy(dtype=object))
        position = pd.Index(first_seen).get_indexer(cands.qids)
        rows = by_rank[np.argsort(position[q[by_rank]], kind="stable")]
        out = cands.frame.drop(columns="rank", errors="ignore").iloc[rows].reset_index(drop=True)
        return out.assign(score=scores[rows], rank=rank[rows])

    def named_features(self) -> Optional[List[str]]:
        """The base functions' names the model was trained with, or None for the placeholders ``f0, f1, ...``."""
        names = list(getattr(self, "base_names_", []))
        return None if names in (default_base_names(len(names)), default_base_names(len(names), start=1)) else names

    def transform_inputs(self) -> List[List[str]]:
        """The columns ``transform`` needs (``pt.inspect``)."""
        return [["qid", "docno", "features"]]

    def transform_outputs(self, inp_cols: List[str]) -> List[str]:
        """The columns ``transform`` returns (``pt.inspect``).

        Parameters
        ----------
        inp_cols : list of str

        Returns
        -------
        list of str
        """
        return list(inp_cols) + [c for c in ("score", "rank") if c not in inp_cols]

    def decision_function(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The model's scores of a score matrix, ties not broken.

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where missed.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries.

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted("first")
        return self._score(np.asarray(raw, dtype=float), np.asarray(offsets))

    @property
    def MODEL_PARAMS(self) -> Tuple[str, ...]:                            # noqa: N802 - a class constant's name
        """The constructor parameters that change the model (what ``repr`` shows)."""
        return self.PARAMS.model_names

    @property
    def RUNTIME_PARAMS(self) -> Tuple[str, ...]:                          # noqa: N802
        """The constructor parameters of this machine, not of the model (``n_jobs``): never saved."""
        return self.PARAMS.runtime_names

    def __repr__(self) -> str:
        params = self.get_params(deep=False)
        return f"{type(self).__name__}({', '.join(f'{k}={params[k]!r}' for k in self.MODEL_PARAMS)})"

    def __str__(self) -> str:
        """A short name for tables: the class and the model parameters that differ from their defaults."""
        defaults = {k: v.default for k, v in inspect.signature(type(self).__init__).parameters.items()}
        params = self.get_params(deep=False)
        changed = [f"{k}={params[k]!r}" for k in self.MODEL_PARAMS
                   if k in params and not _same_value(params[k], defaults.get(k, inspect.Parameter.empty))]
        return f"{type(self).__name__}({', '.join(changed)})"

    def save(self, path: Union[str, Path], overwrite: bool = False) -> None:
        """Write the trained model to directory ``path``, whole or not at all (:mod:`~pyterrier_svmmap.io.model_files`).

        Parameters
        ----------
        path : str or Path
            A new directory, an empty one, or a model directory, which is replaced.
        overwrite : bool, default False
            Also write into a directory that holds other files (else FileExistsError).
        """
        self._check_fitted("before save()")
        params = {k: v for k, v in self.get_params(deep=False).items() if k not in self.RUNTIME_PARAMS}
        self.path = model_io.save_model(path, model_io.class_path(type(self)), params, self._get_state(),
                                        implied=self.PARAMS.implied,
                                        ranker=model_io.class_path(self.RANKER) if self.RANKER else None,
                                        overwrite=overwrite)

    @classmethod
    def load(cls, path: Union[str, Path]) -> "RankerEstimator":
        """Read a model written by :meth:`save` (or ``svmmap learn``)."""
        return model_io.load_model(path, cls=cls)

    @classmethod
    def from_params(cls, params: dict) -> "RankerEstimator":
        """An unfitted estimator of saved ``params``, checked (a parameter the class fixes only at its value)."""
        taken = set(cls.PARAMS.names)
        for name, value in params.items():
            if name not in taken and not (hasattr(cls, name) and _same_value(value, getattr(cls, name))):
                raise ValueError(f"{cls.__name__} takes no parameter {name!r} (= {value!r})")
        model = cls(**{name: value for name, value in params.items() if name in taken})
        model.check_params()
        return model

    @classmethod
    def _from_state(cls, params: dict, meta: dict, arrays: dict) -> "RankerEstimator":
        """The fitted estimator of ``params`` and a state, checked (:class:`~pyterrier_svmmap.state.StateError`)."""
        model = cls.from_params(params)
        model._set_state(meta, arrays)
        check_tie_function(meta.get("tie_function", model.tie_function_), model.n_functions_)
        if len(model.base_names_) != model.n_functions_:
            raise StateError("base_names",
                             f"has {len(model.base_names_)} names for {model.n_functions_} base functions")
        return model

    def _check_fitted(self, when: str) -> None:
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() or load() {when}")

    def _fit_arrays(self, train: Candidates, valid: Optional[Candidates]) -> None:
        raise NotImplementedError

    def _score(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _get_state(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be saved yet")

    def _set_state(self, meta: dict, arrays: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be loaded yet")


def _same_value(value, default) -> bool:
    """Whether a parameter's value is its default (sequences compared by their items)."""
    if isinstance(value, (list, tuple, np.ndarray)) and isinstance(default, (list, tuple, np.ndarray)):
        return len(value) == len(default) and all(_same_value(a, b) for a, b in zip(value, default))
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False
