"""The learners of the LETOR protocol (:mod:`pyterrier_svmmap.experiments.letor`, :data:`LEARNERS`): array-level
fits on a fold's train and vali splits, each with a small grid chosen by validation MAP. The structural SVMs and
the Approx learners are built from :data:`pyterrier_svmmap.experiments.systems.CONFIGS`, as ``svmmap
reproduce``'s estimators are; the boosted peers search a grid here (``lambdamart-grid``, ``mcrank-grid``,
``adarank-grid``) where reproduce runs the estimators' defaults.
"""
from __future__ import annotations

import importlib
import logging
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.experiments.systems import CONFIGS
from pyterrier_svmmap.measures import letor_mean_average_precision
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.selection import DEFAULT_C_GRID, select

logger = logging.getLogger(__name__)

#: the grid of C of every structural SVM (OP 1's constant, SVMstruct's C/n convention)
SVM_C_GRID = DEFAULT_C_GRID
#: the cutting-plane tolerance of the SVMs
SVM_EPSILON = 1e-3


@dataclass
class Split(Queries):
    """One LETOR file as :class:`~pyterrier_svmmap.queries.Queries` — ``raw`` (n, F), ``labels`` (n,) graded,
    ``offsets`` (Q + 1,), the file's ``qids`` and its docids as ``docnos`` (n,), lines in file order within a
    query — and the file it came from (``source``)."""
    source: str = ""

    def head(self, n_queries: int) -> "Split":
        """The first ``n_queries`` queries."""
        return self.subset(np.arange(self.n_queries) < n_queries)

    def binary(self, rel: float) -> np.ndarray:
        """Labels as 1.0 (``label >= rel``) or 0.0."""
        return (self.labels >= rel).astype(float)

    def queries_without_relevant(self, rel: float) -> int:
        """How many queries have no document with ``label >= rel``."""
        ids = np.repeat(np.arange(self.n_queries), np.diff(self.offsets))
        return int((np.bincount(ids, weights=self.labels >= rel, minlength=self.n_queries) == 0).sum())


@dataclass
class Fitted:
    """A learner trained with model selection: ``scores(split)`` (test scores as evaluated), the ``chosen``
    setting, and every setting tried with its validation MAP (``selection``)."""
    scores: Callable[[Split], np.ndarray]
    chosen: dict
    selection: List[dict]


@dataclass(frozen=True)
class Learner:
    """A learner of the protocol: ``fit(train, vali, rel, grid)`` → :class:`Fitted`. ``graded``: trains on the
    grades (else on ``label >= rel``); ``ties``: ``"package"`` (``ranking_scores``) or ``"file order"``;
    ``make(grid)``: the unfitted model(s) ``fit`` trains, for the learners of CONFIGS (a ``StructSVMRanker``;
    for the Approx learners the feature layout and one ``ApproxRanker`` per grid point)."""
    name: str
    description: str
    grid: Tuple[dict, ...]
    fit: Callable[..., Fitted]
    graded: bool = False
    ties: str = "file order"
    lightgbm: bool = False
    make: Optional[Callable[[Sequence[dict]], object]] = None


def grid_search(settings: Sequence[dict], fit_one: Callable[[dict], object],
                score: Callable[[object, Split], np.ndarray], vali: Split, rel: float,
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


def _letor_svm(make: Callable[[Sequence[dict]], object], features: Optional[str]) -> Callable[..., Fitted]:
    """The StructSVMRanker of ``make(grid)`` fitted on ``label >= rel`` of ``train`` with ``vali`` as its validation
    data, test scores by ``ranking_scores`` (the package's tie policy): a configuration's (its ``features``) with C
    (and for ``auto`` the features) chosen by validation MAP inside the ranker, or (``features`` None) the
    package's default ``SVMMap()``, which searches its own settings (``grid`` is not used), ``vali`` evidence
    like the training queries (:mod:`pyterrier_svmmap.selection`)."""
    def fit(train: Split, vali: Split, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.features.layout import default_base_names
        r = make(grid)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="skipping .* training queries")   # LETOR: many such queries
            r.fit(train.raw, train.binary(rel), train.offsets,
                  valid=(vali.raw, vali.binary(rel), vali.offsets, None, vali.docnos),
                  base_names=default_base_names(train.raw.shape[1], start=1))
        if features is None:
            selection = [dict(C=p["C"], validation=p["validation"], features=p["features"],
                              **({"fallback": True} if p.get("fallback") else {})) for p in r.path_]
            chosen = dict(C=r.C_, features=r.features_)
            choice = getattr(r, "choice_", None)             # None: a single C, trained as given
            if choice is not None:
                chosen.update(validation=choice["chosen"]["validation"], fallback=choice["fallback"],
                              p_value=choice["p_value"])
        else:
            auto = features == "auto"
            selection = [dict(C=p["C"], validation=p["validation"], n_iter=p["n_iter"], converged=p["converged"],
                              **({"features": p["features"]} if auto else {})) for p in r.path_]
            chosen = dict(C=r.C_, **({"features": r.features_} if auto else {}),
                          validation=max(p["validation"] for p in selection))
        return Fitted(lambda s: r.ranking_scores(s.raw, s.offsets, s.docnos), chosen, selection)
    return fit


def _default_ranker(grid: Sequence[dict] = ()):
    """The StructSVMRanker of the package's default ``SVMMap()`` (its model parameters, rel=1.0)."""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: v for k, v in SVMMap().get_params().items() if k in StructSVMRanker.MODEL_PARAMS}
    return StructSVMRanker(**dict(params, rel=1.0))


