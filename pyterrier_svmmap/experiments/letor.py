"""The LETOR 5-fold protocol (:func:`run_letor`, ``svmmap letor DIR``; docs/experiments.md): for each fold every
learner (:data:`LEARNERS`) trains on ``train.txt``, chooses its hyper-parameters by validation MAP on ``vali.txt``
and scores ``test.txt``; the test measures are averaged over the folds.

The learners are array-level fits, each with a small grid chosen by validation MAP, built from
:data:`pyterrier_svmmap.experiments.systems.CONFIGS` but for the boosted peers' grids (see there).

Evaluation is Eval-Score-4.0.pl's (:mod:`pyterrier_svmmap.measures`): MAP and P@k with ``label >= rel``
relevant, NDCG@k with gain 2^label − 1 and 0 for a query of fewer than k documents, a query without a relevant
document counting 0 in every mean. The structural SVMs are scored with the package's tie policy, the others'
ties kept in file order. Seconds are training and model selection per fold (wall clock and this process's CPU
time), after one untimed fit of every learner on a few validation queries (imports, numba compilation).
"""
from __future__ import annotations

import importlib
import json
import logging
import math
import re
import time
import warnings
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.experiments.systems import CONFIGS
from pyterrier_svmmap.io.model_files import jsonable
from pyterrier_svmmap.measures import letor_mean_average_precision, letor_ndcg_at, precision_at
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.selection import DEFAULT_C_GRID, select
from pyterrier_svmmap.user_warnings import warn

log = logging.getLogger(__name__)

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
        log.debug("%s: validation MAP %.4f", setting, v)
    best = select([s["validation"] for s in selection], "validation").chosen
    model = models[best]
    return Fitted(lambda split: score(model, split), dict(selection[best]), selection)


def _svm_ranker(params: dict, grid: Sequence[dict]):
    """The StructSVMRanker of ``params`` (a configuration's, all but C) over the grid's C."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    return StructSVMRanker(C=[g["C"] for g in grid], epsilon=SVM_EPSILON, **params)


def _letor_svm(make: Callable[[Sequence[dict]], object], features: Optional[str], train: Split, vali: Split,
               rel: float, grid: Sequence[dict]) -> Fitted:
    """The StructSVMRanker ``make(grid)`` fitted on ``label >= rel`` with ``vali`` as validation data, scored by
    ``ranking_scores``; ``features`` None: the default ``SVMMap()``, which searches its own settings."""
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


def _default_ranker(grid: Sequence[dict] = ()):
    """The StructSVMRanker of the package's default ``SVMMap()`` (its model parameters, rel=1.0)."""
    from pyterrier_svmmap import SVMMap
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    params = {k: v for k, v in SVMMap().get_params().items() if k in StructSVMRanker.MODEL_PARAMS}
    return StructSVMRanker(**dict(params, rel=1.0))


def _approx_models(measure: str, n_iter: int, grid: Sequence[dict]):
    """The feature layout (``"minmax"``) and one ApproxRanker per grid point (α, β for "ap")."""
    from pyterrier_svmmap.approx.ranker import ApproxRanker
    return "minmax", [ApproxRanker(measure=measure, alphas=[g["alpha"]], betas=[g["beta"]] if "beta" in g else None,
                                   n_iter=n_iter, track_error=False) for g in grid]


def _letor_approx(make: Callable[[Sequence[dict]], object], measure: str, train: Split, vali: Split, rel: float,
                  grid: Sequence[dict]) -> Fitted:
    """ApproxRanker (``measure`` "ap" on ``label >= rel`` or "ndcg" on the grades), one fit per grid point of
    ``make(grid)``: the iteration chosen by its own validation measure, the grid point by validation MAP."""
    from pyterrier_svmmap.features.layout import FeatureLayout
    kind, _ = make(())
    layout = FeatureLayout.fit(train.raw, train.offsets, kind)
    y, yv = (s.binary(rel) if measure == "ap" else s.labels for s in (train, vali))
    Xt, Xv = layout.transform(train.raw, train.offsets), layout.transform(vali.raw, vali.offsets)

    def fit_one(g):
        return make([g])[1][0].fit(Xt, y, train.offsets, X_valid=Xv, labels_valid=yv, offsets_valid=vali.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.decision_function(layout.transform(s.raw, s.offsets)),
                       vali, rel, notes=lambda m: dict(iteration=int(m.best_iteration_)))


