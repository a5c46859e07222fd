"""Boosted peers of SVM-map: LambdaMART, McRank (LightGBM) and AdaRank (numpy), no PyTerrier.

All three take a dense matrix ``raw`` (candidates × base functions, NaN where a function did not
retrieve the candidate), ``labels`` and ``offsets`` (length Q + 1; candidates of a query contiguous),
like the rest of the numeric core, and fill missing scores themselves (:func:`fill_missing`,
:func:`query_minmax`).

* :class:`LambdaMARTRanker` — gradient-boosted trees with the LambdaRank gradients (Burges, "From
  RankNet to LambdaRank to LambdaMART", MSR-TR-2010-82), LightGBM's ``lambdarank`` objective, with
  early stopping on the validation queries.
* :class:`McRankRanker` — Li, Burges & Wu, "McRank: learning to rank using multiple classification
  and gradient boosting" (NIPS 2007): multiclass boosted trees, a candidate's score is its expected
  relevance Σ_z z·P(z | x). 30 boosting rounds by default, as Chakrabarti et al. (KDD 2008) ran it.
* :class:`AdaRankRanker` — Xu & Li, "AdaRank: a boosting algorithm for information retrieval"
  (SIGIR 2007), AdaRank.MAP: the weak rankers are the single features (§3.3 of that paper), the
  query weights and ranker weights follow its Figure 1.

LightGBM is optional (``pip install pyterrier-svmmap[peers]``) and only imported when a LightGBM
peer is fitted or loaded.

Model state. Every ranker here (and :class:`pyterrier_svmmap.approx.ranker.ApproxRanker`) has
``get_params()`` (the constructor parameters), ``get_state() -> (meta, arrays)`` and
``from_state(meta, arrays)``: ``meta`` is JSON (constructor parameters under ``meta["params"]``,
learned scalars, ``meta["ranker"]`` the class name), ``arrays`` the learned numpy arrays; a ranker
rebuilt by ``from_state`` predicts bit-identically. The LightGBM boosters are kept as LightGBM's
text model (UTF-8 bytes in a uint8 array), which writes every threshold and leaf value with 17
significant digits and so round-trips doubles exactly.
"""
from __future__ import annotations

import inspect
import logging
from typing import Dict, Optional, Tuple

import numpy as np

from pyterrier_svmmap.features.encoder import minmax_normalise, query_min_max
from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.measures import average_precision, ndcg_at
from pyterrier_svmmap.state import (check_state, constructor_params, float_from_json, int_from_json, json_float,
                                    json_params, state_array)

log = logging.getLogger(__name__)

PEERS_HINT = ("this learner needs LightGBM, an optional dependency of pyterrier-svmmap; "
              "install it with: pip install pyterrier-svmmap[peers]")


def _lightgbm():
    """Import LightGBM lazily, with an installation hint when it is missing."""
    try:
        import lightgbm
    except ImportError as e:
        raise ImportError(PEERS_HINT) from e
    return lightgbm


