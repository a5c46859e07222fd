"""Checkpoints of the trials (:class:`TrialStore`): every (trial, learned system) result written to
``OUT/trials/<key>.pkl`` as soon as it is computed, keyed on everything that determines it, so that an
interrupted ``svmmap reproduce`` resumes where it stopped, with the same results.
"""
from __future__ import annotations

import logging
import pickle
import re
from pathlib import Path
from typing import Callable, Dict, Optional

import pandas as pd

from pyterrier_svmmap.experiments.reproduce.evaluation import MEASURES

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
