"""One trial: every learned system fitted on the split's training queries (choosing its hyper-parameters on
the validation queries) and ranking the candidates of its test queries; every base function's ranking of a
test query is its own run. The estimators with an array-level path (every
:class:`~pyterrier_svmmap.estimators.base.RankerEstimator`) share one conversion of each split's frames
(``fit_candidates`` / ``score_candidates``); any other ``pt.Estimator`` gets the frames.

The base function chosen per split on its training and validation queries (:func:`choose_bases`) is one more
row, ``base-chosen-on-training`` (kind "chosen"), aggregated like a learned system; so are the unsupervised
fusions of the base functions (:func:`_fusion_rows`, kind "unsupervised": reciprocal rank fusion and CombSUM),
what a user without judgments would try.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from pyterrier_svmmap.string_codes import sorted_string_codes
from pyterrier_svmmap.experiments.reproduce.checkpoints import TrialStore
from pyterrier_svmmap.experiments.reproduce.evaluation import Evaluator, cut_depth

logger = logging.getLogger(__name__)


def _subset(frame: pd.DataFrame, groups: Dict[str, np.ndarray], qids: Sequence[str]) -> pd.DataFrame:
    rows = [groups[q] for q in qids if q in groups]
    return frame.iloc[np.concatenate(rows)] if rows else frame.iloc[:0]


class TrialsInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_trials`; ``finished`` trials are checkpointed in the store."""

    def __init__(self, finished: int):
        super().__init__(f"{finished} finished trials checkpointed")
        self.finished = finished


