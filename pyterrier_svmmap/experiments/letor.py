"""The LETOR 5-fold protocol: every learner of the package on ``Fold1..FoldK``, evaluated as LETOR 4.0 does.

The protocol (the LETOR convention, as the MQ2008 README states it): for each fold, train on ``train.txt``,
choose the learner's hyper-parameters by **validation MAP** on ``vali.txt``, score ``test.txt``, and
average the test measures over the folds. :func:`run_letor` runs it for a list of learners (by name, see
:data:`LEARNERS`) and returns per-fold and averaged results; ``svmmap letor DIR`` prints them, and
``benchmarks/`` can call it too.

**Evaluation** (:mod:`pyterrier_svmmap.measures`, the semantics of LETOR 4.0's Eval-Score-4.0.pl):

* MAP and P@k: a document is relevant when ``label >= rel`` (default ``rel=1``: labels 1 and 2 of
  LETOR's graded 0/1/2; ``rel=2`` makes only the 2s relevant) — ir_measures' ``AP(rel=...)``/``P(rel=...)``;
* NDCG@k: gain 2^label − 1 (graded, independent of ``rel``), discount 1 at ranks 1–2 and 1/log2(rank)
  beyond, and NDCG@k = 0 for a query with fewer than k documents, as the script reports it;
* a query **without a relevant document counts in every mean with AP = NDCG = P@k = 0** (the mean is over
  all queries of the test file; 220 of MQ2008's 784 queries have none). :class:`FoldResult` records how
  many there were, so the number can be rescaled to the queries with a relevant document;
* ties: learners with a ``ranking_scores`` method (the structural SVMs) are scored with the package's
  tie policy (:mod:`pyterrier_svmmap.ties`: tie-break base function, then docid descending); the others'
  raw scores are evaluated with ties in file order, as Eval-Score-4.0.pl does (its stable sort).

**Training labels.** LETOR labels are graded. Learners whose objective is binary train on
``label >= rel`` as 1, else 0: the structural SVMs (their AP/ROC/NDCG/accuracy losses take binary
relevance), ApproxAP and AdaRank (its AP and binary-gain NDCG). Learners that use grades train on the
labels as they are: LambdaMART (lambdarank's 2^label − 1 gains), McRank (a class per grade) and
ApproxNDCG (gain 2^label − 1).

**Model selection.** Each learner has a small documented grid (:data:`LEARNERS`); the setting with the
highest validation MAP (``rel`` as above, all validation queries, first of equal maxima) is kept. The
SVMs' grid is C ∈ {0.01, 0.1, 1, 10, 100, 1000}, trained as one warm-started path by
:class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`, which selects C by the same validation MAP (with its tie
policy). Learners that also stop early on the validation queries do so by their own measure within a
setting (LambdaMART: LightGBM's MAP over the whole list; ApproxNDCG: NDCG; AdaRank: its measure; ApproxAP:
MAP), and the grid is then decided by validation MAP.

**Seconds** are training plus model selection (every setting and its validation scoring), per fold, as
wall-clock time and as this process's CPU time (the number to compare on a shared machine; LightGBM runs on
``threads`` threads, 1 by default, so its CPU time is its work too); reading the files is timed apart. Before timing, every learner is fitted once on a few validation queries
(imports, numba compilation), so the first fold is not charged for them.
"""
from __future__ import annotations

import json
import logging
import math
import re
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyterrier_svmmap.measures import letor_average_precision, letor_ndcg_at, precision_at

log = logging.getLogger(__name__)