def _boosted(name: str, description: str, grid: Tuple[dict, ...], ranker: str, graded: bool = True,
             lightgbm: bool = True, note: Optional[Tuple[str, str]] = None, vali: bool = True, **fixed) -> Learner:
    """The learner of ``Class(**fixed, **setting)``, ``ranker`` = ``module.Class`` of :mod:`pyterrier_svmmap.boosting`
    (``vali``: with the vali split as its own validation data); ``note``: (name, attribute) noted per setting."""
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
        return Learner(name, cfg.description, ({"C": "auto", "features": "auto"},),
                       partial(_letor_svm, _default_ranker, None), ties="package", make=_default_ranker)
    if cfg.learner == "struct":
        make = partial(_svm_ranker, dict(p))
        return Learner(name, cfg.description, tuple({"C": c} for c in cfg.c_grid()),
                       partial(_letor_svm, make, p["features"]), ties="package", make=make)
    measure = {"approx-ap": "ap", "approx-ndcg": "ndcg"}[cfg.learner]
    grid = tuple({"alpha": a, "beta": b} for a in p["alphas"] for b in p["betas"]) if measure == "ap" else tuple(
        {"alpha": a} for a in p["alphas"])
    make = partial(_approx_models, measure, p["n_iter"])
    return Learner(name, cfg.description, grid, partial(_letor_approx, make, measure), graded=measure == "ndcg",
                   make=make)


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


#: the three files of every LETOR fold, in the order they are used
PARTS = ("train", "vali", "test")
#: the test measures reported, in the order of the JSON and the per-measure means
MEASURES = ("MAP", "NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "P@1", "P@3", "P@5", "P@10")


@dataclass
class Fold:
    """The three files of one fold (``number``: the K of ``FoldK``)."""
    number: int
    train: Split
    vali: Split
    test: Split


def discover_folds(directory: Union[str, Path], folds: Optional[Sequence[int]] = None) -> Dict[int, Dict[str, Path]]:
    """``{K: {"train"|"vali"|"test": path}}`` of ``directory/FoldK`` for K = 1..max (or the ``folds`` asked
    for); a ValueError naming what is missing otherwise."""
    root = Path(directory)
    if not root.exists():
        raise ValueError(f"{root}: no such directory")
    if not root.is_dir():
        raise ValueError(f"{root}: not a directory (give the folder holding Fold1..FoldK)")
    found = {int(m.group(1)): p for p in root.iterdir() if p.is_dir()
             for m in [re.fullmatch(r"Fold([1-9][0-9]*)", p.name)] if m}
    if not found:
        raise ValueError(f"{root}: no Fold1..FoldK sub-directories (the LETOR layout is FoldK/train.txt, "
                         "FoldK/vali.txt, FoldK/test.txt)")
    absent = [k for k in range(1, max(found) + 1) if k not in found]
    if absent:
        raise ValueError(f"{root}: Fold{absent[0]} is missing (found {', '.join(f'Fold{k}' for k in sorted(found))})")
    wanted = sorted(found) if folds is None else list(folds)
    if not wanted:
        raise ValueError("no fold selected")
    for k in wanted:
        if k not in found:
            raise ValueError(f"{root}: there is no Fold{k} (folds are 1..{max(found)})")
    if len(set(wanted)) != len(wanted):
        raise ValueError(f"fold selected twice in {list(wanted)}")
    out = {k: {part: found[k] / f"{part}.txt" for part in PARTS} for k in wanted}
    missing = [p for paths in out.values() for p in paths.values() if not p.is_file()]
    if missing:
        raise ValueError(f"{missing[0]} is missing (every FoldK needs train.txt, vali.txt and test.txt)")
    return out


def _read_split(path: Path) -> Split:
    from pyterrier_svmmap.io.svmlight import read_svmlight
    d = read_svmlight(str(path))
    if len(d.labels) == 0:
        raise ValueError(f"{path}: no data lines")
    q = d.queries()
    return Split(q.raw.astype(float), q.labels, np.asarray(q.offsets, dtype=np.int64), q.qids, None,
                 q.docnos.astype(str), str(path))


def load_folds(paths: Dict[int, Dict[str, Path]]) -> Dict[int, Fold]:
    """Read the files of :func:`discover_folds`; all splits get the widest file's number of features (svmlight:
    an absent feature is 0)."""
    splits = {k: {part: _read_split(p) for part, p in parts.items()} for k, parts in paths.items()}
    width = max(s.n_functions for parts in splits.values() for s in parts.values())
    return {k: Fold(k, *(parts[part].widened(width) for part in PARTS)) for k, parts in splits.items()}


def evaluate(scores: np.ndarray, split: Split, rel: float = 1) -> Dict[str, float]:
    """The :data:`MEASURES` of ``scores`` on ``split``, Eval-Score-4.0.pl's (module docstring)."""
    s, y, o = np.asarray(scores, dtype=float), split.labels, split.offsets
    return {"MAP": letor_mean_average_precision(s, y, o, rel),
            **{f"NDCG@{k}": float(letor_ndcg_at(s, y, o, k).mean()) for k in (1, 3, 5, 10)},
            **{f"P@{k}": float(precision_at(s, y, o, k, rel=rel).mean()) for k in (1, 3, 5, 10)}}


def check_rel(rel) -> float:
    """The relevance threshold: a finite number > 0 (labels ≥ rel are relevant)."""
    try:
        value = float(rel)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"rel must be a positive number (labels >= rel are relevant), got {rel!r}")
    return value


