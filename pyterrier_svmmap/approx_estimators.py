"""PyTerrier estimators for ApproxAP / ApproxNDCG and the boosted peers (LambdaMART, McRank, AdaRank).

Each is a ``pt.Estimator``: ``fit(train_res, train_qrels, valid_res=None, valid_qrels=None)`` learns
from a result frame with columns ``qid``, ``docno`` and ``features`` (an array per row, one value
per base function, NaN where the function did not retrieve the document) and qrels (``qid``,
``docno``, ``label``); ``transform(res)`` adds ``score`` and ``rank``.

The frame ↔ array conversion lives in :class:`ArrayEstimator`, a small stand-in written before the
lead's ``estimator.py`` base class existed; the subclasses only implement ``_fit_arrays`` and
``_score_arrays`` and can be moved onto that base class unchanged.
"""
from __future__ import annotations

import logging
from typing import Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from . import approx, peers
from .features import FeatureEncoder

log = logging.getLogger(__name__)

Arrays = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def frame_to_arrays(res: pd.DataFrame, qrels: Optional[pd.DataFrame] = None
                    ) -> Tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(res sorted by qid, raw, labels, offsets, n_relevant) from a result frame and its qrels.

    Candidates are grouped by query (stable: the first-stage order within a query is kept). Labels
    of unjudged candidates are 0; ``n_relevant`` counts the qrels' relevant documents (label > 0)
    per query, retrieved or not, as trec_eval's AP does. Without qrels labels and n_relevant are 0.
    """
    if "features" not in res.columns:
        raise ValueError("the result frame has no 'features' column; build one with pt.text.* / "
                         "feature transformers (one np.array per row, one value per base function)")
    res = res.assign(qid=res["qid"].astype(str)).sort_values("qid", kind="stable").reset_index(drop=True)
    raw = np.stack([np.asarray(f, dtype=float) for f in res["features"]]) if len(res) else \
        np.zeros((0, 0))
    qids, starts = np.unique(res["qid"].to_numpy(), return_index=True)
    order = np.argsort(starts)
    qids, starts = qids[order], starts[order]
    offsets = np.r_[starts, len(res)].astype(np.int64)
    labels = np.zeros(len(res))
    n_relevant = np.zeros(len(qids))
    if qrels is not None:
        q = qrels.assign(qid=qrels["qid"].astype(str), docno=qrels["docno"].astype(str))
        merged = res[["qid", "docno"]].assign(docno=res["docno"].astype(str)).merge(
            q[["qid", "docno", "label"]].drop_duplicates(["qid", "docno"]), on=["qid", "docno"], how="left")
        labels = merged["label"].fillna(0).to_numpy(dtype=float)
        counts = q[q["label"] > 0].groupby("qid").size()
        n_relevant = counts.reindex(qids).fillna(0).to_numpy(dtype=float)
    return res, raw, labels, offsets, n_relevant


class ArrayEstimator(pt.Estimator):
    """Base: converts frames to ``(raw, labels, offsets, n_relevant)`` and scores back to frames.

    sklearn habits: the constructor only stores parameters, learned attributes end in ``_``.
    """

    def fit(self, train_res: pd.DataFrame, train_qrels: pd.DataFrame,
            valid_res: Optional[pd.DataFrame] = None, valid_qrels: Optional[pd.DataFrame] = None):
        _, raw, labels, offsets, n_rel = frame_to_arrays(train_res, train_qrels)
        if len(raw) == 0:
            raise ValueError("no training candidates")
        valid = None
        if valid_res is not None:
            if valid_qrels is None:
                raise ValueError("valid_res given without valid_qrels")
            valid = frame_to_arrays(valid_res, valid_qrels)[1:]
        self.n_functions_ = raw.shape[1]
        self._fit_arrays((raw, labels, offsets, n_rel), valid)
        return self

    def transform(self, res: pd.DataFrame) -> pd.DataFrame:
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        out, raw, _, offsets, _ = frame_to_arrays(res)
        out = out.drop(columns=[c for c in ("score", "rank") if c in out.columns])
        scores = self._score_arrays(raw, offsets) if len(out) else np.zeros(0)
        return pt.model.add_ranks(out.assign(score=scores))

    # -- for subclasses --------------------------------------------------------------------------
    def _fit_arrays(self, train: Arrays, valid: Optional[Arrays]) -> None:
        raise NotImplementedError

    def _score_arrays(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# ApproxAP / ApproxNDCG
# ---------------------------------------------------------------------------------------------
class _Approx(ArrayEstimator):
    measure = "ap"

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

    def _fit_arrays(self, train, valid):
        raw, labels, offsets, n_rel = train
        self.encoder_ = FeatureEncoder(self.features, self.n_bins, self.binning).fit(raw, offsets)
        kw = {}
        if valid is not None:
            vraw, vlabels, voffsets, vn_rel = valid
            kw = dict(X_valid=self.encoder_.transform(vraw, voffsets), labels_valid=vlabels,
                      offsets_valid=voffsets, n_relevant_valid=vn_rel)
        self.ranker_ = approx.ApproxRanker(
            self.measure, self.alphas, self.betas if self.measure == "ap" else None, self.n_iter,
            self.learning_rate, track_error=self.track_error, max_entries=self.max_entries,
            random_state=self.random_state, verbose=self.verbose,
        ).fit(self.encoder_.transform(raw, offsets), labels, offsets, n_rel, **kw)
        for name in ("coef_", "alpha_", "beta_", "best_iteration_", "approx_error_", "search_results_"):
            setattr(self, name, getattr(self.ranker_, name))

    def _score_arrays(self, raw, offsets):
        return self.ranker_.decision_function(self.encoder_.transform(raw, offsets))


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
class _Peer(ArrayEstimator):
    ranker_class = None

    def __init__(self, **params):
        self.params = params

    def _fit_arrays(self, train, valid):
        raw, labels, offsets, n_rel = train
        self.ranker_ = self.ranker_class(**self.params)
        args = () if valid is None else valid[:3]
        if isinstance(self.ranker_, peers.AdaRankRanker):
            self.ranker_.fit(raw, labels, offsets, *(args or (None, None, None)), n_relevant=n_rel,
                             n_relevant_valid=None if valid is None else valid[3])
        else:
            self.ranker_.fit(raw, labels, offsets, *args)

    def _score_arrays(self, raw, offsets):
        return self.ranker_.predict(raw, offsets)

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