#: the three files of every LETOR fold, in the order they are used
PARTS = ("train", "vali", "test")
#: the test measures reported, in the order of the JSON and the per-measure means
MEASURES = ("MAP", "NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "P@1", "P@3", "P@5", "P@10")
#: the grid of C of every structural SVM (OP 1's constant, SVMstruct's C/n convention)
SVM_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
#: the cutting-plane tolerance of the SVMs
SVM_EPSILON = 1e-3
#: thresholds per feature of the binned SVM-map (the paper's φ)
N_BINS = 50


# -------------------------------------------------------------------------------------------------
# data
# -------------------------------------------------------------------------------------------------
@dataclass
class Split:
    """One LETOR file as grouped arrays: ``raw`` (n, F), ``labels`` (n,) graded, ``offsets`` (Q + 1,),
    ``docids`` (n,) and the file it came from. Lines keep file order within a query."""
    raw: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    docids: np.ndarray
    source: str = ""

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    def head(self, n_queries: int) -> "Split":
        """The first ``n_queries`` queries (for the warm-up fits)."""
        n_queries = min(n_queries, self.n_queries)
        end = int(self.offsets[n_queries])
        return Split(self.raw[:end], self.labels[:end], self.offsets[:n_queries + 1], self.docids[:end], self.source)

    def binary(self, rel: float) -> np.ndarray:
        """Labels as 1.0 (``label >= rel``) or 0.0."""
        return (self.labels >= rel).astype(float)

    def queries_without_relevant(self, rel: float) -> int:
        """How many queries have no document with ``label >= rel``."""
        if self.n_queries == 0:
            return 0
        hits = np.add.reduceat((self.labels >= rel).astype(int), self.offsets[:-1]) if len(self.labels) else 0
        hits = np.where(np.diff(self.offsets) > 0, hits, 0)
        return int((hits == 0).sum())


@dataclass
class Fold:
    """The three files of one fold (``number``: the K of ``FoldK``)."""
    number: int
    train: Split
    vali: Split
    test: Split


def discover_folds(directory: Union[str, Path], folds: Optional[Sequence[int]] = None) -> Dict[int, Dict[str, Path]]:
    """``{K: {"train"|"vali"|"test": path}}`` of ``directory/FoldK`` for K = 1..max (or the ``folds`` asked
    for); a ValueError naming what is missing otherwise: the directory, a ``FoldK`` in 1..max, a file."""
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
    out = {}
    for k in wanted:
        paths = {part: found[k] / f"{part}.txt" for part in PARTS}
        for part, p in paths.items():
            if not p.is_file():
                raise ValueError(f"{p} is missing (every FoldK needs train.txt, vali.txt and test.txt)")
        out[k] = paths
    return out


def _read_split(path: Path, width: Optional[int] = None) -> Split:
    from pyterrier_svmmap.io.svmlight import read_svmlight
    d = read_svmlight(str(path))
    raw = d.grouped(d.features).astype(float)
    if width is not None and raw.shape[1] < width:      # svmlight: an absent feature is 0
        raw = np.hstack([raw, np.zeros((len(raw), width - raw.shape[1]))])
    if len(d.labels) == 0:
        raise ValueError(f"{path}: no data lines")
    return Split(raw, d.grouped(d.labels).astype(float), np.asarray(d.offsets, dtype=np.int64),
                 d.grouped(d.docids).astype(str), str(path))


def load_folds(paths: Dict[int, Dict[str, Path]]) -> Dict[int, Fold]:
    """Read the files of :func:`discover_folds`; all splits get the widest file's number of features."""
    splits = {k: {part: _read_split(p) for part, p in parts.items()} for k, parts in paths.items()}
    width = max(s.raw.shape[1] for parts in splits.values() for s in parts.values())
    for parts in splits.values():
        for part, s in parts.items():
            if s.raw.shape[1] < width:
                s.raw = np.hstack([s.raw, np.zeros((len(s.raw), width - s.raw.shape[1]))])
    return {k: Fold(k, parts["train"], parts["vali"], parts["test"]) for k, parts in splits.items()}


# -------------------------------------------------------------------------------------------------
# evaluation
# -------------------------------------------------------------------------------------------------
def letor_map(scores: np.ndarray, split: Split, rel: float = 1) -> float:
    """MAP as Eval-Score-4.0.pl computes it (``label >= rel`` relevant, every query counted, ties in file order)."""
    return float(letor_average_precision(scores, split.labels, split.offsets, rel=rel).mean())


def evaluate(scores: np.ndarray, split: Split, rel: float = 1) -> Dict[str, float]:
    """The :data:`MEASURES` of ``scores`` on ``split`` with Eval-Score-4.0.pl's semantics (module docstring):
    means over all queries of the file, a query without a relevant document counting 0."""
    s, y, o = np.asarray(scores, dtype=float), split.labels, split.offsets
    out = {"MAP": letor_map(s, split, rel)}
    for k in (1, 3, 5, 10):
        out[f"NDCG@{k}"] = float(letor_ndcg_at(s, y, o, k).mean())
    for k in (1, 3, 5, 10):
        out[f"P@{k}"] = float(precision_at(s, y, o, k, rel=rel).mean())
    return out


# -------------------------------------------------------------------------------------------------
# learners
# -------------------------------------------------------------------------------------------------
@dataclass
class Fitted:
    """A learner trained with model selection: ``scores(split)`` (test scores as evaluated), the ``chosen``
    setting, and every setting tried with its validation MAP (``selection``)."""
    scores: Callable[[Split], np.ndarray]
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


def _first_best(values: Sequence[float]) -> int:
    """Index of the first maximum (NaN lowest)."""
    v = np.array([-np.inf if (x is None or math.isnan(x)) else x for x in values])
    return int(np.argmax(v))


def grid_search(settings: Sequence[dict], fit_one: Callable[[dict], object],
                score: Callable[[object, Split], np.ndarray], vali: Split, rel: float,
                notes: Optional[Callable[[object], dict]] = None) -> Fitted:
    """Fit every setting, keep the first with the highest validation MAP (``label >= rel``, all queries)."""
    models, selection = [], []
    for setting in settings:
        model = fit_one(setting)
        v = letor_map(score(model, vali), vali, rel)
        models.append(model)
        selection.append(dict(setting, validation=v, **(notes(model) if notes else {})))
        log.debug("%s: validation MAP %.4f", setting, v)
    best = _first_best([s["validation"] for s in selection])
    model = models[best]
    return Fitted(lambda split: score(model, split), dict(selection[best]), selection)


def _svm(loss: str, features: str) -> Callable[..., Fitted]:
    """StructSVMRanker over a C grid (one warm-started path), C (and for ``auto`` the features) chosen by
    validation MAP inside the ranker, test scores by ``ranking_scores`` (the package's tie policy)."""
    def fit(train: Split, vali: Split, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.features.layout import default_base_names
        from pyterrier_svmmap.svm.ranker import StructSVMRanker
        r = StructSVMRanker(C=[g["C"] for g in grid], loss=loss, features=features, n_bins=N_BINS,
                            epsilon=SVM_EPSILON)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="skipping .* training queries")   # LETOR: many such queries
            r.fit(train.raw, train.binary(rel), train.offsets,
                  valid=(vali.raw, vali.binary(rel), vali.offsets, None, vali.docids),
                  base_names=default_base_names(train.raw.shape[1], start=1))
        selection = [dict(C=p["C"], validation=p["validation"], n_iter=p["n_iter"], converged=p["converged"],
                          **({"features": p["features"]} if features == "auto" else {})) for p in r.path_]
        chosen = dict(C=r.C_, **({"features": r.features_} if features == "auto" else {}))
        chosen["validation"] = max(p["validation"] for p in selection)
        return Fitted(lambda s: r.ranking_scores(s.raw, s.offsets, s.docids), chosen, selection)
    return fit


def _approx(measure: str, n_iter: int) -> Callable[..., Fitted]:
    """ApproxRanker (``measure`` "ap" or "ndcg") on per-query min–max features (the estimators' default
    layout), one fit per (α, β) of the grid: the iteration chosen by the learner's validation measure, the
    grid point by validation MAP. ApproxAP trains on ``label >= rel``, ApproxNDCG on the grades."""
    def fit(train: Split, vali: Split, rel: float, grid: Sequence[dict]) -> Fitted:
        from pyterrier_svmmap.approx.ranker import ApproxRanker
        from pyterrier_svmmap.features.layout import FeatureLayout
        layout = FeatureLayout.fit(train.raw, train.offsets, "minmax")
        y = train.binary(rel) if measure == "ap" else train.labels
        yv = vali.binary(rel) if measure == "ap" else vali.labels
        Xt, Xv = layout.transform(train.raw, train.offsets), layout.transform(vali.raw, vali.offsets)

        def fit_one(g):
            return ApproxRanker(measure, alphas=[g["alpha"]], betas=[g["beta"]] if "beta" in g else None,
                                n_iter=n_iter, track_error=False).fit(
                Xt, y, train.offsets, X_valid=Xv, labels_valid=yv, offsets_valid=vali.offsets)
        return grid_search(grid, fit_one, lambda m, s: m.decision_function(layout.transform(s.raw, s.offsets)),
                           vali, rel, notes=lambda m: dict(iteration=int(m.best_iteration_)))
    return fit


def _adarank(train: Split, vali: Split, rel: float, grid: Sequence[dict]) -> Fitted:
    """AdaRank (AdaRank.MAP / AdaRank.NDCG@10) on ``label >= rel``; its round chosen by its own validation
    measure, the variant by validation MAP."""
    from pyterrier_svmmap.boosting.peers import AdaRankRanker

    def fit_one(g):
        return AdaRankRanker(**g).fit(train.raw, train.binary(rel), train.offsets,
                                      vali.raw, vali.binary(rel), vali.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), vali, rel,
                       notes=lambda m: dict(rounds=int(m.best_round_)))


