"""Compiling the numba kernels before the trials, in two workers at once (:func:`_warm_up`)."""
from __future__ import annotations

import copy
import dataclasses
import logging
import time
import warnings
from typing import Callable

import numpy as np

import pyterrier_svmmap.experiments.reproduce.workers as workers

logger = logging.getLogger(__name__)


#: queries per role of the warm-up's tiny split (see :func:`_warm_up`)
_WARM_UP_QUERIES = (3, 2, 2)


def _smallest_c(factory: Callable[[], object]) -> Callable[[], object]:
    """``factory`` whose estimator keeps only the two smallest values of its C grid (if it has one), for
    the warm-up: the kernels are the same at every C (two keep the choice on the validation queries),
    while the large C take most cutting-plane iterations."""
    def make():
        est = factory()
        grid = getattr(est, "C", None)
        if np.ndim(grid) == 1 and len(grid) > 2:
            est.C = sorted(grid)[:2]
        return est
    return make


def _warm_up(part: int, split) -> float:
    """Compile the numba kernels in two workers at once, before the trials: part 0 the dual QP and the
    working set's compaction (~23 s cold), part 1 every other kernel (~30 s), by fitting every system on
    a tiny split (a few of ``split``'s queries, the two smallest C of its grid: :func:`_smallest_c`); other
    parts do nothing. The tiny fits need the QP too: part 1 loads it from numba's cache when part 0 has
    written it by then, or compiles it as well. Each kernel is then compiled once and cached on disk, and
    the trials load it (without this, every worker compiled them all in its first trial: ~70 s).
    Kernels already cached just load; nothing here is kept or checkpointed, and a failure only logs (the
    trial that needs the system reports it). Returns the seconds it took."""
    from pyterrier_svmmap.svm.qp import compiled, solve_dual
    t = time.perf_counter()
    package_log = logging.getLogger("pyterrier_svmmap")
    level = package_log.level
    try:
        with workers._thread_limit(workers._WORKER_THREADS):
            if part == 0:                                                # the QP and the working set's compaction
                solve_dual(np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([1.0, 0.5]), np.zeros(2, dtype=np.int64),
                           np.array([1.0]), np.zeros(2))
                compiled().compact_working_set(np.eye(2), np.eye(2), np.array([1]))
            elif part == 1:
                train, valid, test = _WARM_UP_QUERIES
                tiny = dataclasses.replace(split, train=tuple(split.train)[:train],
                                           valid=tuple(split.valid)[:valid], test=tuple(split.test)[:test])
                package_log.setLevel(logging.WARNING)                # the tiny fits' INFO lines are noise
                trials = copy.copy(workers._WORKER_TRIALS)
                trials.systems = {name: _smallest_c(factory) for name, factory in trials.systems.items()}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for name in trials.systems:
                        try:
                            trials.compute(tiny, [name], keep_models=False)
                        except Exception as e:                       # noqa: BLE001 (a warm-up only)
                            logger.debug("warm-up of %s failed (its trials will report it): %r", name, e)
    except Exception as e:                                           # noqa: BLE001 (a warm-up only)
        logger.debug("kernel warm-up part %d failed (the trials compile what they need): %r", part, e)
    finally:
        package_log.setLevel(level)
    return time.perf_counter() - t
