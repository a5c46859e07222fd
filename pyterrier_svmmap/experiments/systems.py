"""The named systems that ``svmmap reproduce --systems`` compares (:data:`SYSTEMS`): PyTerrier estimators, each
built fresh by a factory. The names that ``svmmap letor`` knows too (:data:`SHARED_SYSTEMS` and
``svm-map-raw``) are built from the one table of configurations,
:data:`pyterrier_svmmap.experiments.learner_configs.CONFIGS`, from which letor builds its array-level fits
(:mod:`pyterrier_svmmap.experiments.letor_learners`): a name means one configuration in both commands.

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

from pyterrier_svmmap.experiments.learner_configs import (APPROX_AP_ALPHAS, APPROX_AP_BETAS,  # noqa: F401
                                                          APPROX_N_ITER, APPROX_NDCG_ALPHAS, C_GRID_SCALE, CONFIGS,
                                                          PAPER_PARAMS)

logger = logging.getLogger(__name__)

SYSTEMS: Dict[str, Callable[[], object]] = {}

#: ``svm-map`` is the package's default ``SVMMap()``; every other structural SVM of ``--systems default`` uses the
#: paper's configuration (:data:`~pyterrier_svmmap.experiments.learner_configs.PAPER_PARAMS`) and the same C
#: grid, so that they differ from ``svm-map-paper`` in the training loss only. The configurations of the names
#: that ``svmmap letor`` knows too are those of :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS`.


def register(name: str, factory: Callable[[], object] = None):
    """Add ``factory`` to ``SYSTEMS`` under ``name`` (usable as a decorator)."""
    def deco(f):
        SYSTEMS[name] = f
        return f
    return deco(factory) if factory is not None else deco


def build(name: str):
    """A fresh estimator of the configuration ``name`` of :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS`:
    ``SVMMap()`` for the default, ``SVMMap`` / ``StructSVM`` with the C grid for a structural SVM (``SVMMap``
    for the MAP loss), ``ApproxAP`` / ``ApproxNDCG`` with the configuration's grid and passes."""
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


#: the names of :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS` that reproduce runs, in the order of
#: its tables; svm-map-raw is registered below with SVM-map's feature options
SHARED_SYSTEMS = ["svm-map", "svm-map-paper", "svm-roc", "svm-ndcg@10", "svm-ndcg-nc", "svm-mrr@10", "svm-combo",
                  "dorm", "svm-acc", "svm-acc2", "svm-acc3", "svm-acc4", "approx-ap", "approx-ndcg"]
#: the structural SVMs of the papers' other losses (``--systems default``)
STRUCT_SYSTEMS = SHARED_SYSTEMS[2:12]
for _name in SHARED_SYSTEMS[:2]:
    register(_name, (lambda n: (lambda: build(n)))(_name))


# ablations of the default's model selection (docs/model-selection.md); outside --systems default
@register("svm-map-cv")
def _svm_map_cv():
    """The default's search without its fallback test and fold averaging: raw, prior, the extended grid, C by
    5-fold CV over training ∪ validation, refit on all, no fallback and no averaging."""
    from pyterrier_svmmap import SVMMap
    return SVMMap(fallback_alpha=None, average_folds=False)


@register("svm-map-noavg")
def _svm_map_noavg():
    """The default without averaging the fold models (the refit alone)."""
    from pyterrier_svmmap import SVMMap
    return SVMMap(average_folds=False)


@register("svm-map-alpha0.6")
def _svm_map_alpha06():
    """The default with a more lenient fallback test (fallback_alpha=0.6), an ablation of it."""
    from pyterrier_svmmap import SVMMap
    return SVMMap(fallback_alpha=0.6)


# SVM-map's feature / regularisation options (the ablations of docs/experiments.md)
register("svm-map-raw", lambda: build("svm-map-raw"))


@register("svm-map-bins")
def _svm_map_bins():
    """The default's rule on the threshold features alone: bins, C relative to their spread, the prior and the
    fallback (the first stage), chosen by cross-validation."""
    from pyterrier_svmmap import SVMMap
    return SVMMap(features="bins")


@register("svm-map-allbins")
def _svm_map_allbins():
    """The thresholds at quantiles of all training candidates (threshold_depth=None)."""
    from pyterrier_svmmap import DEFAULT_C_GRID, SVMMap
    return SVMMap(C=list(DEFAULT_C_GRID), threshold_depth=None, **PAPER_PARAMS)


@register("svm-map-prior")
def _svm_map_prior():
    from pyterrier_svmmap import DEFAULT_C_GRID, SVMMap
    return SVMMap(C=list(DEFAULT_C_GRID), **{**PAPER_PARAMS, "prior": "best"})


for _name in SHARED_SYSTEMS[2:]:
    register(_name, (lambda n: (lambda: build(n)))(_name))


def _require_lightgbm():
    try:
        import lightgbm  # noqa: F401
    except ImportError as e:
        raise ImportError(f"needs LightGBM ({e}); pip install 'pyterrier-svmmap[peers]'") from e


#: LightGBM's parameters in the comparison: one thread, as every other learner here trains on one. Set
#: explicitly because in the forked trial workers LightGBM's OpenMP pool, limited by threadpoolctl only,
#: stalled: LambdaMART fits of ~1 s took 30–70 s in 15 of the 100 LightGBM fits of the default run
LIGHTGBM_PARAMS = {"n_jobs": 1}


@register("lambdamart")
def _lambdamart():
    _require_lightgbm()
    from pyterrier_svmmap import LambdaMART
    return LambdaMART(params=dict(LIGHTGBM_PARAMS))


@register("mcrank")
def _mcrank():
    _require_lightgbm()
    from pyterrier_svmmap import McRank
    return McRank(params=dict(LIGHTGBM_PARAMS))


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