def _lightgbm_params(threads: int) -> dict:
    return dict(n_jobs=threads, deterministic=True, force_row_wise=True)


def _lambdamart(train: Split, vali: Split, rel: float, grid: Sequence[dict], threads: int = 1) -> Fitted:
    """LambdaMART (LightGBM lambdarank) on the grades, up to 1000 trees with early stopping (50 rounds) on
    LightGBM's validation MAP over the whole list; the grid point by validation MAP (``rel``)."""
    from pyterrier_svmmap.boosting.peers import LambdaMARTRanker

    def fit_one(g):
        return LambdaMARTRanker(n_estimators=1000, metric="map", eval_at=1000, early_stopping_rounds=50,
                                params=_lightgbm_params(threads), **g).fit(
            train.raw, train.labels, train.offsets, vali.raw, vali.labels, vali.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), vali, rel,
                       notes=lambda m: dict(trees=int(m.best_iteration_)))


def _mcrank(train: Split, vali: Split, rel: float, grid: Sequence[dict], threads: int = 1) -> Fitted:
    """McRank (a boosted multiclass model over the grades, score = expected grade); grid by validation MAP."""
    from pyterrier_svmmap.boosting.peers import McRankRanker

    def fit_one(g):
        return McRankRanker(params=_lightgbm_params(threads), **g).fit(train.raw, train.labels, train.offsets)
    return grid_search(grid, fit_one, lambda m, s: m.predict(s.raw, s.offsets), vali, rel)