# ---------------------------------------------------------------------------------------------
# missing scores
# ---------------------------------------------------------------------------------------------
def fill_missing(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Raw scores with a missing score replaced by the query's lowest score of that function, minus
    a margin (1% of the query's range, at least 1e-6), so "not retrieved" ranks below every retrieved
    candidate; a function retrieving nothing for a query gives 0 there."""
    raw = np.asarray(raw, dtype=float)
    lo, hi = query_min_max(raw, offsets)
    margin = np.maximum(0.01 * np.nan_to_num(hi - lo), 1e-6)
    fill = np.nan_to_num(lo - margin, nan=0.0)[query_ids(offsets)]
    return np.where(np.isnan(raw), fill, raw)


def query_minmax(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-query min–max normalised scores, missing → 0 (LETOR's "QueryLevelNorm", which AdaRank's
    experiments used; a linear combination of raw scores of different scales would be meaningless)."""
    return np.nan_to_num(minmax_normalise(np.asarray(raw, dtype=float), offsets), nan=0.0)


def _int_labels(labels: np.ndarray) -> np.ndarray:
    """Relevance grades as non-negative integers (negative judgements count as 0). The boosted learners use
    graded labels as classes / gains, so a fractional label is an error, not silently rounded."""
    labels = np.asarray(labels, dtype=float)
    frac = labels != np.rint(labels)
    if frac.any():
        raise ValueError(f"{int(frac.sum())} labels are not whole numbers (e.g. {labels[frac][0]:g}); LambdaMART and "
                         "McRank learn from integer relevance grades: round the qrels' labels, or binarise them "
                         "(label >= 1 is relevant, the rule of the other learners)")
    return np.clip(labels, 0, None).astype(int)


def _check(raw, labels, offsets):
    raw = np.asarray(raw, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    if raw.ndim != 2 or offsets[0] != 0 or offsets[-1] != len(raw) or \
            (labels is not None and len(labels) != len(raw)):
        raise ValueError("raw must be (candidates × base functions) with labels per candidate and "
                         "offsets from 0 to the number of candidates")
    return raw, offsets


# ---------------------------------------------------------------------------------------------
# model state: helpers shared with approx.ApproxRanker
# ---------------------------------------------------------------------------------------------
def _booster_bytes(booster) -> np.ndarray:
    """LightGBM's text model of ``booster`` (all iterations) as a uint8 array of UTF-8 bytes."""
    return np.frombuffer(booster.model_to_string(num_iteration=-1).encode("utf-8"), dtype=np.uint8).copy()


def _booster_from_bytes(arrays: Dict[str, np.ndarray], owner: str, n_functions: int):
    """The LightGBM booster of ``arrays["booster"]`` (see :func:`_booster_bytes`), checked to take
    ``n_functions`` features."""
    lgb = _lightgbm()
    raw = state_array(arrays, "booster", (None,), owner, dtype=np.uint8)
    try:
        booster = lgb.Booster(model_str=raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, lgb.basic.LightGBMError) as e:
        raise ValueError(f"{owner} state: arrays['booster'] is not a LightGBM text model ({e})") from None
    if booster.num_feature() != n_functions:
        raise ValueError(f"{owner} state: the booster takes {booster.num_feature()} features but "
                         f"meta['n_functions'] is {n_functions}")
    return booster


def _n_functions(meta: dict, owner: str) -> int:
    n = int_from_json(meta["n_functions"], f"{owner} state: meta['n_functions']")
    if n < 1:
        raise ValueError(f"{owner} state: meta['n_functions'] must be at least 1, got {n}")
    return n


class _Peer:
    """Shared plumbing: sklearn habits (constructor stores parameters, learned attributes end in _)."""

    def _check_fitted(self):
        if not hasattr(self, "n_functions_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def _check_width(self, raw):
        if raw.shape[1] != self.n_functions_:
            raise ValueError(f"trained on {self.n_functions_} base functions, got {raw.shape[1]}")

    def get_params(self) -> dict:
        """The constructor parameters, by name."""
        return constructor_params(self)

    def _meta(self) -> dict:
        self._check_fitted()
        name = type(self).__name__
        return {"ranker": name, "params": json_params(self.get_params(), name),
                "n_functions": int(self.n_functions_)}


# ---------------------------------------------------------------------------------------------
# LambdaMART
# ---------------------------------------------------------------------------------------------
class LambdaMARTRanker(_Peer):
    """LambdaMART via LightGBM's ``lambdarank`` objective.

    With validation queries, boosting stops when the validation ``metric`` (LightGBM name, default
    ``"ndcg"`` at ``eval_at``; ``"map"`` is also available) has not improved for
    ``early_stopping_rounds`` rounds, and the best iteration is kept. ``params`` are passed on to
    ``lightgbm.LGBMRanker``.

    Learned attributes: ``n_functions_`` (base functions, checked at prediction), ``booster_`` (the
    ``lightgbm.Booster``), ``best_iteration_`` (the boosting rounds used to predict).
    """

    def __init__(self, n_estimators: int = 500, learning_rate: float = 0.05, num_leaves: int = 31,
                 min_child_samples: int = 20, metric: str = "ndcg", eval_at: int = 10,
                 early_stopping_rounds: int = 50, random_state: Optional[int] = 0,
                 params: Optional[dict] = None, verbose: bool = False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.metric = metric
        self.eval_at = eval_at
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.params = params
        self.verbose = verbose

    def fit(self, raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
            raw_valid: Optional[np.ndarray] = None, labels_valid: Optional[np.ndarray] = None,
            offsets_valid: Optional[np.ndarray] = None) -> "LambdaMARTRanker":
        lgb = _lightgbm()
        raw, offsets = _check(raw, labels, offsets)
        self.n_functions_ = raw.shape[1]
        model = lgb.LGBMRanker(
            objective="lambdarank", n_estimators=self.n_estimators, learning_rate=self.learning_rate,
            num_leaves=self.num_leaves, min_child_samples=self.min_child_samples,
            random_state=self.random_state, verbose=1 if self.verbose else -1, **(self.params or {}))
        kwargs = {}
        if raw_valid is not None:
            raw_valid, offsets_valid = _check(raw_valid, labels_valid, offsets_valid)
            Xv, yv = fill_missing(raw_valid, offsets_valid), _int_labels(labels_valid)
            if "eval_X" in inspect.signature(model.fit).parameters:   # LightGBM ≥ 4.6
                kwargs = dict(eval_X=(Xv,), eval_y=(yv,))
            else:
                kwargs = dict(eval_set=[(Xv, yv)])
            kwargs.update(eval_group=[np.diff(offsets_valid)], eval_at=[self.eval_at],
                          eval_metric=self.metric,
                          callbacks=[lgb.early_stopping(self.early_stopping_rounds,
                                                        first_metric_only=True, verbose=self.verbose)])
        model.fit(fill_missing(raw, offsets), _int_labels(labels), group=np.diff(offsets), **kwargs)
        self.booster_ = model.booster_
        self.best_iteration_ = int(model.best_iteration_ or self.n_estimators)
        log.info("LambdaMART: %d trees", self.best_iteration_)
        return self

    def predict(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Scores (higher is better) of the best iteration."""
        self._check_fitted()
        raw, offsets = _check(raw, None, offsets)
        self._check_width(raw)
        # what LGBMRanker.predict does, on the booster alone (so a loaded model predicts the same)
        return self.booster_.predict(fill_missing(raw, offsets), num_iteration=self.best_iteration_)

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        """(meta, arrays): parameters, ``n_functions``, ``best_iteration``; the booster's text
        model as ``arrays["booster"]`` (uint8 UTF-8 bytes). See :meth:`from_state`."""
        meta = self._meta()
        meta["best_iteration"] = int(self.best_iteration_)
        return meta, {"booster": _booster_bytes(self.booster_)}

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "LambdaMARTRanker":
        """The fitted ranker saved by :meth:`get_state` (bit-identical predictions); ValueError
        naming what is missing or inconsistent."""
        params = check_state(cls, meta, arrays, ("n_functions", "best_iteration"), ("booster",))
        self = cls(**params)
        self.n_functions_ = _n_functions(meta, cls.__name__)
        self.best_iteration_ = int_from_json(meta["best_iteration"], f"{cls.__name__} state: meta['best_iteration']")
        if self.best_iteration_ < 1:
            raise ValueError(f"{cls.__name__} state: meta['best_iteration'] must be at least 1, "
                             f"got {self.best_iteration_}")
        self.booster_ = _booster_from_bytes(arrays, cls.__name__, self.n_functions_)
        return self


# ---------------------------------------------------------------------------------------------
# McRank
# ---------------------------------------------------------------------------------------------
class McRankRanker(_Peer):
    """McRank: multiclass gradient-boosted trees; score = expected relevance Σ_z z·P(z | x).

    Validation queries are accepted for a uniform interface but not used: the number of rounds is
    fixed (``n_estimators`` = 30, as Chakrabarti et al. 2008 ran McRank).

    Learned attributes: ``n_functions_`` (base functions, checked at prediction), ``classes_`` (the
    integer relevance grades z seen in training, ascending), ``booster_`` (the ``lightgbm.Booster``:
    one model per grade, or the binary logistic model for two grades).
    """

    def __init__(self, n_estimators: int = 30, learning_rate: float = 0.1, num_leaves: int = 31,
                 min_child_samples: int = 20, random_state: Optional[int] = 0,
                 params: Optional[dict] = None, verbose: bool = False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.random_state = random_state
        self.params = params
        self.verbose = verbose

    def fit(self, raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
            raw_valid: Optional[np.ndarray] = None, labels_valid: Optional[np.ndarray] = None,
            offsets_valid: Optional[np.ndarray] = None) -> "McRankRanker":
        lgb = _lightgbm()
        raw, offsets = _check(raw, labels, offsets)
        self.n_functions_ = raw.shape[1]
        y = _int_labels(labels)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError("McRank needs at least two relevance grades among the training candidates")
        # two grades: LightGBM's multiclass needs ≥ 3 classes; the binary logistic model is the
        # two-class case of the same multinomial model, and Σ_z z·P(z | x) is still the score
        model = lgb.LGBMClassifier(
            objective="multiclass" if len(self.classes_) > 2 else "binary", n_estimators=self.n_estimators, learning_rate=self.learning_rate,
            num_leaves=self.num_leaves, min_child_samples=self.min_child_samples,
            random_state=self.random_state, verbose=1 if self.verbose else -1, **(self.params or {}))
        model.fit(fill_missing(raw, offsets), y)
        self.booster_ = model.booster_     # trained on the grades' indices 0..K-1 in classes_
        return self

    def _proba(self, X: np.ndarray) -> np.ndarray:
        """P(z | x) per class, as ``LGBMClassifier.predict_proba`` computes it from the booster."""
        p = self.booster_.predict(X, num_iteration=-1)
        return p if p.ndim == 2 else np.vstack((1.0 - p, p)).transpose()

    def predict(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Expected relevance Σ_z z·P(z | x) of every candidate."""
        self._check_fitted()
        raw, offsets = _check(raw, None, offsets)
        self._check_width(raw)
        return self._proba(fill_missing(raw, offsets)) @ self.classes_.astype(float)

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        """(meta, arrays): parameters and ``n_functions``; ``arrays["classes"]`` and the booster's
        text model as ``arrays["booster"]`` (uint8 UTF-8 bytes). See :meth:`from_state`."""
        return self._meta(), {"classes": np.array(self.classes_, dtype=np.int64),
                              "booster": _booster_bytes(self.booster_)}

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "McRankRanker":
        """The fitted ranker saved by :meth:`get_state` (bit-identical predictions); ValueError
        naming what is missing or inconsistent."""
        name = cls.__name__
        params = check_state(cls, meta, arrays, ("n_functions",), ("classes", "booster"))
        self = cls(**params)
        self.n_functions_ = _n_functions(meta, name)
        self.classes_ = state_array(arrays, "classes", (None,), name, dtype=np.int64)
        k = len(self.classes_)
        if k < 2 or np.any(np.diff(self.classes_) <= 0):
            raise ValueError(f"{name} state: arrays['classes'] must be at least two ascending distinct "
                             f"grades, got {self.classes_.tolist()}")
        self.booster_ = _booster_from_bytes(arrays, name, self.n_functions_)
        per_round = self.booster_.num_model_per_iteration()
        if per_round != (k if k > 2 else 1):
            raise ValueError(f"{name} state: the booster models {per_round} class(es) per round, "
                             f"which does not fit the {k} grades of arrays['classes']")
        return self


# ---------------------------------------------------------------------------------------------
# AdaRank
# ---------------------------------------------------------------------------------------------
class AdaRankRanker(_Peer):
    """AdaRank (Xu & Li 2007, Figure 1) optimising AP (AdaRank.MAP) or NDCG@k.

    Weak rankers are single (per-query min–max normalised) features. Round t picks the feature
    maximising Σ_i P_t(i) E(h, q_i), sets α_t = ½ ln(Σ_i P_t(i)(1 + E_i) / Σ_i P_t(i)(1 − E_i)),
    f_t = Σ_{s≤t} α_s h_s, and re-weights queries P_{t+1}(i) ∝ exp(−E(f_t, q_i)). As in common
    implementations (RankLib), the feature picked in the previous boosting round is not picked again at once
    (it would only grow its own weight). The model kept is f_t of the round with the best validation
    measure (training measure without validation queries).

    Learned attributes: ``n_functions_``, ``coef_`` (α summed per feature: the kept f_t),
    ``best_round_`` (its t, 1-based; 0 if no round ran), ``history_`` (one dict per round: round,
    feature, alpha, train (mean training measure), select (the measure the round was chosen by)).
    """

    def __init__(self, n_rounds: int = 100, measure: str = "ap", k: int = 10,
                 verbose: bool = False):
        self.n_rounds = n_rounds
        self.measure = measure
        self.k = k
        self.verbose = verbose

    def _evaluate(self, scores, labels, offsets, n_relevant):
        if self.measure == "ap":
            return average_precision(scores, labels, offsets, n_relevant)
        if self.measure == "ndcg":
            return ndcg_at(scores, labels, offsets, self.k, n_relevant)
        raise ValueError(f"measure={self.measure!r} is not valid; choose 'ap' or 'ndcg'")

    def fit(self, raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
            raw_valid: Optional[np.ndarray] = None, labels_valid: Optional[np.ndarray] = None,
            offsets_valid: Optional[np.ndarray] = None, n_relevant: Optional[np.ndarray] = None,
            n_relevant_valid: Optional[np.ndarray] = None) -> "AdaRankRanker":
        raw, offsets = _check(raw, labels, offsets)
        self.n_functions_ = raw.shape[1]
        X = query_minmax(raw, offsets)
        n_q, n_f = len(offsets) - 1, X.shape[1]
        # E(h_k, q_i) of every weak ranker on every query is fixed: compute it once
        E = np.stack([self._evaluate(X[:, k], labels, offsets, n_relevant) for k in range(n_f)])
        Xv = None if raw_valid is None else query_minmax(_check(raw_valid, labels_valid, offsets_valid)[0],
                                                         offsets_valid)
        P = np.full(n_q, 1.0 / n_q)
        w = np.zeros(n_f)
        best, prev = (-np.inf, w.copy(), 0), -1
        self.history_ = []
        rounds = range(int(self.n_rounds))
        if self.verbose:
            from tqdm.auto import tqdm
            rounds = tqdm(rounds, desc="AdaRank")
        for t in rounds:
            gain = E @ P
            if prev >= 0 and n_f > 1:
                gain[prev] = -np.inf
            k = int(np.argmax(gain))
            num, den = P @ (1.0 + E[k]), P @ (1.0 - E[k])
            alpha = 0.5 * np.log(num / max(den, 1e-12))
            w[k] += alpha
            perf = self._evaluate(X @ w, labels, offsets, n_relevant)
            P = np.exp(-perf - np.max(-perf))
            P /= P.sum()
            score = perf.mean() if Xv is None else \
                self._evaluate(Xv @ w, labels_valid, offsets_valid, n_relevant_valid).mean()
            self.history_.append({"round": t + 1, "feature": k, "alpha": float(alpha),
                                  "train": float(perf.mean()), "select": float(score)})
            if score > best[0]:
                best = (score, w.copy(), t + 1)
            prev = k
        self.coef_, self.best_round_ = best[1], best[2]
        log.info("AdaRank: kept round %d (%.4f)", self.best_round_, best[0])
        return self

    def predict(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Σ_t α_t h_t on the per-query normalised features."""
        self._check_fitted()
        raw, offsets = _check(raw, None, offsets)
        self._check_width(raw)
        return query_minmax(raw, offsets) @ self.coef_

    _HISTORY = (("round", int), ("feature", int), ("alpha", float), ("train", float), ("select", float))

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        """(meta, arrays): parameters, ``n_functions``, ``best_round`` and ``history`` in meta (non-finite
        floats as "nan"/"inf"/"-inf"), ``arrays["coef"]``. See :meth:`from_state`."""
        meta = self._meta()
        meta["best_round"] = int(self.best_round_)
        meta["history"] = [{k: int(h[k]) if t is int else json_float(h[k]) for k, t in self._HISTORY}
                           for h in self.history_]
        return meta, {"coef": np.array(self.coef_, dtype=float)}

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "AdaRankRanker":
        """The fitted ranker saved by :meth:`get_state` (bit-identical predictions); ValueError
        naming what is missing or inconsistent."""
        name = cls.__name__
        params = check_state(cls, meta, arrays, ("n_functions", "best_round", "history"), ("coef",))
        self = cls(**params)
        self.n_functions_ = _n_functions(meta, name)
        self.coef_ = state_array(arrays, "coef", (self.n_functions_,), name)
        history = meta["history"]
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise ValueError(f"{name} state: meta['history'] must be a list of dicts, one per round")
        self.history_ = []
        for i, h in enumerate(history):
            lacking = [k for k, _ in cls._HISTORY if k not in h]
            if lacking:
                raise ValueError(f"{name} state: meta['history'][{i}] lacks {lacking}")
            what = f"{name} state: meta['history'][{i}]"
            self.history_.append({k: int_from_json(h[k], f"{what}[{k!r}]") if t is int
                                  else float_from_json(h[k], f"{what}[{k!r}]") for k, t in cls._HISTORY})
            if not 0 <= self.history_[-1]["feature"] < self.n_functions_:
                raise ValueError(f"{what}: feature {self.history_[-1]['feature']} is not one of the "
                                 f"{self.n_functions_} base functions")
        self.best_round_ = int_from_json(meta["best_round"], f"{name} state: meta['best_round']")
        if not 0 <= self.best_round_ <= len(self.history_):
            raise ValueError(f"{name} state: meta['best_round'] is {self.best_round_}, but there are "
                             f"{len(self.history_)} rounds in meta['history']")
        return self