def _approx_models(measure: str, n_iter: int) -> Callable[[Sequence[dict]], object]:
    """``make(grid)``: the feature layout (``"minmax"``) and one ApproxRanker per grid point (α, β for "ap")."""
    def make(grid: Sequence[dict]):
        from pyterrier_svmmap.approx.ranker import ApproxRanker
        return "minmax", [ApproxRanker(measure=measure, alphas=[g["alpha"]],
                                       betas=[g["beta"]] if "beta" in g else None, n_iter=n_iter,
                                       track_error=False) for g in grid]
    return make


def _letor_approx(make: Callable[[Sequence[dict]], object], measure: str) -> Callable[..., Fitted]:
    """ApproxRanker (``measure`` "ap" on ``label >= rel`` or "ndcg" on the grades), one fit per grid point of
    ``make(grid)``: the iteration chosen by its own validation measure, the grid point by validation MAP."""
    def fit(train: Split, vali: Split, rel: float, grid: Sequence[dict]) -> Fitted:
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


def _boosted(name: str, description: str, grid: Tuple[dict, ...], ranker: str, graded: bool = True,
             lightgbm: bool = True, note: Optional[Tuple[str, str]] = None, vali: bool = True, **fixed) -> Learner:
    """The learner of the boosted ranker ``ranker`` (``module.Class``) of :mod:`pyterrier_svmmap.boosting`,
    ``Class(**fixed, **setting)`` trained on the grades (``graded``) or on ``label >= rel``, with the vali split as
    its own validation data if ``vali``, LightGBM's threads if ``lightgbm``; the grid point by validation MAP and
    ``note`` (name, attribute) noted with each setting."""
    def fit(train: Split, valid: Split, rel: float, grid: Sequence[dict], threads: int = 1) -> Fitted:
        module, cls = ranker.rsplit(".", 1)
        make = getattr(importlib.import_module(f"pyterrier_svmmap.boosting.{module}"), cls)
        params = dict(params=dict(n_jobs=threads, deterministic=True, force_row_wise=True)) if lightgbm else {}

        def labels(s: Split) -> np.ndarray:
            return s.labels if graded else s.binary(rel)

        def fit_one(g):
            return make(**fixed, **params, **g).fit(train.raw, labels(train), train.offsets,
                                                    *((valid.raw, labels(valid), valid.offsets) if vali else ()))
        return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), valid, rel,
                           notes=(lambda m: {note[0]: int(getattr(m, note[1]))}) if note else None)
    return Learner(name, description, grid, fit, graded=graded, lightgbm=lightgbm)


def from_config(name: str) -> Learner:
    """The learner of configuration ``name`` of :data:`~pyterrier_svmmap.experiments.systems.CONFIGS`."""
    cfg = CONFIGS[name]
    p = cfg.params
    if cfg.learner == "svm-map-default":
        return Learner(name, cfg.description, ({"C": "auto", "features": "auto"},), _letor_svm(_default_ranker, None),
                       ties="package", make=_default_ranker)
    if cfg.learner == "struct":
        make = _svm_ranker(dict(p))
        return Learner(name, cfg.description, tuple({"C": c} for c in cfg.c_grid()),
                       _letor_svm(make, p["features"]), ties="package", make=make)
    measure = {"approx-ap": "ap", "approx-ndcg": "ndcg"}[cfg.learner]
    grid = tuple({"alpha": a, "beta": b} for a in p["alphas"] for b in p["betas"]) if measure == "ap" else tuple(
        {"alpha": a} for a in p["alphas"])
    make = _approx_models(measure, p["n_iter"])
    return Learner(name, cfg.description, grid, _letor_approx(make, measure), graded=measure == "ndcg", make=make)


#: every learner of the protocol by name, with its grid (the settings compared by validation MAP)
LEARNERS: Dict[str, Learner] = {
    **{n: from_config(n) for n in ("svm-map", "svm-map-raw", "svm-map-paper", "svm-map-auto", "svm-roc-std",
                                   "svm-ndcg@10-std", "svm-acc2-std", "approx-ap-t100", "approx-ndcg-t100")},
    "adarank-grid": _boosted("adarank-grid", "AdaRank (Xu & Li 2007), weak rankers = features, ≤ 100 rounds, "
                             "AdaRank.MAP or AdaRank.NDCG@10 by vali MAP",
                             ({"measure": "ap"}, {"measure": "ndcg", "k": 10}), "adarank.AdaRankRanker",
                             graded=False, lightgbm=False, note=("rounds", "best_round_")),
    "lambdamart-grid": _boosted("lambdamart-grid", "LambdaMART (LightGBM lambdarank), ≤ 1000 trees, early "
                                "stopping on vali MAP, leaves × learning rate by vali MAP",
                                tuple({"num_leaves": nl, "learning_rate": lr} for nl in (7, 31) for lr in (0.05, 0.1)),
                                "lambdamart.LambdaMARTRanker", note=("trees", "best_iteration_"), n_estimators=1000,
                                metric="map", eval_at=1000, early_stopping_rounds=50),
    "mcrank-grid": _boosted("mcrank-grid", "McRank (LightGBM multiclass over the grades, expected grade), leaves × "
                            "trees by vali MAP",
                            tuple({"num_leaves": nl, "n_estimators": n} for nl in (7, 31) for n in (30, 100)),
                            "mcrank.McRankRanker", vali=False),
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


def fit_learner(name: str, train: Split, vali: Split, rel: float = 1, grid: Optional[Sequence[dict]] = None,
                threads: int = 1) -> Fitted:
    """Train learner ``name`` on ``train`` with model selection on ``vali`` (its grid, or ``grid``)."""
    learner = LEARNERS[name]
    kwargs = {"threads": threads} if learner.lightgbm else {}
    return learner.fit(train, vali, rel, tuple(grid if grid is not None else learner.grid), **kwargs)