_C = tuple({"C": c} for c in SVM_C_GRID)

#: every learner of the protocol by name, with its grid (the settings compared by validation MAP)
LEARNERS: Dict[str, Learner] = {
    "svm-map": Learner("svm-map", "SVM-map, raw features (svm_map_learn's linear model)", _C, _svm("map", "raw"),
                       ties="package"),
    "svm-map-bins": Learner("svm-map-bins", f"SVM-map, {N_BINS} quantile bins per feature (the paper's φ)", _C,
                            _svm("map", "bins"), ties="package"),
    "svm-map-auto": Learner("svm-map-auto", "SVM-map, features bins / raw / bins+raw (×3 grid) chosen with C", _C,
                            _svm("map", "auto"), ties="package"),
    "svm-roc": Learner("svm-roc", "structural SVM for ROC area (≈ RankSVM), raw features", _C,
                       _svm("roc", "raw"), ties="package"),
    "svm-ndcg@10": Learner("svm-ndcg@10", "structural SVM for NDCG@10 (binary gains), raw features", _C,
                           _svm("ndcg@10", "raw"), ties="package"),
    "svm-acc2": Learner("svm-acc2", "structural SVM for balanced accuracy (classification), raw features", _C,
                        _svm("acc2", "raw"), ties="package"),
    "approx-ap": Learner("approx-ap", "ApproxAP (Qin et al. 2010), linear on min-max features, 100 passes, η=0.01",
                         tuple({"alpha": a, "beta": b} for a in (10.0, 100.0) for b in (1.0, 10.0)),
                         _approx("ap", 100)),
    "approx-ndcg": Learner("approx-ndcg", "ApproxNDCG (Qin et al. 2010), as approx-ap, gains 2^label − 1",
                           tuple({"alpha": a} for a in (10.0, 50.0, 100.0)), _approx("ndcg", 100), graded=True),
    "adarank": Learner("adarank", "AdaRank (Xu & Li 2007), weak rankers = features, ≤ 100 rounds",
                       ({"measure": "ap"}, {"measure": "ndcg", "k": 10}), _adarank),
    "lambdamart": Learner("lambdamart", "LambdaMART (LightGBM lambdarank), ≤ 1000 trees, early stopping on vali",
                          tuple({"num_leaves": nl, "learning_rate": lr} for nl in (7, 31) for lr in (0.05, 0.1)),
                          _lambdamart, graded=True, lightgbm=True),
    "mcrank": Learner("mcrank", "McRank (LightGBM multiclass over the grades, expected grade)",
                      tuple({"num_leaves": nl, "n_estimators": n} for nl in (7, 31) for n in (30, 100)),
                      _mcrank, graded=True, lightgbm=True),
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


def check_rel(rel) -> float:
    """The relevance threshold: a finite number > 0 (labels ≥ rel are relevant)."""
    try:
        value = float(rel)
    except (TypeError, ValueError):
        raise ValueError(f"rel must be a positive number (labels >= rel are relevant), got {rel!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"rel must be a positive number (labels >= rel are relevant), got {rel!r}")
    return value


def _lightgbm_available() -> bool:
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return False
    return True


# -------------------------------------------------------------------------------------------------
# the protocol
# -------------------------------------------------------------------------------------------------
@dataclass
class FoldResult:
    """One learner on one fold: the test ``measures`` (:data:`MEASURES`), training + selection ``seconds``
    (wall clock) and ``cpu_seconds`` (this process's CPU time: the robust number on a shared machine), the
    ``chosen`` setting and every setting's validation MAP (``selection``), the test queries and how
    many of them have no relevant document (they count 0 in the means)."""
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
    """What :func:`run_letor` measured: per learner the :class:`FoldResult` of every fold, learners skipped
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
        out = {m: float(np.mean([r.measures[m] for r in res])) for m in MEASURES}
        out["seconds"] = float(sum(r.seconds for r in res))
        out["cpu_seconds"] = float(sum(r.cpu_seconds for r in res))
        return out

    def to_json(self) -> dict:
        """A JSON-serialisable dict: settings, per learner the means and every fold."""
        return {
            "directory": self.directory, "rel": self.rel, "folds": self.folds, "complete": self.complete,
            "evaluation": "Eval-Score-4.0.pl semantics: MAP/P@k with label >= rel relevant, NDCG@k gain "
                          "2^label-1 (ranks 1-2 undiscounted, then 1/log2(rank)), NDCG@k = 0 for queries of fewer "
                          "than k documents, queries without a relevant document count 0 in every mean",
            "parse_seconds": self.parse_seconds, "skipped": self.skipped,
            "learners": {name: {"description": LEARNERS[name].description if name in LEARNERS else "",
                                "grid": [dict(g) for g in LEARNERS[name].grid] if name in LEARNERS else [],
                                "labels": "graded" if name in LEARNERS and LEARNERS[name].graded else "label >= rel",
                                "ties": LEARNERS[name].ties if name in LEARNERS else "",
                                "mean": self.mean(name), "folds": [_jsonable(asdict(r)) for r in res]}
                         for name, res in self.results.items()},
        }

    def table(self) -> str:
        """The paper-style table (learner × MAP, NDCG@10, P@10, seconds) and the per-fold MAP of every learner."""
        names = list(self.results)
        w = max([len("learner")] + [len(n) for n in names])
        lines = [f"{'learner':<{w}}  {'MAP':>6}  {'NDCG@10':>7}  {'P@10':>6}  {'NDCG@5':>6}  {'P@5':>6}  {'train s':>8}  {'cpu s':>8}"]
        for n in names:
            m = self.mean(n)
            lines.append(f"{n:<{w}}  {m['MAP']:6.4f}  {m['NDCG@10']:7.4f}  {m['P@10']:6.4f}  {m['NDCG@5']:6.4f}  "
                         f"{m['P@5']:6.4f}  {m['seconds']:8.1f}  {m['cpu_seconds']:8.1f}")
        lines.append("")
        lines.append(f"{'MAP per fold':<{w}}  " + "  ".join(f"{'Fold' + str(k):>6}" for k in self.folds))
        for n in names:
            by_fold = {r.fold: r for r in self.results[n]}
            lines.append(f"{n:<{w}}  " + "  ".join(f"{by_fold[k].measures['MAP']:6.4f}" if k in by_fold else f"{'-':>6}"
                                                   for k in self.folds))
        first = next(iter(self.results.values()), None)
        if first:
            q = sum(r.n_test_queries for r in first)
            z = sum(r.n_test_queries_without_relevant for r in first)
            lines.append("")
            lines.append(f"Eval-Score-4.0.pl semantics: relevant = label >= {self.rel:g} (MAP, P@k); NDCG gain "
                         f"2^label - 1, NDCG@k = 0 for queries of < k documents; {z} of {q} test queries have no "
                         "relevant document and count 0. Seconds (wall clock; CPU of this process): training + model "
                         "selection on vali, all folds.")
        for n in names:
            done = len(self.results[n])
            if done < len(self.folds):
                lines.append(f"{n}: {done} of {len(self.folds)} folds only (run interrupted): its means are over those")
        for n, why in self.skipped.items():
            lines.append(f"{n}: skipped ({why})")
        return "\n".join(lines)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def fit_learner(name: str, train: Split, vali: Split, rel: float = 1, grid: Optional[Sequence[dict]] = None,
                threads: int = 1) -> Fitted:
    """Train learner ``name`` on ``train`` with model selection on ``vali`` (its grid, or ``grid``)."""
    learner = LEARNERS[name]
    kwargs = {"threads": threads} if learner.lightgbm else {}
    return learner.fit(train, vali, rel, tuple(grid if grid is not None else learner.grid), **kwargs)


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
    """The LETOR protocol (module docstring) on ``directory/Fold1..FoldK`` for ``learners`` (names of
    :data:`LEARNERS`, default all) with relevance threshold ``rel``; ``folds`` restricts the folds.
    LightGBM learners are skipped, with one warning, when LightGBM is not installed. ``threads``: LightGBM's
    threads. ``progress`` is called with every :class:`FoldResult` as it is measured and the results so far
    (e.g. to save them: a long run interrupted keeps its finished folds)."""
    rel = check_rel(rel)
    names = learner_names(learners)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    paths = discover_folds(directory, folds)
    t = time.perf_counter()
    data = load_folds(paths)
    out = LetorResults(str(directory), rel, list(data), parse_seconds=time.perf_counter() - t)
    n_lines = sum(len(s.labels) for f in data.values() for s in (f.train, f.vali, f.test))
    log.info("read %d folds of %s: %d lines, %d features (%.1fs)", len(data), directory, n_lines,
             next(iter(data.values())).train.raw.shape[1], out.parse_seconds)
    if any(LEARNERS[n].lightgbm for n in names) and not _lightgbm_available():
        skipped = [n for n in names if LEARNERS[n].lightgbm]
        warnings.warn(f"LightGBM is not installed: {', '.join(skipped)} skipped "
                      "(pip install pyterrier-svmmap[peers])", stacklevel=2)
        for n in skipped:
            out.skipped[n] = "LightGBM is not installed"
        names = [n for n in names if n not in skipped]
    for k, fold in data.items():
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
                             _jsonable(fitted.chosen), _jsonable(fitted.selection), fold.test.n_queries,
                             fold.test.queries_without_relevant(rel), cpu)
            out.results[name].append(res)
            log.info("%s Fold%d: test MAP %.4f NDCG@10 %.4f (%s; %.1fs)", name, k, res.measures["MAP"],
                     res.measures["NDCG@10"], ", ".join(f"{a}={b:g}" if isinstance(b, float) else f"{a}={b}"
                                                        for a, b in res.chosen.items() if a != "validation"), seconds)
            if progress is not None:
                progress(res, out)
    return out


def write_json(results: LetorResults, path: Union[str, Path]) -> None:
    """Write :meth:`LetorResults.to_json` to ``path``."""
    Path(path).write_text(json.dumps(results.to_json(), indent=1) + "\n")
