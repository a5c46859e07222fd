"""One trial: every learned system fitted on the split's training (and validation) queries and ranking its test
queries' candidates; the rows of the base functions, of the base chosen per split on its training and validation
queries (:func:`choose_bases`, kind "chosen") and of the unsupervised fusions (kind "unsupervised").

Checkpoints of the trials (:class:`TrialStore`): every (trial, learned system) result written to
``OUT/trials/<key>.pkl`` as soon as it is computed, keyed on everything that determines it, so that an
interrupted ``svmmap reproduce`` resumes where it stopped, with the same results.
"""
from __future__ import annotations

import logging
import pickle
import re
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from pyterrier_svmmap.string_codes import sorted_string_codes
from pyterrier_svmmap.experiments.reproduce.evaluation import MEASURES, Evaluator, cut_depth

logger = logging.getLogger(__name__)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def estimator_signature(est: object) -> str:
    """What identifies an unfitted estimator: its class, ``repr`` and public attributes (``repr`` alone omits
    some), memory addresses removed so that the signature is the same in every process."""
    params = {k: v for k, v in sorted(vars(est).items()) if not k.startswith("_") and not k.endswith("_")} \
        if hasattr(est, "__dict__") else {}
    cls = type(est)
    return _ADDRESS.sub("", f"{cls.__module__}.{cls.__qualname__}|{est!r}|{params!r}")


class TrialStore:
    """Checkpoints of (trial, system) results under ``directory``: each keyed on ``context`` (what all trials
    share: collection content, base runs, depth), the split, the system's name and estimator
    (:func:`estimator_signature`), the measures and the package version; with the per-query measures, the fit
    seconds and, for the first trial, the model."""

    def __init__(self, directory: Path, context: str):
        self.directory, self.context = Path(directory), context

    def key(self, split, name: str, est: object) -> str:
        from pyterrier_svmmap._version import __version__
        from pyterrier_svmmap.experiments.reproduce.base_runs import digest
        return digest("trial", self.context, split.trial, list(split.train), list(split.valid),
                      list(split.test), name, estimator_signature(est), __version__, sorted(MEASURES))

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def load(self, key: str) -> Optional[dict]:
        """The checkpoint of ``key``, or None when absent, unreadable (warned) or malformed."""
        from pyterrier_svmmap.experiments.reproduce.base_runs import read_keyed
        obj = read_keyed(self.path(key), key)
        if obj is None:
            return None
        pq = obj.get("per_query")
        if not isinstance(pq, pd.DataFrame) or list(pq.columns) != list(MEASURES):
            logger.warning("checkpoint %s is malformed: recomputing it", self.path(key))
            return None
        return obj

    def save(self, key: str, per_query: pd.DataFrame, seconds: float, model: object = None) -> None:
        """Write one result atomically; the model only if it can be pickled (else it is left out)."""
        from pyterrier_svmmap.experiments.reproduce.base_runs import write_pickle
        if model is not None:
            try:
                pickle.dumps(model)
            except Exception as e:                       # pragma: no cover - depends on the estimator
                logger.debug("model not checkpointed (%s)", e)
                model = None
        write_pickle(self.path(key), {"key": key, "per_query": per_query, "fit_seconds": float(seconds),
                                      "model": model})

    def remove_temporaries(self) -> int:
        """Delete the temporary files of writes that never finished (before the trials start)."""
        stale = list(self.directory.glob(".*.tmp")) if self.directory.is_dir() else []
        for f in stale:
            f.unlink(missing_ok=True)
        return len(stale)

    def finished(self, splits, systems: Dict[str, Callable]) -> int:
        """How many of ``splits`` have a checkpoint for every system of ``systems``."""
        if not systems:
            return 0
        return sum(all(self.path(self.key(s, n, f())).exists() for n, f in systems.items()) for s in splits)


def _subset(frame: pd.DataFrame, groups: Dict[str, np.ndarray], qids: Sequence[str]) -> pd.DataFrame:
    rows = [groups[q] for q in qids if q in groups]
    return frame.iloc[np.concatenate(rows)] if rows else frame.iloc[:0]


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
        results, todo = self.checkpointed(split, keep_models)
        results.update(self.compute(split, todo, keep_models, on_result=self.save))
        return self.assemble(split, results, keep_models)

    def checkpointed(self, split, keep_models: bool) -> Tuple[Dict[str, tuple], List[str]]:
        """``{name: (per_query, fit_seconds, model or None)}`` of the systems checkpointed for ``split``, and
        the names of the others."""
        found: Dict[str, tuple] = {}
        for name in self.systems:
            done = None if self.store is None else self.store.load(self.store.key(split, name, self.systems[name]()))
            if done is not None:
                logger.debug("trial %d %s: reused the checkpoint", split.trial, name)
                found[name] = done["per_query"], done["fit_seconds"], done.get("model") if keep_models else None
        return found, [name for name in self.systems if name not in found]

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
        """Fit ``est`` on the split's training (and validation) queries: its per-query test measures and the fit's
        seconds. An estimator with an array-level path takes it (:meth:`_fit_and_test_candidates`)."""
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
        """:meth:`_fit_and_test` through ``fit_candidates`` and ``score_candidates``, the split's frames converted
        once per ``rel`` and shared in ``converted``: the same measures as ``fit`` and ``transform`` (a query's
        scores are distinct, so the cut at ``depth`` is :func:`cut_depth`'s)."""
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
    """Per split (by ``trial``): the base function with the highest MAP over the split's training and
    validation queries (the first of equal ones): what a user without a learner can choose."""
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


#: the unsupervised rows: name → fusion of :data:`pyterrier_svmmap.experiments.fusion.FUSIONS`
FUSION_SYSTEMS = {"fusion-rrf": "rrf", "fusion-combsum": "combsum"}


def _fusion_rows(candidates: pd.DataFrame, splits, evaluator: "Evaluator") -> List[pd.DataFrame]:
    """Per split, the test rows of every fusion of :data:`FUSION_SYSTEMS` (one run over all queries)."""
    from pyterrier_svmmap.frames import candidates_from_frame
    from pyterrier_svmmap.experiments.fusion import FUSIONS
    if candidates is None or not len(candidates):
        return []
    cands = candidates_from_frame(candidates)
    rows: List[pd.DataFrame] = []
    for name, fusion in FUSION_SYSTEMS.items():
        run = pd.DataFrame({"qid": cands.frame["qid"].to_numpy(), "docno": cands.frame["docno"].to_numpy(),
                            "score": FUSIONS[fusion](cands.raw, cands.offsets)})
        pq = evaluator.per_query(run, _all_qids(splits))
        for split in splits:
            rows.append(pq.loc[list(split.test)].reset_index().assign(system=name, kind="unsupervised",
                                                                     trial=split.trial))
    return rows


def _base_rows(base_runs: Dict[str, pd.DataFrame], splits, evaluator: "Evaluator",
               chosen: Optional[Dict[int, str]]) -> List[pd.DataFrame]:
    """Per split, each base run's test rows and those of the base chosen on the split's training and validation
    queries (:func:`choose_bases`; ``chosen`` receives ``{trial: name}``)."""
    if not base_runs:
        return []
    qids = _all_qids(splits)
    base_pq = {name: evaluator.per_query(run, qids) for name, run in base_runs.items()}
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


def _all_qids(splits) -> List[str]:
    return sorted({q for s in splits for q in (*s.train, *s.valid, *s.test)})
