"""AdaRank (Xu & Li, SIGIR 2007) on arrays; numpy only."""
from __future__ import annotations

import logging
from typing import Dict, Optional, Tuple

import numpy as np

from pyterrier_svmmap.boosting.common import Peer, query_minmax
from pyterrier_svmmap.measures import average_precision, ndcg_at
from pyterrier_svmmap.params import Param, ParamSpec, boolean, one_of, positive_int
from pyterrier_svmmap.queries import check_ranking_arrays
from pyterrier_svmmap.state import float_from_json, int_from_json, json_float, state_array

log = logging.getLogger(__name__)


class AdaRankRanker(Peer):
    """AdaRank (Xu & Li 2007, Figure 1) optimising AP (AdaRank.MAP) or NDCG@k, with single-feature weak rankers (a
    feature is not picked in two consecutive rounds, as in RankLib); the round with the best validation measure is kept.

    {parameters}

    Learned attributes: ``n_functions_``, ``coef_``, ``best_round_`` (1-based) and ``history_``."""

    _FIT_TAKES_N_RELEVANT = True

    PARAMS = ParamSpec([
        Param("n_rounds", 100, "int", "Boosting rounds at most.", check=positive_int),
        Param("measure", "ap", "{'ap', 'ndcg'}", "The measure boosted: AP (AdaRank.MAP) or NDCG@``k``.",
              check=one_of("ap", "ndcg")),
        Param("k", 10, "int", "The cutoff of NDCG@k.", check=positive_int),
        Param("verbose", False, "bool", "Log each round.", check=boolean, model=False),
    ])

    def __init__(self, *, n_rounds=100, measure="ap", k=10, verbose=False):
        self.n_rounds = n_rounds
        self.measure = measure
        self.k = k
        self.verbose = verbose

    def _evaluate(self, scores, labels, offsets, n_relevant):
        if self.measure == "ap":
            return average_precision(scores, labels, offsets, n_relevant)
        return ndcg_at(scores, labels, offsets, self.k, n_relevant)

    def fit(self, raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray,
            raw_valid: Optional[np.ndarray] = None, labels_valid: Optional[np.ndarray] = None,
            offsets_valid: Optional[np.ndarray] = None, n_relevant: Optional[np.ndarray] = None,
            n_relevant_valid: Optional[np.ndarray] = None) -> "AdaRankRanker":
        self.check_params()
        raw, offsets = self._training(raw, labels, offsets)
        X = query_minmax(raw, offsets)
        n_q, n_f = len(offsets) - 1, X.shape[1]
        # E(h_k, q_i) of every weak ranker on every query is fixed: compute it once
        E = np.stack([self._evaluate(X[:, k], labels, offsets, n_relevant) for k in range(n_f)])
        Xv = None if raw_valid is None else query_minmax(
            check_ranking_arrays(raw_valid, labels_valid, offsets_valid, "validation")[0], offsets_valid)
        P = np.full(n_q, 1.0 / n_q)
        w = np.zeros(n_f)
        best, prev = (-np.inf, w.copy(), 0), -1
        self.history_ = []
        from tqdm.auto import tqdm
        for t in tqdm(range(int(self.n_rounds)), desc="AdaRank", disable=not self.verbose):
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
        raw, offsets = self._scored(raw, offsets)
        return query_minmax(raw, offsets) @ self.coef_

    _HISTORY = (("round", int), ("feature", int), ("alpha", float), ("train", float), ("select", float))

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        meta = dict(self._meta(), best_round=int(self.best_round_), history=[
            {k: int(h[k]) if t is int else json_float(h[k]) for k, t in self._HISTORY} for h in self.history_])
        return meta, {"coef": np.array(self.coef_, dtype=float)}

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "AdaRankRanker":
        name = cls.__name__
        self = cls._restored(meta, arrays, ("best_round", "history"), ("coef",))
        self.coef_ = state_array(arrays, "coef", (self.n_functions_,), name)
        history = meta["history"]
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise ValueError(f"{name} state: meta['history'] must be a list of dicts, one per round")
        self.history_ = []
        for i, h in enumerate(history):
            what = f"{name} state: meta['history'][{i}]"
            lacking = [k for k, _ in cls._HISTORY if k not in h]
            if lacking:
                raise ValueError(f"{what} lacks {lacking}")
            self.history_.append({k: (int_from_json if t is int else float_from_json)(h[k], f"{what}[{k!r}]")
                                  for k, t in cls._HISTORY})
            if not 0 <= self.history_[-1]["feature"] < self.n_functions_:
                raise ValueError(f"{what}: feature {self.history_[-1]['feature']} is not one of the "
                                 f"{self.n_functions_} base functions")
        self.best_round_ = int_from_json(meta["best_round"], f"{name} state: meta['best_round']")
        if not 0 <= self.best_round_ <= len(self.history_):
            raise ValueError(f"{name} state: meta['best_round'] is {self.best_round_}, but there are "
                             f"{len(self.history_)} rounds in meta['history']")
        return self