class _Trials:
    """What every trial needs (candidates and qrels grouped by query, the systems, the evaluator), so
    that one trial is one call; worker processes inherit it by ``fork``."""

    def __init__(self, candidates: pd.DataFrame, qrels: pd.DataFrame, systems: Dict[str, Callable],
                 depth: Optional[int], store: Optional[TrialStore] = None):
        self.candidates, self.qrels, self.systems, self.depth = candidates, qrels, systems, depth
        self.store = store
        self.evaluator = Evaluator(qrels)
        self.cand_groups = {q: np.asarray(ix) for q, ix in candidates.groupby("qid", sort=False).indices.items()}
        self.qrel_groups = {q: np.asarray(ix) for q, ix in qrels.groupby("qid", sort=False).indices.items()}

    def __getstate__(self):
        """What a Dask worker receives (``client.scatter``): the inputs, not the store (the client
        writes the checkpoints) nor the evaluator and groups (rebuilt on arrival, once per worker)."""
        return {"candidates": self.candidates, "qrels": self.qrels, "systems": self.systems,
                "depth": self.depth}

    def __setstate__(self, state):
        self.__init__(state["candidates"], state["qrels"], state["systems"], state["depth"], None)

    def run(self, split, keep_models: bool) -> Tuple[List[pd.DataFrame], Dict[str, float], Dict[str, object]]:
        """Fit every system on ``split``; (per-query rows, fit seconds, the models if ``keep_models``).
        With a store, a system with a checkpoint is not refitted and each fit is checkpointed at once."""
        results = {}
        todo = []
        for name in self.systems:
            done = self.load(split, name, keep_models)
            if done is not None:
                results[name] = done
            else:
                todo.append(name)
        for name, (pq, sec, est) in self.compute(split, todo, keep_models, on_result=self.save).items():
            results[name] = (pq, sec, est)
        return self.assemble(split, results, keep_models)

    def load(self, split, name: str, keep_models: bool) -> Optional[tuple]:
        """``(per_query, fit_seconds, model or None)`` from the store's checkpoint, or None."""
        if self.store is None:
            return None
        done = self.store.load(self.store.key(split, name, self.systems[name]()))
        if done is None:
            return None
        logger.debug("trial %d %s: reused the checkpoint", split.trial, name)
        return done["per_query"], done["fit_seconds"], done.get("model") if keep_models else None

    def save(self, split, name: str, result: tuple, keep_models: bool) -> None:
        """Checkpoint one ``(per_query, fit_seconds, model)`` (the model only if ``keep_models``)."""
        if self.store is not None:
            pq, sec, est = result
            self.store.save(self.store.key(split, name, self.systems[name]()), pq, sec,
                            est if keep_models else None)

    def compute(self, split, names: Sequence[str], keep_models: bool, on_result: Optional[Callable] = None
                ) -> Dict[str, tuple]:
        """Fit the systems ``names`` on ``split``: ``{name: (per_query, fit_seconds, model or None)}``;
        ``on_result(split, name, result, keep_models)`` is called after each fit (checkpointing)."""
        if not names:
            return {}
        test = list(split.test)
        tr, va, te = (_subset(self.candidates, self.cand_groups, split.train),
                      _subset(self.candidates, self.cand_groups, split.valid),
                      _subset(self.candidates, self.cand_groups, test))
        qtr = _subset(self.qrels, self.qrel_groups, split.train)
        qva = _subset(self.qrels, self.qrel_groups, split.valid)
        out = {}
        converted: Dict[object, object] = {}      # the split's frames as Candidates, shared by the estimators
        for name in names:
            est = self.systems[name]()
            pq, sec = self._fit_and_test(est, split, tr, qtr, va, qva, te, test, converted)
            out[name] = (pq, sec, est if keep_models else None)
            if on_result is not None:
                on_result(split, name, out[name], keep_models)
            logger.debug("trial %d %s: fit %.2fs, test MAP %.4f", split.trial, name, sec, pq["map"].mean())
        return out

    def assemble(self, split, results: Dict[str, tuple], keep_models: bool):
        """``run``'s return value from ``{name: (per_query, fit_seconds, model)}``, in system order."""
        rows, seconds, models = [], {}, {}
        for name in self.systems:
            pq, seconds[name], est = results[name]
            if keep_models and est is not None:
                models[name] = est
            rows.append(pq.reset_index().assign(system=name, kind="learned", trial=split.trial))
        return rows, seconds, models

    def _fit_and_test(self, est, split, tr, qtr, va, qva, te, test, converted: Optional[dict] = None
                      ) -> Tuple[pd.DataFrame, float]:
        """Fit ``est`` on the split's training (and validation) queries; its per-query test measures
        and the fit's seconds. An estimator with an array-level path takes it, sharing the conversions
        of the split's frames in ``converted`` (see :meth:`_fit_and_test_candidates`)."""
        if converted is not None and hasattr(est, "fit_candidates") and hasattr(est, "score_candidates") \
                and len(tr) and len(te):
            return self._fit_and_test_candidates(est, split, tr, qtr, va, qva, te, test, converted)
        t = time.perf_counter()
        if len(split.valid):
            est.fit(tr, qtr, va, qva)
        else:
            est.fit(tr, qtr)
        seconds = time.perf_counter() - t
        return self.evaluator.per_query(cut_depth(est.transform(te), self.depth), test), seconds

    def _fit_and_test_candidates(self, est, split, tr, qtr, va, qva, te, test, converted: dict
                                 ) -> Tuple[pd.DataFrame, float]:
        """:meth:`_fit_and_test` for an estimator with an array-level path (``fit_candidates`` and
        ``score_candidates``, as every :class:`~pyterrier_svmmap.estimators.base.RankerEstimator`): the split's
        frames are converted once (per relevance threshold ``rel``) and kept in ``converted`` for the
        split's other estimators; the same model, scores and measures as ``fit`` and ``transform``. The
        test rows are cut at ``depth`` by score (the tie policy makes a query's scores distinct, so the
        cut is the one :func:`cut_depth` makes on ``transform``'s output)."""
        from pyterrier_svmmap.queries import query_ids
        from pyterrier_svmmap.frames import candidates_from_frame
        from pyterrier_svmmap.measures import ranks_within_queries
        rel = getattr(est, "rel", 1.0)
        if ("train", rel) not in converted:
            train = candidates_from_frame(tr, qtr, rel=rel)
            valid = None
            if len(split.valid) and len(va):
                valid = candidates_from_frame(va, qva, n_functions=train.raw.shape[1], rel=rel)
            converted["train", rel] = (train, valid)
        train, valid = converted["train", rel]
        if "test" not in converted:
            cands = candidates_from_frame(te, n_functions=train.raw.shape[1])
            converted["test"] = cands
            # the evaluator's codes of the test rows' qid and docno, shared by the split's estimators
            converted["test codes"] = (sorted_string_codes(cands.qids[query_ids(cands.offsets)]),
                                       sorted_string_codes(cands.frame["docno"]))
        cands = converted["test"]
        (q_code, q_strings), (d_code, d_strings) = converted["test codes"]
        t = time.perf_counter()
        est.fit_candidates(train, valid, feature_names=tr.attrs.get("feature_names"))
        seconds = time.perf_counter() - t
        scores = est.score_candidates(cands)
        keep = np.ones(len(scores), dtype=bool)
        if self.depth is not None:
            keep = ranks_within_queries(scores, cands.offsets)[1] < self.depth
        pq = self.evaluator.per_query_codes(q_code[keep], q_strings, d_code[keep], d_strings, scores[keep], test)
        return pq, seconds


