"""The named systems that ``svmmap reproduce --systems`` compares (:data:`SYSTEMS`): factories of fresh, unfitted
PyTerrier estimators. A name ``svmmap letor`` knows too is built from
:data:`pyterrier_svmmap.experiments.learner_configs.CONFIGS`, so that it means one configuration in both commands.

Each trial fits an estimator with ``fit(train_res, train_qrels, valid_res, valid_qrels)`` (``valid_*`` None with
``--valid 0``; the ``*_res`` frames have columns qid, query, docno and ``features``); it chooses its own
hyper-parameters on the validation queries, and ``transform(res)`` adds a ``score`` column. A factory that raises
``ImportError`` (an optional dependency is missing) makes ``reproduce`` skip that system with one message. Add a
system with :func:`register`::

    @register("my-system")
    def _my_system():
        from my_package import MyEstimator      # import inside: an ImportError skips the system
        return MyEstimator(...)
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, List, Sequence

from pyterrier_svmmap.experiments.learner_configs import C_GRID_SCALE, CONFIGS, PAPER_PARAMS  # noqa: F401

logger = logging.getLogger(__name__)

SYSTEMS: Dict[str, Callable[[], object]] = {}


def register(name: str, factory: Callable[[], object] = None):
    """Add ``factory`` to ``SYSTEMS`` under ``name`` (usable as a decorator)."""
    def deco(f):
        SYSTEMS[name] = f
        return f
    return deco(factory) if factory is not None else deco


def build(name: str):
    """A fresh estimator of the configuration ``name`` of :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS`:
    ``SVMMap()`` for the default, ``SVMMap`` (the MAP loss) or ``StructSVM`` with the C grid for a structural SVM,
    ``ApproxAP`` / ``ApproxNDCG`` with the configuration's grid and passes."""
    import pyterrier_svmmap as ps
    cfg = CONFIGS[name]
    params = dict(cfg.params)
    if cfg.learner == "svm-map-default":
        return ps.SVMMap(**params)
    if cfg.learner == "struct":
        if params.get("loss") == "map":
            params.pop("loss")
            return ps.SVMMap(C=list(cfg.c_grid()), **params)
        return ps.StructSVM(C=list(cfg.c_grid()), **params)
    if cfg.learner == "approx-ap":
        return ps.ApproxAP(**params)
    if cfg.learner == "approx-ndcg":
        return ps.ApproxNDCG(**params)
    raise ValueError(f"no estimator for learner {cfg.learner!r} ({name})")


def _built(name: str) -> Callable[[], object]:
    return lambda: build(name)


def _svm_map(paper_grid: bool = False, **params) -> Callable[[], object]:
    """A factory of ``SVMMap(**params)``, with ``DEFAULT_C_GRID`` (read when called) if ``paper_grid``."""
    def make():
        import pyterrier_svmmap as ps
        return ps.SVMMap(**(dict(C=list(ps.DEFAULT_C_GRID)) if paper_grid else {}), **params)
    return make


#: LightGBM's parameters in the comparison: one thread, as every other learner here trains on one (in the forked
#: trial workers LightGBM's OpenMP pool, limited by threadpoolctl only, stalled: fits of ~1 s took 30–70 s)
LIGHTGBM_PARAMS = {"n_jobs": 1}


def _lightgbm(cls: str) -> Callable[[], object]:
    def make():
        try:
            import lightgbm  # noqa: F401
        except ImportError as e:
            raise ImportError(f"needs LightGBM ({e}); pip install 'pyterrier-svmmap[peers]'") from e
        import pyterrier_svmmap as ps
        return getattr(ps, cls)(params=dict(LIGHTGBM_PARAMS))
    return make


#: the names of :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS` that reproduce runs, in the order of
#: its tables (svm-map-raw is registered with SVM-map's feature options)
SHARED_SYSTEMS = ["svm-map", "svm-map-paper", "svm-roc", "svm-ndcg@10", "svm-ndcg-nc", "svm-mrr@10", "svm-combo",
                  "dorm", "svm-acc", "svm-acc2", "svm-acc3", "svm-acc4", "approx-ap", "approx-ndcg"]
#: the structural SVMs of the papers' other losses (``--systems default``)
STRUCT_SYSTEMS = SHARED_SYSTEMS[2:12]
for _name in SHARED_SYSTEMS[:2]:
    register(_name, _built(_name))
# the default's ablations (docs/model-selection.md): no fallback test and no fold averaging, no averaging, a more
# lenient fallback test; SVM-map's feature options (docs/experiments.md): the raw scores as they are, the
# default's rule on the bins alone, thresholds over all training candidates, the prior towards the best function
register("svm-map-cv", _svm_map(fallback_alpha=None, average_folds=False))
register("svm-map-noavg", _svm_map(average_folds=False))
register("svm-map-alpha0.6", _svm_map(fallback_alpha=0.6))
register("svm-map-raw", _built("svm-map-raw"))
register("svm-map-bins", _svm_map(features="bins"))
register("svm-map-allbins", _svm_map(paper_grid=True, threshold_depth=None, **PAPER_PARAMS))
register("svm-map-prior", _svm_map(paper_grid=True, **{**PAPER_PARAMS, "prior": "best"}))
for _name in SHARED_SYSTEMS[2:]:
    register(_name, _built(_name))
register("lambdamart", _lightgbm("LambdaMART"))
register("mcrank", _lightgbm("McRank"))


@register("adarank")
def _adarank():
    from pyterrier_svmmap import AdaRank
    return AdaRank()


def resolve(names: Sequence[str]) -> Dict[str, Callable[[], object]]:
    """The factories of ``names`` that can be built; unknown names are an error. Systems whose optional
    dependency is missing are skipped with one warning per missing dependency, naming all the systems
    it skips (e.g. LambdaMART and McRank without LightGBM) and how to install it."""
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {', '.join(unknown)}; known: {', '.join(sorted(SYSTEMS))}")
    out = {}
    skipped: Dict[str, List[str]] = {}          # reason → systems
    for n in names:
        try:
            SYSTEMS[n]()
        except ImportError as e:
            skipped.setdefault(str(e), []).append(n)
            continue
        out[n] = SYSTEMS[n]
    for reason, systems in skipped.items():
        logger.warning("skipping system%s %s: %s", "s" if len(systems) > 1 else "", ", ".join(systems), reason)
    return out


#: ``--systems default``: the learners of the papers (Yue et al. Table 9, Chakrabarti et al. Figure 9,
#: Qin et al.) with the package's default beside the paper's SVM-map, and the boosted peers; ``all`` adds
#: SVM-map's feature options (svm-map-raw, ...) and the default's ablations (svm-map-cv, ...)
PAPER_SYSTEMS = ["svm-map", "svm-map-paper", *STRUCT_SYSTEMS, "approx-ap", "approx-ndcg", "lambdamart", "mcrank",
                 "adarank"]


def parse_names(spec: str) -> List[str]:
    """System names from ``--systems``: a comma-separated list, ``default`` (:data:`PAPER_SYSTEMS`)
    or ``all`` (every registered system)."""
    if spec.strip().lower() == "all":
        return list(SYSTEMS)
    if spec.strip().lower() == "default":
        return list(PAPER_SYSTEMS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise ValueError("--systems needs at least one name")
    return names