def _lightgbm_available() -> bool:
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class FoldResult:
    """One learner on one fold: the test ``measures``, the seconds of training and selection (wall clock and this
    process's CPU), the ``chosen`` setting, every setting's validation MAP (``selection``), the test queries and
    how many of them have no relevant document."""
    learner: str
    fold: int
    measures: Dict[str, float]
    seconds: float
    chosen: dict
    selection: List[dict]
    n_test_queries: int
    n_test_queries_without_relevant: int
    cpu_seconds: float = float("nan")


@dataclass
class LetorResults:
    """What :func:`run_letor` measured: per learner the :class:`FoldResult` of every fold, the learners skipped
    (name → reason), the relevance threshold, the folds and the parsing seconds."""
    directory: str
    rel: float
    folds: List[int]
    results: Dict[str, List[FoldResult]] = field(default_factory=dict)
    skipped: Dict[str, str] = field(default_factory=dict)
    parse_seconds: float = 0.0

    @property
    def complete(self) -> bool:
        """Whether every learner has a result on every fold (False while :func:`run_letor` is running)."""
        return all([r.fold for r in res] == self.folds for res in self.results.values())

    def mean(self, learner: str) -> Dict[str, float]:
        """The fold average of every measure, and ``seconds``, ``cpu_seconds``: the totals over the folds."""
        res = self.results[learner]
        return {**{m: float(np.mean([r.measures[m] for r in res])) for m in MEASURES},
                "seconds": float(sum(r.seconds for r in res)), "cpu_seconds": float(sum(r.cpu_seconds for r in res))}

    def to_json(self) -> dict:
        """A JSON-serialisable dict: settings, per learner the means and every fold."""
        return {
            "directory": self.directory, "rel": self.rel, "folds": self.folds, "complete": self.complete,
            "evaluation": "Eval-Score-4.0.pl semantics: MAP/P@k with label >= rel relevant, NDCG@k gain "
                          "2^label-1 (ranks 1-2 undiscounted, then 1/log2(rank)), NDCG@k = 0 for queries of fewer "
                          "than k documents, queries without a relevant document count 0 in every mean",
            "parse_seconds": self.parse_seconds, "skipped": self.skipped,
            "learners": {name: {"description": LEARNERS[name].description,
                                "grid": [dict(g) for g in LEARNERS[name].grid],
                                "labels": "graded" if LEARNERS[name].graded else "label >= rel",
                                "ties": LEARNERS[name].ties,
                                "mean": self.mean(name), "folds": [jsonable(asdict(r)) for r in res]}
                         for name, res in self.results.items()},
        }

    def table(self) -> str:
        """The paper-style table (learner × MAP, NDCG@10, P@10, seconds) and the per-fold MAP of every learner."""
        names = list(self.results)
        w = max([len("learner")] + [len(n) for n in names])
        lines = [f"{'learner':<{w}}  {'MAP':>6}  {'NDCG@10':>7}  {'P@10':>6}  {'NDCG@5':>6}  {'P@5':>6}  "
                 f"{'train s':>8}  {'cpu s':>8}"]
        for n in names:
            m = self.mean(n)
            lines.append(f"{n:<{w}}  {m['MAP']:6.4f}  {m['NDCG@10']:7.4f}  {m['P@10']:6.4f}  {m['NDCG@5']:6.4f}  "
                         f"{m['P@5']:6.4f}  {m['seconds']:8.1f}  {m['cpu_seconds']:8.1f}")
        lines += ["", f"{'MAP per fold':<{w}}  " + "  ".join(f"{'Fold' + str(k):>6}" for k in self.folds)]
        for n in names:
            by_fold = {r.fold: r.measures["MAP"] for r in self.results[n]}
            lines.append(f"{n:<{w}}  " + "  ".join(f"{by_fold[k]:6.4f}" if k in by_fold else f"{'-':>6}"
                                                   for k in self.folds))
        first = next(iter(self.results.values()), None)
        if first:
            q = sum(r.n_test_queries for r in first)
            z = sum(r.n_test_queries_without_relevant for r in first)
            lines += ["", f"Eval-Score-4.0.pl semantics: relevant = label >= {self.rel:g} (MAP, P@k); NDCG gain "
                         f"2^label - 1, NDCG@k = 0 for queries of < k documents; {z} of {q} test queries have no "
                      "relevant document and count 0. Seconds (wall clock; CPU of this process): training + model "
                      "selection on vali, all folds."]
        lines += [f"{n}: {len(res)} of {len(self.folds)} folds only (run interrupted): its means are over those"
                  for n, res in self.results.items() if len(res) < len(self.folds)]
        lines += [f"{n}: skipped ({why})" for n, why in self.skipped.items()]
        return "\n".join(lines)


