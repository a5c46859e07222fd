"""The one registry of named systems: the learned systems that ``svmmap reproduce --systems`` compares
(:data:`SYSTEMS`, PyTerrier estimators) and the learners of the LETOR protocol, ``svmmap letor``
(:data:`LEARNERS`, array-level fits with their grids).

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
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.measures import letor_mean_average_precision
from pyterrier_svmmap.selection import DEFAULT_C_GRID, select

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
#: averages, so λ² ≈ 10⁶–10⁸; φ_dorm sums A(r) over the top-20 window, λ ≈ 10 or more. Measured on
#: Vaswani's first split, C·10⁻⁴ and C·10⁻³ for svm-mrr@10 took 44 s and minutes per fit without a
#: better model (README, "C grids per loss"), so its grid starts lower still.
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
    """The default with a more lenient fallback test (fallback_alpha=0.6): measured beside it."""
    from pyterrier_svmmap import SVMMap
    return SVMMap(fallback_alpha=0.6)


# SVM-map's feature / regularisation options, measured side by side (README, "Feature options")
@register("svm-map-raw")
def _svm_map_raw():
    from pyterrier_svmmap import DEFAULT_C_GRID, SVMMap
    return SVMMap(C=list(DEFAULT_C_GRID), **{**PAPER_PARAMS, "features": "raw"})


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


# =================================================================================================
# the LETOR protocol's learners (``svmmap letor``, :mod:`pyterrier_svmmap.experiments.letor`): array-level
# fits on a fold's train / vali splits (``raw``, ``labels``, ``offsets``, ``docnos``, ``binary(rel)``), each
# with a small grid chosen by validation MAP
# =================================================================================================
#: the grid of C of every structural SVM (OP 1's constant, SVMstruct's C/n convention)
SVM_C_GRID = DEFAULT_C_GRID
#: the cutting-plane tolerance of the SVMs
SVM_EPSILON = 1e-3
#: thresholds per feature of the binned SVM-map (the paper's φ)
N_BINS = 50


class LetorSplit(Protocol):
    """What the learners read of one LETOR file (:class:`pyterrier_svmmap.experiments.letor.Split`)."""
    raw: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    docnos: np.ndarray

    def binary(self, rel: float) -> np.ndarray:
        ...


# -------------------------------------------------------------------------------------------------
@dataclass
class Fitted:
    """A learner trained with model selection: ``scores(split)`` (test scores as evaluated), the ``chosen``
    setting, and every setting tried with its validation MAP (``selection``)."""
    scores: Callable[[LetorSplit], np.ndarray]
    chosen: dict
    selection: List[dict]


@dataclass(frozen=True)
class Learner:
    """A learner of the protocol: ``fit(train, vali, rel, grid)`` → :class:`Fitted` with ``grid`` (the
    settings searched, :attr:`grid` by default). ``graded``: trains on the graded labels (else on
    ``label >= rel``); ``ties``: ``"package"`` (``ranking_scores``) or ``"file order"``."""
    name: str
    description: str
    grid: Tuple[dict, ...]
    fit: Callable[..., Fitted]
    graded: bool = False
    ties: str = "file order"
    lightgbm: bool = False


def grid_search(settings: Sequence[dict], fit_one: Callable[[dict], object],
                score: Callable[[object, LetorSplit], np.ndarray], vali: LetorSplit, rel: float,
                notes: Optional[Callable[[object], dict]] = None) -> Fitted:
    """Fit every setting, keep the first with the highest validation MAP (``label >= rel``, all queries)."""
    models, selection = [], []
    for setting in settings:
        model = fit_one(setting)
        v = letor_mean_average_precision(score(model, vali), vali.labels, vali.offsets, rel)
        models.append(model)
        selection.append(dict(setting, validation=v, **(notes(model) if notes else {})))
        logger.debug("%s: validation MAP %.4f", setting, v)
    best = select([s["validation"] for s in selection], "validation").chosen
    model = models[best]
    return Fitted(lambda split: score(model, split), dict(selection[best]), selection)


def _letor_svm(loss: str, features: str, **params) -> Callable[..., Fitted]:
    """StructSVMRanker over a C grid (one warm-started path), C (and for ``auto`` the features) chosen by
    validation MAP inside the ranker, test scores by ``ranking_scores`` (the package's tie policy); ``params``:
    more of the ranker's parameters."""
    def fit(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.features.layout import default_base_names
        from pyterrier_svmmap.svm.ranker import StructSVMRanker
        r = StructSVMRanker(C=[g["C"] for g in grid], loss=loss, features=features, n_bins=N_BINS,
                            epsilon=SVM_EPSILON, **params)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="skipping .* training queries")   # LETOR: many such queries
            r.fit(train.raw, train.binary(rel), train.offsets,
                  valid=(vali.raw, vali.binary(rel), vali.offsets, None, vali.docnos),
                  base_names=default_base_names(train.raw.shape[1], start=1))
        selection = [dict(C=p["C"], validation=p["validation"], n_iter=p["n_iter"], converged=p["converged"],
                          **({"features": p["features"]} if features == "auto" else {})) for p in r.path_]
        chosen = dict(C=r.C_, **({"features": r.features_} if features == "auto" else {}))
        chosen["validation"] = max(p["validation"] for p in selection)
        return Fitted(lambda s: r.ranking_scores(s.raw, s.offsets, s.docnos), chosen, selection)
    return fit


def _letor_svm_default(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
    """The package's default ``SVMMap()`` (:func:`pyterrier_svmmap.selection.select_auto`): features free of
    their units, the raw block, the bins and both, each with its C grid relative to φ's spread, prior="best",
    chosen (or the best single feature kept) by 5-fold CV over train ∪ vali, the fold models and the refit
    averaged. ``vali`` is evidence like the training queries, not a held-out choice; ``grid`` is not used
    (the default searches its own)."""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.features.layout import default_base_names
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: v for k, v in SVMMap().get_params().items() if k in StructSVMRanker.MODEL_PARAMS}
    r = StructSVMRanker(**dict(params, rel=1.0))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skipping .* training queries")
        r.fit(train.raw, train.binary(rel), train.offsets,
              valid=(vali.raw, vali.binary(rel), vali.offsets, None, vali.docnos),
              base_names=default_base_names(train.raw.shape[1], start=1))
    selection = [dict(C=p["C"], validation=p["validation"], features=p["features"],
                      **({"fallback": True} if p.get("fallback") else {})) for p in r.path_]
    choice = getattr(r, "choice_", None)             # None: a single C, trained as given
    chosen = dict(C=r.C_, features=r.features_) if choice is None else dict(
        C=r.C_, features=r.features_, validation=choice["chosen"]["validation"], fallback=choice["fallback"],
        p_value=choice["p_value"])
    return Fitted(lambda s: r.ranking_scores(s.raw, s.offsets, s.docnos), chosen, selection)


def _letor_approx(measure: str, n_iter: int) -> Callable[..., Fitted]:
    """ApproxRanker (``measure`` "ap" or "ndcg") on per-query min–max features (the estimators' default
    layout), one fit per (α, β) of the grid: the iteration chosen by the learner's validation measure, the
    grid point by validation MAP. ApproxAP trains on ``label >= rel``, ApproxNDCG on the grades."""
    def fit(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.approx.ranker import ApproxRanker
        from pyterrier_svmmap.features.layout import FeatureLayout
        layout = FeatureLayout.fit(train.raw, train.offsets, "minmax")
        y = train.binary(rel) if measure == "ap" else train.labels
        yv = vali.binary(rel) if measure == "ap" else vali.labels
        Xt, Xv = layout.transform(train.raw, train.offsets), layout.transform(vali.raw, vali.offsets)

        def fit_one(g):
            return ApproxRanker(measure=measure, alphas=[g["alpha"]], betas=[g["beta"]] if "beta" in g else None,
                                n_iter=n_iter, track_error=False).fit(
                Xt, y, train.offsets, X_valid=Xv, labels_valid=yv, offsets_valid=vali.offsets)
        return grid_search(grid, fit_one, lambda m, s: m.decision_function(layout.transform(s.raw, s.offsets)),
                           vali, rel, notes=lambda m: dict(iteration=int(m.best_iteration_)))
    return fit


def _letor_adarank(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
    """AdaRank (AdaRank.MAP / AdaRank.NDCG@10) on ``label >= rel``; its round chosen by its own validation
    measure, the variant by validation MAP."""
    from pyterrier_svmmap.boosting.adarank import AdaRankRanker

    def fit_one(g):
        return AdaRankRanker(**g).fit(train.raw, train.binary(rel), train.offsets,
                                      vali.raw, vali.binary(rel), vali.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), vali, rel,
                       notes=lambda m: dict(rounds=int(m.best_round_)))


def _lightgbm_params(threads: int) -> dict:
    return dict(n_jobs=threads, deterministic=True, force_row_wise=True)


def _letor_lambdamart(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict], threads: int = 1) -> Fitted:
    """LambdaMART (LightGBM lambdarank) on the grades, up to 1000 trees with early stopping (50 rounds) on
    LightGBM's validation MAP over the whole list; the grid point by validation MAP (``rel``)."""
    from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker

    def fit_one(g):
        return LambdaMARTRanker(n_estimators=1000, metric="map", eval_at=1000, early_stopping_rounds=50,
                                params=_lightgbm_params(threads), **g).fit(
            train.raw, train.labels, train.offsets, vali.raw, vali.labels, vali.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), vali, rel,
                       notes=lambda m: dict(trees=int(m.best_iteration_)))


