"""The learners of the LETOR protocol (``svmmap letor``, :mod:`pyterrier_svmmap.experiments.letor`): array-level
fits on a fold's train / vali splits (``raw``, ``labels``, ``offsets``, ``docnos``, ``binary(rel)``), each with a
small documented grid chosen by validation MAP (:data:`LEARNERS`). The structural SVMs and the Approx learners
are built from the one table of configurations, :data:`pyterrier_svmmap.experiments.learner_configs.CONFIGS`,
from which ``svmmap reproduce`` builds its estimators too: a name means one configuration in both commands. The
boosted peers search a grid here (``lambdamart-grid``, ``mcrank-grid``), not the estimators' defaults that
reproduce runs (``lambdamart``, ``mcrank``), hence their names; so does AdaRank (``adarank-grid``: AdaRank.MAP
or AdaRank.NDCG@10 by validation MAP, where reproduce's ``adarank`` is AdaRank.MAP).
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.experiments.learner_configs import CONFIGS
from pyterrier_svmmap.measures import letor_mean_average_precision
from pyterrier_svmmap.selection import DEFAULT_C_GRID, select

logger = logging.getLogger(__name__)

#: the grid of C of every structural SVM (OP 1's constant, SVMstruct's C/n convention)
SVM_C_GRID = DEFAULT_C_GRID
#: the cutting-plane tolerance of the SVMs
SVM_EPSILON = 1e-3


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
    #: ``make(grid)``: the unfitted model(s) ``fit`` trains (a ``StructSVMRanker``; for the Approx learners the
    #: feature layout and one ``ApproxRanker`` per grid point), for the learners of
    #: :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS`
    make: Optional[Callable[[Sequence[dict]], object]] = None


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


def _svm_ranker(params: dict) -> Callable[[Sequence[dict]], object]:
    """``make(grid)``: the StructSVMRanker of ``params`` (a configuration's, all but C) over the grid's C."""
    def make(grid: Sequence[dict]):
        from pyterrier_svmmap.svm.ranker import StructSVMRanker
        return StructSVMRanker(C=[g["C"] for g in grid], epsilon=SVM_EPSILON, **params)
    return make


def _letor_svm(make: Callable[[Sequence[dict]], object], features: str) -> Callable[..., Fitted]:
    """The StructSVMRanker of ``make(grid)`` over a C grid (one warm-started path), C (and for ``auto`` the
    features) chosen by validation MAP inside the ranker, test scores by ``ranking_scores`` (the package's tie
    policy)."""
    def fit(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.features.layout import default_base_names
        r = make(grid)
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


def _default_ranker(grid: Sequence[dict] = ()):
    """The StructSVMRanker of the package's default ``SVMMap()`` (its model parameters, rel=1.0)."""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: v for k, v in SVMMap().get_params().items() if k in StructSVMRanker.MODEL_PARAMS}
    return StructSVMRanker(**dict(params, rel=1.0))


def _letor_svm_default(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
    """The package's default ``SVMMap()`` (:func:`pyterrier_svmmap.selection.select_auto`): features free of
    their units, the raw block, the bins and both, each with its C grid relative to φ's spread, prior="best",
    chosen (or the best single feature kept) by 5-fold CV over train ∪ vali, the fold models and the refit
    averaged. ``vali`` is evidence like the training queries, not a held-out choice; ``grid`` is not used
    (the default searches its own)."""
    from pyterrier_svmmap.features.layout import default_base_names
    r = _default_ranker(grid)
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


def _approx_models(measure: str, n_iter: int) -> Callable[[Sequence[dict]], object]:
    """``make(grid)``: the feature layout (``"minmax"``, the estimators' default) and one ApproxRanker per grid
    point (α, and β for ``"ap"``), each with ``n_iter`` passes."""
    def make(grid: Sequence[dict]):
        from pyterrier_svmmap.approx.ranker import ApproxRanker
        return "minmax", [ApproxRanker(measure=measure, alphas=[g["alpha"]],
                                       betas=[g["beta"]] if "beta" in g else None, n_iter=n_iter,
                                       track_error=False) for g in grid]
    return make


def _letor_approx(make: Callable[[Sequence[dict]], object], measure: str) -> Callable[..., Fitted]:
    """ApproxRanker (``measure`` "ap" or "ndcg") on per-query min–max features (the estimators' default
    layout), one fit per (α, β) of the grid (``make(grid)``): the iteration chosen by the learner's validation
    measure, the grid point by validation MAP. ApproxAP trains on ``label >= rel``, ApproxNDCG on the grades."""
    def fit(train: LetorSplit, vali: LetorSplit, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.features.layout import FeatureLayout
        kind, _ = make(())
        layout = FeatureLayout.fit(train.raw, train.offsets, kind)
        y = train.binary(rel) if measure == "ap" else train.labels
        yv = vali.binary(rel) if measure == "ap" else vali.labels
        Xt, Xv = layout.transform(train.raw, train.offsets), layout.transform(vali.raw, vali.offsets)

        def fit_one(g):
            return make([g])[1][0].fit(Xt, y, train.offsets, X_valid=Xv, labels_valid=yv, offsets_valid=vali.offsets)
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


def _struct_learner(name: str) -> Learner:
    cfg = CONFIGS[name]
    params = dict(cfg.params)
    make = _svm_ranker(params)
    return Learner(name, cfg.description, tuple({"C": c} for c in cfg.c_grid()), _letor_svm(make, params["features"]),
                   ties="package", make=make)


def _approx_learner(name: str) -> Learner:
    cfg = CONFIGS[name]
    measure = {"approx-ap": "ap", "approx-ndcg": "ndcg"}[cfg.learner]
    p = cfg.params
    grid = tuple({"alpha": a, "beta": b} for a in p["alphas"] for b in p["betas"]) if measure == "ap" else tuple(
        {"alpha": a} for a in p["alphas"])
    make = _approx_models(measure, p["n_iter"])
    return Learner(name, cfg.description, grid, _letor_approx(make, measure), graded=measure == "ndcg", make=make)


def from_config(name: str) -> Learner:
    """The learner of configuration ``name`` of :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS`."""
    cfg = CONFIGS[name]
    if cfg.learner == "svm-map-default":
        return Learner(name, cfg.description, ({"C": "auto", "features": "auto"},), _letor_svm_default,
                       ties="package", make=_default_ranker)
    if cfg.learner == "struct":
        return _struct_learner(name)
    return _approx_learner(name)


#: every learner of the protocol by name, with its grid (the settings compared by validation MAP); the names of
#: :data:`~pyterrier_svmmap.experiments.learner_configs.CONFIGS` mean that configuration
LEARNERS: Dict[str, Learner] = {
    **{n: from_config(n) for n in ("svm-map", "svm-map-raw", "svm-map-paper", "svm-map-auto", "svm-roc-std",
                                   "svm-ndcg@10-std", "svm-acc2-std", "approx-ap-t100", "approx-ndcg-t100")},
    "adarank-grid": Learner("adarank-grid", "AdaRank (Xu & Li 2007), weak rankers = features, ≤ 100 rounds, "
                       "AdaRank.MAP or AdaRank.NDCG@10 by vali MAP",
                       ({"measure": "ap"}, {"measure": "ndcg", "k": 10}), _letor_adarank),
    "lambdamart-grid": Learner("lambdamart-grid", "LambdaMART (LightGBM lambdarank), ≤ 1000 trees, early stopping "
                               "on vali MAP, leaves × learning rate by vali MAP",
                               tuple({"num_leaves": nl, "learning_rate": lr} for nl in (7, 31) for lr in (0.05, 0.1)),
                               _letor_lambdamart, graded=True, lightgbm=True),
    "mcrank-grid": Learner("mcrank-grid", "McRank (LightGBM multiclass over the grades, expected grade), leaves × "
                           "trees by vali MAP",
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