def _warm_up(name: str, fold: Fold, rel: float, threads: int) -> None:
    """One small untimed fit (imports, numba compilation) on the first validation queries."""
    tiny = fold.vali.head(40)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_learner(name, tiny, tiny, rel, LEARNERS[name].grid[:1], threads)
    except Exception as e:                  # noqa: BLE001  (a tiny sample may not be trainable; the real fit decides)
        log.debug("warm-up of %s failed: %s", name, e)


def run_letor(directory: Union[str, Path], learners: Optional[Union[str, Sequence[str]]] = None, rel: float = 1,
              folds: Optional[Sequence[int]] = None, warm_up: bool = True, threads: int = 1,
              progress: Optional[Callable[[FoldResult, "LetorResults"], None]] = None) -> LetorResults:
    """The LETOR protocol (module docstring) on ``directory/Fold1..FoldK`` (or ``folds``) for ``learners`` (names of
    :data:`LEARNERS`, default all) with relevance threshold ``rel``;
    the LightGBM learners are skipped with one warning without LightGBM (``threads``: its threads). ``progress``
    is called with every :class:`FoldResult` and the results so far (e.g. to save them as they come)."""
    rel = check_rel(rel)
    names = learner_names(learners)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    t = time.perf_counter()
    data = load_folds(discover_folds(directory, folds))
    out = LetorResults(str(directory), rel, list(data), parse_seconds=time.perf_counter() - t)
    n_lines = sum(len(s.labels) for f in data.values() for s in (f.train, f.vali, f.test))
    log.info("read %d folds of %s: %d lines, %d features (%.1fs)", len(data), directory, n_lines,
             next(iter(data.values())).train.raw.shape[1], out.parse_seconds)
    if any(LEARNERS[n].lightgbm for n in names) and not _lightgbm_available():
        skipped = [n for n in names if LEARNERS[n].lightgbm]
        warn(f"LightGBM is not installed: {', '.join(skipped)} skipped (pip install pyterrier-svmmap[peers])")
        out.skipped.update(dict.fromkeys(skipped, "LightGBM is not installed"))
        names = [n for n in names if n not in skipped]
    for fold in data.values():
        if not (fold.train.labels >= rel).any():
            raise ValueError(f"{fold.train.source}: no training document has label >= {rel:g}")
    for name in names:
        if warm_up:
            _warm_up(name, next(iter(data.values())), rel, threads)
        out.results[name] = []
        for k, fold in data.items():
            t, cpu = time.perf_counter(), time.process_time()
            fitted = fit_learner(name, fold.train, fold.vali, rel, threads=threads)
            seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
            res = FoldResult(name, k, evaluate(fitted.scores(fold.test), fold.test, rel), seconds,
                             jsonable(fitted.chosen), jsonable(fitted.selection), fold.test.n_queries,
                             fold.test.queries_without_relevant(rel), cpu)
            out.results[name].append(res)
            chosen = ", ".join(f"{a}={b:g}" if isinstance(b, float) else f"{a}={b}"
                               for a, b in res.chosen.items() if a != "validation")
            log.info("%s Fold%d: test MAP %.4f NDCG@10 %.4f (%s; %.1fs)", name, k, res.measures["MAP"],
                     res.measures["NDCG@10"], chosen, seconds)
            if progress is not None:
                progress(res, out)
    return out


def write_json(results: LetorResults, path: Union[str, Path]) -> None:
    """Write :meth:`LetorResults.to_json` to ``path``, whole or not at all."""
    from pyterrier_svmmap.io.atomic import write_atomic
    write_atomic(path, (json.dumps(results.to_json(), indent=1) + "\n").encode())