#: name of the row of the base function chosen per split on the split's non-test queries
CHOSEN_BASE = "base-chosen-on-training"


def choose_bases(base_pq: Dict[str, pd.DataFrame], splits) -> Dict[int, str]:
    """Per split (by ``trial``): the base function whose MAP over the split's training *and*
    validation queries — every judged query the learners were given — is highest; ties go to the
    first in ``base_pq``'s order. This is the choice a user without a learner can make: its test
    measures are the honest counterpart of the best base function in hindsight (chosen on the test
    queries)."""
    chosen = {}
    for split in splits:
        seen = list(split.train) + list(split.valid)
        best, best_map = None, -np.inf
        for name, pq in base_pq.items():
            m = float(pq.loc[seen, "map"].mean())
            if m > best_map:
                best, best_map = name, m
        chosen[split.trial] = best
    return chosen


#: the unsupervised rows (kind "unsupervised"): name → fusion of
#: :data:`pyterrier_svmmap.experiments.fusion.FUSIONS` over the base functions' scores of the candidates
FUSION_SYSTEMS = {"fusion-rrf": "rrf", "fusion-combsum": "combsum"}


def _fusion_rows(candidates: pd.DataFrame, splits, evaluator: "Evaluator") -> List[pd.DataFrame]:
    """Per split, the test rows of every unsupervised fusion of the base functions (:data:`FUSION_SYSTEMS`):
    one run over all queries (nothing is learned), evaluated on each split's test queries."""
    from pyterrier_svmmap.frames import candidates_from_frame
    from pyterrier_svmmap.experiments.fusion import FUSIONS
    if candidates is None or not len(candidates):
        return []
    cands = candidates_from_frame(candidates)
    all_qids = sorted({q for s in splits for q in (*s.train, *s.valid, *s.test)})
    rows: List[pd.DataFrame] = []
    for name, fusion in FUSION_SYSTEMS.items():
        run = pd.DataFrame({"qid": cands.frame["qid"].to_numpy(), "docno": cands.frame["docno"].to_numpy(),
                            "score": FUSIONS[fusion](cands.raw, cands.offsets)})
        pq = evaluator.per_query(run, all_qids)
        for split in splits:
            rows.append(pq.loc[list(split.test)].reset_index().assign(system=name, kind="unsupervised",
                                                                     trial=split.trial))
    return rows


def _base_rows(base_runs: Dict[str, pd.DataFrame], splits, evaluator: "Evaluator",
               chosen: Optional[Dict[int, str]]) -> List[pd.DataFrame]:
    """Per split, each base run's test rows and those of the base chosen on the split's training
    and validation queries (:func:`choose_bases`; ``chosen`` receives ``{trial: name}``)."""
    if not base_runs:
        return []
    all_qids = sorted({q for s in splits for q in (*s.train, *s.valid, *s.test)})
    base_pq = {name: evaluator.per_query(run, all_qids) for name, run in base_runs.items()}
    picks = choose_bases(base_pq, splits)
    if chosen is not None:
        chosen.update(picks)
    rows: List[pd.DataFrame] = []
    for split in splits:
        test = list(split.test)
        for name, pq in base_pq.items():
            rows.append(pq.loc[test].reset_index().assign(system=name, kind="base", trial=split.trial))
        rows.append(base_pq[picks[split.trial]].loc[test].reset_index().assign(
            system=CHOSEN_BASE, kind="chosen", trial=split.trial))
    return rows
