"""Registry of the learned systems that ``svmmap reproduce --systems`` can compare.

``SYSTEMS`` maps a name to a factory returning a fresh, unfitted ``pt.Estimator``. The estimator is
fitted once per trial with ``fit(train_res, train_qrels, valid_res, valid_qrels)`` (``valid_*`` are
``None`` when ``--valid 0``), where the ``*_res`` frames have columns qid, query, docno and
``features`` (one value per base function, NaN where missing); it must choose its own
hyper-parameters on the validation queries, and its ``transform(res)`` must add a ``score`` column.

A factory that raises ``ImportError`` (an optional dependency is missing) makes ``reproduce`` skip
that system with one message saying why. Add a system with :func:`register`::

    @register("my-system")
    def _my_system():
        from my_package import MyEstimator      # import inside: an ImportError skips the system
        return MyEstimator(...)
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, List, Sequence

logger = logging.getLogger(__name__)

SYSTEMS: Dict[str, Callable[[], object]] = {}

#: the regularisation constants tried on the validation queries ("a wide range of C values", §5).
#: Capped at 10 for run time: on Vaswani (10 training queries, ~1900 candidates each, 16 functions ×
#: 50 bins, ε = 1e-3) one fit took 0.1 s at C=0.01, 0.8 s at C=1, 5.7 s at C=10, 28 s at C=100 and
#: over 2 minutes at C=1000, the cutting-plane iterations growing with C.
C_GRID = [1e-2, 1e-1, 1.0, 10.0]


def register(name: str, factory: Callable[[], object] = None):
    """Add ``factory`` to ``SYSTEMS`` under ``name`` (usable as a decorator)."""
    def deco(f):
        SYSTEMS[name] = f
        return f
    return deco(factory) if factory is not None else deco


@register("svm-map")
def _svm_map():
    from pyterrier_svmmap import SVMMap          # the lead's estimator
    return SVMMap(C=list(C_GRID), n_bins=50, features="bins")


def resolve(names: Sequence[str]) -> Dict[str, Callable[[], object]]:
    """The factories of ``names`` that can be built; unknown names are an error, systems whose
    optional dependency is missing are skipped with one warning each."""
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {', '.join(unknown)}; known: {', '.join(sorted(SYSTEMS))}")
    out = {}
    for n in names:
        try:
            SYSTEMS[n]()
        except ImportError as e:
            logger.warning("skipping system %s: %s", n, e)
            continue
        out[n] = SYSTEMS[n]
    return out


def parse_names(spec: str) -> List[str]:
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise ValueError("--systems needs at least one name")
    return names
