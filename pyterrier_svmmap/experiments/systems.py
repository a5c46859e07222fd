"""The named systems that ``svmmap reproduce --systems`` compares (:data:`SYSTEMS`): PyTerrier estimators, each
built fresh by a factory. The LETOR protocol's learners (``svmmap letor``) are in
:mod:`pyterrier_svmmap.experiments.letor_learners`; both use the same names for the same configurations
(``svm-map`` is the package's default ``SVMMap()`` in both, ``svm-map-paper`` the paper's bins, ``svm-map-raw``
the raw features).

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

#: ``svm-map`` is the package's default ``SVMMap()`` (model selection by
#: :func:`pyterrier_svmmap.selection.select_auto`); every other structural SVM below uses the paper's
#: configuration (:data:`PAPER_PARAMS`: φ of |K_f| = 50 bins, no prior, C chosen on the validation queries)
#: and the same C grid, :data:`pyterrier_svmmap.DEFAULT_C_GRID` ("a wide range of C values", §5), so that
#: they differ from ``svm-map-paper`` in the training loss only; the exceptions are the
#: paper's SVM_acc3 / SVM_acc4 baselines, which are defined by their binning, and the grid's scale for
#: losses whose Ψ lives on another scale (:data:`C_GRID_SCALE`).

#: The Approx learners' search in this registry (documented reduction, see :func:`_approx_ap`): the
#: estimators' defaults search Qin et al.'s grid (20 (α, β) settings for ApproxAP, 8 α for ApproxNDCG)
#: with T = 200 passes each; here a few settings around the grid's middle and fewer passes.
APPROX_AP_ALPHAS = (20.0, 100.0)
APPROX_AP_BETAS = (10.0, 50.0)
APPROX_NDCG_ALPHAS = (20.0, 100.0)
APPROX_N_ITER = 50

def register(name: str, factory: Callable[[], object] = None):
    """Add ``factory`` to ``SYSTEMS`` under ``name`` (usable as a decorator)."""
    def deco(f):
        SYSTEMS[name] = f
        return f
    return deco(factory) if factory is not None else deco


#: Multipliers of that grid for the losses whose joint feature map is on another scale. Scaling Ψ by λ
#: is the same problem as scaling C by λ² (substitute u = λw in OP 1), so a loss whose constraints are
#: λ times longer needs a grid λ² lower to cover the same range of regularisation. φ_mrr is
#: unnormalised (Chakrabarti et al. Eq. 5): a constraint sums up to |N| ≈ 10³ candidates where φ_po
#: averages, so λ² ≈ 10⁶–10⁸; φ_dorm sums A(r) over the top-20 window, λ ≈ 10 or more. svm-mrr@10's grid
#: starts lower still: its higher C cost the most per fit without a better model (docs/experiments.md).
C_GRID_SCALE = {"mrr": 1e-8, "dorm": 1e-4}


#: Yue et al.'s configuration (§4.2, §5): |K_f| = 50 quantile bins, regularisation towards w = 0, C chosen
#: by validation MAP on the paper's grid. ``svm-map-paper`` and the other losses' rows use it, so that the
#: loss comparison (Table 9, Figure 9) stays the papers'; ``svm-map`` is the package's default SVMMap().
PAPER_PARAMS = dict(features="bins", n_bins=50, prior=None, selection="validation")


def _struct(c_scale: float = 1.0, **params):
    from pyterrier_svmmap import DEFAULT_C_GRID, StructSVM
    return StructSVM(C=[c * c_scale for c in DEFAULT_C_GRID], **{**PAPER_PARAMS, **params})


@register("svm-map")
def _svm_map():
    """The package's default SVMMap() (model selection by :func:`pyterrier_svmmap.selection.select_auto`)."""
    from pyterrier_svmmap import SVMMap
    return SVMMap()


@register("svm-map-paper")
def _svm_map_paper():
    """Yue et al. §4.2: bins |K_f| = 50, no prior, C on the validation queries (the paper's grid)."""
    from pyterrier_svmmap import DEFAULT_C_GRID, SVMMap
    return SVMMap(C=list(DEFAULT_C_GRID), **PAPER_PARAMS)


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
@register("svm-map-raw")
def _svm_map_raw():
    """The base scores as they are, a weight each, C on the validation queries: svm_map_learn's linear model
    (``svmmap letor``'s svm-map-raw)."""
    from pyterrier_svmmap import DEFAULT_C_GRID, SVMMap
    return SVMMap(C=list(DEFAULT_C_GRID), **{**PAPER_PARAMS, "features": "raw", "normalise": None})


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


#: name → StructSVM parameters besides C (the loss, and binning for the paper's acc3 / acc4)
STRUCT_SYSTEMS = {
    "svm-roc": dict(loss="roc"),
    "svm-ndcg@10": dict(loss="ndcg@10"),
    "svm-ndcg-nc": dict(loss="ndcg"),                       # NDCG without cutoff
    "svm-mrr@10": dict(loss="mrr@10", c_scale=C_GRID_SCALE["mrr"]),
    # SVM-COMBO, separate slacks; the MRR member's C is scaled as svm-mrr@10's grid (C_weights)
    "svm-combo": dict(loss="combo", loss_params=dict(losses=["map", "ndcg@10", "mrr@10"], slack="separate",
                                                     C_weights=[1.0, 1.0, C_GRID_SCALE["mrr"]])),
    # DORM (Le & Smola 2007 as in Chakrabarti et al. 2008): 1 − NDCG@10 with the decay truncated to the
    # top 20 ranks, so each argmax is a ≤ 40 × 20 assignment problem per query
    "dorm": dict(loss="dorm", loss_params=dict(k=10, window=20), c_scale=C_GRID_SCALE["dorm"]),
    "svm-acc": dict(loss="acc"),                            # Yue et al. §5.2 classification baselines
    "svm-acc2": dict(loss="acc2"),
    "svm-acc3": dict(loss="acc", binning="percentile"),
    "svm-acc4": dict(loss="acc", binning="minmax"),
}
for _name, _params in STRUCT_SYSTEMS.items():
    register(_name, (lambda p: (lambda: _struct(**p)))(_params))


@register("approx-ap")
def _approx_ap():
    """ApproxAP with a reduced search: 2 α × 2 β (of the paper's 4 × 5), T = 50 (of 200); the iteration
    and the setting are still chosen by validation MAP. The estimator's own default is the full grid."""
    from pyterrier_svmmap import ApproxAP
    return ApproxAP(alphas=APPROX_AP_ALPHAS, betas=APPROX_AP_BETAS, n_iter=APPROX_N_ITER)


@register("approx-ndcg")
def _approx_ndcg():
    """ApproxNDCG with a reduced search: 2 α (of the paper's 8), T = 50 (of 200)."""
    from pyterrier_svmmap import ApproxNDCG
    return ApproxNDCG(alphas=APPROX_NDCG_ALPHAS, n_iter=APPROX_N_ITER)


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