def _letor_mcrank(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict], threads: int = 1) -> Fitted:
    """McRank (a boosted multiclass model over the grades, score = expected grade); grid by validation MAP."""
    from pyterrier_svmmap.boosting.mcrank import McRankRanker

    def fit_one(g):
        return McRankRanker(params=_lightgbm_params(threads), **g).fit(train.raw, train.labels, train.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), vali, rel)


_C = tuple({"C": c} for c in SVM_C_GRID)

#: every learner of the protocol by name, with its grid (the settings compared by validation MAP)
LEARNERS: Dict[str, Learner] = {
    "svm-map": Learner("svm-map", "the package's default SVMMap(): raw, bins or both, C relative to the features' "
                       "spread, prior, or the best feature, by 5-fold CV over train+vali, fold models averaged",
                       ({"C": "auto", "features": "auto"},), _letor_svm_default, ties="package"),
    "svm-map-raw": Learner("svm-map-raw", "SVM-map, raw features as they are, C on vali (svm_map_learn's linear model)",
                           _C, _letor_svm("map", "raw", normalise=None), ties="package"),
    "svm-map-paper": Learner("svm-map-paper", f"SVM-map, {N_BINS} quantile bins per feature, C on vali (the paper's)",
                             _C, _letor_svm("map", "bins"), ties="package"),
    "svm-map-auto": Learner("svm-map-auto", "SVM-map, features bins / raw / bins+raw (×3 grid) chosen with C", _C,
                            _letor_svm("map", "auto"), ties="package"),
    "svm-roc": Learner("svm-roc", "structural SVM for ROC area (≈ RankSVM), raw features", _C,
                       _letor_svm("roc", "raw"), ties="package"),
    "svm-ndcg@10": Learner("svm-ndcg@10", "structural SVM for NDCG@10 (binary gains), raw features", _C,
                           _letor_svm("ndcg@10", "raw"), ties="package"),
    "svm-acc2": Learner("svm-acc2", "structural SVM for balanced accuracy (classification), raw features", _C,
                        _letor_svm("acc2", "raw"), ties="package"),
    "approx-ap": Learner("approx-ap", "ApproxAP (Qin et al. 2010), linear on min-max features, 100 passes, η=0.01",
                         tuple({"alpha": a, "beta": b} for a in (10.0, 100.0) for b in (1.0, 10.0)),
                         _letor_approx("ap", 100)),
    "approx-ndcg": Learner("approx-ndcg", "ApproxNDCG (Qin et al. 2010), as approx-ap, gains 2^label − 1",
                           tuple({"alpha": a} for a in (10.0, 50.0, 100.0)), _letor_approx("ndcg", 100), graded=True),
    "adarank": Learner("adarank", "AdaRank (Xu & Li 2007), weak rankers = features, ≤ 100 rounds",
                       ({"measure": "ap"}, {"measure": "ndcg", "k": 10}), _letor_adarank),
    "lambdamart": Learner("lambdamart", "LambdaMART (LightGBM lambdarank), ≤ 1000 trees, early stopping on vali",
                          tuple({"num_leaves": nl, "learning_rate": lr} for nl in (7, 31) for lr in (0.05, 0.1)),
                          _letor_lambdamart, graded=True, lightgbm=True),
    "mcrank": Learner("mcrank", "McRank (LightGBM multiclass over the grades, expected grade)",
                      tuple({"num_leaves": nl, "n_estimators": n} for nl in (7, 31) for n in (30, 100)),
                      _letor_mcrank, graded=True, lightgbm=True),
}


def learner_names(spec: Optional[Union[str, Sequence[str]]]) -> List[str]:
    """Learner names from ``"a,b"`` or a list (None or "all": every learner), checked: a ValueError names an
    unknown one and the choices."""
    if spec is None or spec == "all":
        return list(LEARNERS)
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if not names:
        raise ValueError("no learner given")
    for n in names:
        if n not in LEARNERS:
            raise ValueError(f"unknown learner {n!r}; choose from {', '.join(LEARNERS)} (or all)")
    if len(set(names)) != len(names):
        raise ValueError(f"a learner is listed twice in {','.join(names)}")
    return names


def fit_learner(name: str, train: LetorSplit, vali: LetorSplit, rel: float = 1, grid: Optional[Sequence[dict]] = None,
                threads: int = 1) -> Fitted:
    """Train learner ``name`` on ``train`` with model selection on ``vali`` (its grid, or ``grid``)."""
    learner = LEARNERS[name]
    kwargs = {"threads": threads} if learner.lightgbm else {}
    return learner.fit(train, vali, rel, tuple(grid if grid is not None else learner.grid), **kwargs)
