"""The one selection engine, :func:`search`: both protocols (:data:`PAPER`, :meth:`Protocol.auto`) train a
learner's settings through its callbacks, score them on held-out queries and keep one (docs/model-selection.md)."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.layout import EncodedQueries, FeatureLayout
from pyterrier_svmmap.features.matrices import FeatureMatrix
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.selection.grids import (DEFAULT_ALPHA, DEFAULT_MIN_VALID_QUERIES, Setting, cv_folds,
                                              evidence_source, features_name, is_auto_c, resolve_c_grid,
                                              setting_levels)
from pyterrier_svmmap.selection.reference import (HeldOutRanking, fallback_model, fold_best_functions,
                                                  known_best_function, queries_best_function)
from pyterrier_svmmap.selection.rule import Choice, Selection, choose, column_means
from pyterrier_svmmap.string_codes import sorted_string_codes

#: ``train(queries, grid, setting, fold, shards, encoded, *, parts=None, seeds=None) -> (layout, results, prior
#: function)``: a path of C; ``parts`` (the folds' data, the folds trained on) asks for each result's ``points``,
#: ``seeds`` (such points per C, the folds ``queries`` are made of) gives each C its constraints there to start from
TrainPath = Callable[..., Tuple[FeatureLayout, list, Optional[int]]]

#: ``make_layout(queries, features) -> FeatureLayout`` fitted on ``queries`` (labels unused)
MakeLayout = Callable[[Queries, Any], FeatureLayout]

#: ``fit_map(job, n) -> [job(0), …, job(n − 1)]``: runs a picklable job's fits, e.g. on a shard executor
FitMap = Callable[[Callable[[int], Any], int], list]

#: a trained path: (layout, one training result per C, the prior's base function or None)
Path = Tuple[FeatureLayout, list, Optional[int]]

#: below this many candidates a cross-validation's fits run side by side, one thread each (too small for more)
CONCURRENT_FOLDS_MAX_CANDIDATES = 1 << 20

#: the folds on which :func:`cross_validate` races the richer settings before it trains them on the others
RACE_FOLDS = 2

#: the fold whose paths are trained first, over every fold's queries: its points seed the other folds and the refit
SCOUT_FOLD = 0

#: ``share_cuts="auto"`` shares cutting planes between folds from this many cross-validated candidates on: below,
#: a pass costs too little for the first fold's pass over its held-out queries to pay (CPU time of ``SVMMap()``'s
#: fit on Vaswani: 1.1× slower at 75 k candidates, 1.17× faster at 104 k; 1.33–1.39× at 200 k, 1.6× at 0.9 M;
#: docs/performance.md)
SHARE_CUTS_MIN_CANDIDATES = 100_000


@dataclass(frozen=True)
class Protocol:
    """How :func:`search` gathers evidence, decides and makes the final model: the level ``alpha`` of
    :func:`~.rule.choose` (None: arg-max); whether the reference function competes (``fallback``), training ∪
    validation is pooled (``pool``), every path is refitted (``refit_every``), the fold models are averaged in
    (``average_folds``), settings are scored by fold MAPs (``fold_means``), richer classes raced (``race``) and
    cutting planes shared between a setting's folds and its refit (``share_cuts``: True, False or ``"auto"``, from
    :data:`SHARE_CUTS_MIN_CANDIDATES` on; :func:`cross_validate`)."""
    alpha: Optional[float] = None
    fallback: bool = False
    pool: bool = False
    min_valid_queries: Optional[int] = 1
    refit_every: bool = True
    average_folds: bool = False
    fold_means: bool = True
    race: bool = False
    share_cuts: Union[bool, str] = False

    @classmethod
    def auto(cls, alpha: Optional[float] = DEFAULT_ALPHA, min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES,
             average_folds: bool = True, race: bool = True, share_cuts: Union[bool, str] = "auto") -> "Protocol":
        return cls(alpha=alpha, fallback=True, pool=True, min_valid_queries=min_valid_queries, refit_every=False,
                   average_folds=average_folds, fold_means=False, race=race, share_cuts=share_cuts)


#: Yue et al.'s protocol (``selection="validation"``)
PAPER = Protocol()


@dataclass
class HeldOut:
    """What :func:`cross_validate` measured: ``fold``, ``ap`` (queries × columns), ``fallback_ap``, ``fold_weights``
    and each setting's ``points`` (its :data:`SCOUT_FOLD` path's, per C; None without shared cuts)."""
    fold: np.ndarray
    ap: np.ndarray
    fallback_ap: Optional[np.ndarray]
    fold_weights: List[List[np.ndarray]]
    points: List[Optional[list]]

    def seeds(self, s: int, n_c: Optional[int] = None, fold: Optional[int] = None) -> Optional[tuple]:
        """``seeds`` of a :data:`TrainPath` for setting ``s``'s first ``n_c`` C on the training queries of
        ``fold`` (None: every query)."""
        if self.points[s] is None:
            return None
        folds = [k for k in range(int(self.fold.max()) + 1) if k != fold]
        return self.points[s][:n_c], folds

    def fold_means(self) -> np.ndarray:
        """Each fold's MAP of every column and, last, of the fallback when measured (folds × columns)."""
        E = self.ap if self.fallback_ap is None else np.column_stack([self.ap, self.fallback_ap])
        return np.stack([column_means(E[self.fold == k]) for k in range(int(self.fold.max()) + 1)])


class FoldRankings:
    """Each fold's held-out queries and their :class:`HeldOutRanking` (ties by the fold's reference function),
    found on first use and kept for every setting and the fallback of that fold."""

    def __init__(self, queries: Queries, fold: np.ndarray, ties: Sequence[int]):
        self.queries, self.fold, self.ties = queries, fold, list(ties)
        self._kept: Dict[int, HeldOutRanking] = {}

    def __call__(self, k: int) -> HeldOutRanking:
        if k not in self._kept:                 # two threads may both make it: the same ranking
            self._kept[k] = HeldOutRanking(self.queries.subset(self.fold == k), self.ties[k])
        return self._kept[k]


@dataclass
class FoldFits:
    """The (fold, setting) fits of :func:`cross_validate` as one picklable job: ``job(j)`` is ``pairs[j]``'s. With
    ``scout`` the fits are :data:`SCOUT_FOLD`'s, over every fold's queries, and return their points; else each
    starts from its setting's points in ``held``, if any."""
    queries: Queries
    fold: np.ndarray
    settings: List[Setting]
    grids: List[List[float]]
    train_path: TrainPath
    encodings: List[EncodedQueries]
    ties: List[int]
    pairs: List[Tuple[int, int]]
    held: HeldOut
    scout: bool
    rankings: FoldRankings

    def __call__(self, j: int) -> Tuple[List[np.ndarray], np.ndarray, Optional[list]]:
        k, s = self.pairs[j]
        held = self.fold == k
        tr = known_best_function(self.queries.subset(~held), self.ties[k])
        seeds = self.held.seeds(s, fold=k)
        shared: Dict[str, Any] = {} if seeds is None else dict(seeds=seeds)    # a TrainPath without them: as before
        if self.scout:                          # every fold's φ: the oracle's parts, the held-out fold's among them
            masks = [self.fold == i for i in range(len(self.ties))]
            encoded = [self.encodings[s].subset(m) for m in masks]
            sizes = np.diff(self.queries.offsets)
            parts = [(e.X, self.queries.labels[np.repeat(m, sizes)], e.offsets) for e, m in zip(encoded, masks)]
            shared = dict(parts=(parts, [i for i in range(len(masks)) if i != k]))
            trained, X_te = self.encodings[s], encoded[k].X         # with parts the path reads only the layout
        else:
            trained, X_te = self.encodings[s].subset(~held), self.encodings[s].subset(held).X
        _, results, _ = self.train_path(tr, self.grids[s], self.settings[s], k, None, trained, **shared)
        ranking = self.rankings(k)
        return ([r.w for r in results], np.stack([ranking.ap(X_te.dot(r.w)) for r in results], axis=1),
                [r.points for r in results] if self.scout else None)


@dataclass
class SettingFits:
    """Every setting's path on the training queries as one picklable job."""
    queries: Queries
    settings: List[Setting]
    grids: List[List[float]]
    train_path: TrainPath
    encodings: List[EncodedQueries]
    shards: Optional[np.ndarray]

    def __call__(self, s: int) -> Path:
        return self.train_path(self.queries, self.grids[s], self.settings[s], None, self.shards, self.encodings[s])


def cross_validate(queries: Queries, settings: Sequence[Setting], grids: Sequence[Sequence[float]],
                   train_path: TrainPath, encodings: Sequence[EncodedQueries], cv: int, random_state: Optional[int],
                   fallback: Optional[Callable[[Queries], Tuple[FeatureLayout, np.ndarray, int]]] = None,
                   fit_map: Optional[FitMap] = None, raced: Sequence[int] = (),
                   go_on: Optional[Callable[[HeldOut], bool]] = None, share_cuts: bool = False) -> HeldOut:
    """``cv``-fold cross-validation: each held-out query's AP under every (setting, C) and the ``fallback``; the
    ``raced`` settings run on the first :data:`RACE_FOLDS` folds, and on the rest if ``go_on`` says so.

    With ``share_cuts``, each setting's :data:`SCOUT_FOLD` path is trained first, its oracle passing over every
    fold's queries and keeping each fold's sums (``held.points``); every other fold's path, and the refit, then
    start each C from their exact constraints at the scout's points (:mod:`pyterrier_svmmap.svm.shared_cuts`).
    Each path still converges to its own duality gap, Σ C ε, so its model is the plain path's within that gap,
    from fewer passes over the data: the folds share most of their queries."""
    settings = list(settings)
    G = len(grids[0])
    fold = cv_folds(queries.n_queries, cv, random_state, len(settings) * G)
    ties = fold_best_functions(queries, fold, cv)                     # each fold's tie-break function
    rankings = FoldRankings(queries, fold, ties)
    raced = list(raced) if go_on is not None and cv > RACE_FOLDS else []
    first = [(k, s) for k in range(cv) for s in range(len(settings)) if s not in raced or k < RACE_FOLDS]
    rest = [(k, s) for k in range(RACE_FOLDS, cv) for s in raced]
    held = HeldOut(fold, np.full((queries.n_queries, len(settings) * G), np.nan), None, [[None] * cv for _ in settings],
                   [None] * len(settings))
    side_by_side = fit_map is None and len(queries.raw) < CONCURRENT_FOLDS_MAX_CANDIDATES
    if fit_map is None:                     # in this process: side by side on small data (the same results)
        fit_map = threads.run_concurrently if side_by_side else lambda job, n: [job(j) for j in range(n)]

    def fits(pairs: List[Tuple[int, int]], scout: bool = False) -> FoldFits:
        return FoldFits(queries, fold, settings, [list(g) for g in grids], train_path, list(encodings), ties, pairs,
                        held, scout, rankings)

    def record(pairs: List[Tuple[int, int]], paths: list, scout: bool = False) -> None:
        for (k, s), (w, held_ap, points) in zip(pairs, paths):
            held.ap[fold == k, s * G:(s + 1) * G] = held_ap
            held.fold_weights[s][k] = np.stack(w)
            if scout:
                held.points[s] = points

    def fallback_fold(k: int) -> None:
        layout, w, _ = fallback(known_best_function(queries.subset(fold != k), ties[k]))
        held.fallback_ap[fold == k] = rankings(k).model_ap(layout, w)     # ties by ties[k], the fallback's function
    if fallback is not None:
        held.fallback_ap = np.empty(queries.n_queries)
    scouts = [(k, s) for k, s in first if k == SCOUT_FOLD] if share_cuts else []
    first = [pair for pair in first if pair not in scouts]
    if side_by_side:                        # one round: a fold starts once its setting's scout, if any, has ended
        first.sort(key=lambda pair: pair[1])            # in the order of the scouts: the pool starts tasks in order
        tasks = [fits(scouts, True), fits(first)]
        n_s, n_f = len(scouts), len(first)

        def task(i: int):
            if i < n_s:
                out = tasks[0](i)
                record(scouts[i:i + 1], [out], scout=True)
                return out
            return tasks[1](i - n_s) if i < n_s + n_f else fallback_fold(i - n_s - n_f)
        after = [[]] * n_s + [[scouts.index((SCOUT_FOLD, s))] if scouts else [] for _, s in first] + \
            [[]] * (cv if fallback else 0)
        record(first, threads.run_concurrently(task, len(after), after)[n_s:n_s + n_f])
    else:                                   # a cluster's fit_map, or one fit at a time on large data
        if scouts:
            record(scouts, fit_map(fits(scouts, True), len(scouts)), scout=True)
        record(first, fit_map(fits(first), len(first)))
        for k in range(cv) if fallback is not None else ():
            fallback_fold(k)
    if rest and go_on(held):
        record(rest, fit_map(fits(rest), len(rest)))
    return held


def encode_settings(queries: Queries, settings: Sequence[Setting], make_layout: MakeLayout) -> List[EncodedQueries]:
    """φ of ``queries`` for every setting, one layout per distinct feature block shared by settings and folds. A
    block's values depend on its kind and the scores' statistics alone
    (:meth:`~pyterrier_svmmap.features.encoder.FeatureEncoder.fit_statistics`), so a combination of blocks
    encoded already (``bins+raw``) is made of theirs, the same arrays."""
    by_block: Dict[str, EncodedQueries] = {}
    for features, _ in settings:
        name = features_name(features)
        if name in by_block:
            continue
        layout, parts = make_layout(queries, features), name.split("+")
        if len(parts) > 1 and all(part in by_block for part in parts) and not layout.bias:
            X = FeatureMatrix([block for part in parts for block in by_block[part].X.blocks])
            by_block[name] = EncodedQueries(layout, X, by_block[parts[0]].offsets)
        else:
            by_block[name] = EncodedQueries.of(layout, queries.raw, queries.offsets)
    return [by_block[features_name(features)] for features, _ in settings]


def validation_evidence(paths: Sequence[Path], valid: Queries, tie: int) -> np.ndarray:
    """The validation queries' AP under every (setting, C) of ``paths`` (queries × settings·C), ties by ``tie``."""
    codes = sorted_string_codes(valid.docnos)[0] if valid.docnos is not None else None
    ranking = HeldOutRanking(valid, tie, codes)
    columns = []
    for layout, results, _ in paths:
        X = layout.transform(valid.raw, valid.offsets)
        columns += [ranking.ap(X.dot(r.w)) for r in results]
    return np.stack(columns, axis=1)


@dataclass
class Search:
    """What :func:`search` decided and the model it made (``setting`` -1 and ``C`` 0 for the fallback)."""
    selection: Selection
    choice: Optional[Choice]
    settings: List[Setting]
    grids: List[List[float]]
    fit: Optional[Queries]
    paths: Dict[int, Path]
    layout: FeatureLayout
    coef: np.ndarray
    coefs: np.ndarray
    C: float
    setting: int
    function: Optional[int]
    result: Any
    averaged_models: int
    tie_function: int

    @property
    def fallback(self) -> bool:
        return self.setting < 0

    def path(self, with_prior: bool = True, with_training: bool = False) -> List[dict]:
        """``path_``: an entry per (features, prior, C), then the fallback's; ``with_training`` adds training data."""
        out = self.selection.path(self.settings, self.grids, with_prior)
        G = len(self.grids[0])
        for s, (_, results, _) in self.paths.items() if with_training else ():
            for i, res in enumerate(results):
                out[s * G + i].update(n_iter=res.n_iter, oracle_calls=res.oracle_calls, converged=bool(res.converged),
                                      gap=float(res.duality_gap), primal=float(res.history[-1]["primal"]),
                                      seconds=float(res.history[-1]["seconds"]))
        return out

    def record(self, path: List[dict]) -> Optional[dict]:
        """``choice_``: the :class:`~pyterrier_svmmap.selection.rule.Choice` with its source and entries, or None."""
        if self.choice is None:
            return None
        return dict(self.choice.as_dict(), source=self.selection.method,
                    chosen=path[-1 if self.choice.fallback else self.choice.index],
                    best_learned=path[self.choice.best], averaged_models=self.averaged_models)


def search(train: Queries, valid: Optional[Queries], settings: Sequence[Setting], C, train_path: TrainPath,
           make_layout: MakeLayout, protocol: Protocol = PAPER, *, cv: int = 5, random_state: Optional[int] = 0,
           prior_scale: float = 1.0, shards: Optional[np.ndarray] = None, fit_map: Optional[FitMap] = None) -> Search:
    """Choose among ``settings`` × their C values and make the model, as ``protocol`` says.

    The evidence: enough validation queries, else ``cv``-fold cross-validation (over ``train`` ∪ ``valid`` with
    ``protocol.pool``), or nothing for one setting; the decision: :func:`~.rule.choose`. Each setting's layout is
    fitted once on the final model's queries and its C resolved against that φ."""
    settings = list(settings)
    S = len(settings)
    source = evidence_source(valid.n_queries, protocol.min_valid_queries) if valid is not None else "cv"
    fit = train
    if source == "cv" and valid is not None and protocol.pool:
        fit, shards = pooled(train, valid), None
    encodings = encode_settings(fit, settings, make_layout)
    grids = [resolve_c_grid(C, e.spread if is_auto_c(C) else 0.0) for e in encodings]
    G = len(grids[0])
    levels = setting_levels(settings, G)
    if source == "cv" and (S * G == 1 or (protocol.fallback and fit.n_queries < cv)):
        source = "none"
    fallback = lambda q: fallback_model(q, lambda r: make_layout(r, "raw"), prior_scale)       # noqa: E731
    paths: Dict[int, Path] = {}
    F, held = None, None
    if source == "validation":
        job = SettingFits(train, settings, grids, train_path, encodings, shards)
        paths = dict(enumerate(fit_map(job, S) if fit_map is not None else [job(s) for s in range(S)]))
        scored = [paths[s] for s in range(S)]
        if protocol.fallback:                       # scored beside the settings: one tie order of the queries
            layout, w, _ = fallback(train)
            scored.append((layout, [SimpleNamespace(w=w)], None))   # a result of weights alone
        E = validation_evidence(scored, valid, queries_best_function(train))
        if protocol.fallback:
            E, F = E[:, :-1], E[:, -1]
    elif source == "cv":
        raced = [] if not (protocol.race and protocol.fallback) else \
            sorted({c // G for level in levels[1:] for c in level})
        held = cross_validate(fit, settings, grids, train_path, encodings, cv, random_state, fit_map=fit_map,
                              fallback=fallback if protocol.fallback else None,
                              raced=raced, go_on=lambda h: race_richer(h, levels, protocol.alpha),
                              share_cuts=protocol.share_cuts is True or (
                                  protocol.share_cuts == "auto" and len(fit.raw) >= SHARE_CUTS_MIN_CANDIDATES))
        E, F = held.ap, held.fallback_ap
        if any(w is None for s in raced for w in held.fold_weights[s]):
            levels = levels[:1]                                     # the richer classes lost the race
    else:
        E = np.zeros((0, S * G))
    fold_scores = None if held is None else held.fold_means()
    evidence = fold_scores[:, :S * G] if held is not None and protocol.fold_means else E
    choice = choose(evidence, F, protocol.alpha, levels=levels) if len(E) else None
    means = column_means(evidence) if len(E) else np.full(S * G, np.nan)
    scores = [float(x) for x in means] + ([] if F is None else [float(F.mean())])
    chosen = (len(scores) - 1 if choice.fallback else choice.index) if choice is not None else 0
    return _model(Selection(source, scores, fold_scores, chosen), choice, settings, grids, fit, paths, held,
                  train_path, encodings, protocol, fallback, shards if fit is train else None)


def race_richer(held: HeldOut, levels: Sequence[Sequence[int]], alpha: Optional[float]) -> bool:
    """Whether the richer model classes beat the simplest level's choice on the first :data:`RACE_FOLDS` folds."""
    simple = list(levels[0])
    first = choose(held.ap[:, simple], held.fallback_ap, alpha)
    current = held.fallback_ap if first.fallback else held.ap[:, simple[first.index]]
    rows = held.fold < RACE_FOLDS
    richer = [c for level in levels[1:] for c in level]
    return bool(column_means(held.ap[rows][:, richer] - current[rows, None]).max() > 0)


def from_paths(paths: Sequence[Path], settings: Sequence[Setting], grids: Sequence[Sequence[float]],
               valid: Optional[Queries], tie: int) -> Search:
    """:data:`PAPER`'s decision among paths trained elsewhere: the best validation MAP on ``valid``, or the first."""
    settings, grids = list(settings), [list(g) for g in grids]
    paths = dict(enumerate(paths))
    if valid is None:
        E, source = np.zeros((0, len(settings) * len(grids[0]))), "none"
    else:
        E, source = validation_evidence([paths[s] for s in range(len(settings))], valid, tie), "validation"
    choice = choose(E, None, None) if len(E) else None
    means = column_means(E)
    selection = Selection(source, [float(x) for x in means], None, 0 if choice is None else choice.index)
    return _model(selection, choice, settings, grids, None, paths, None, None, None, PAPER, None, None, tie)


def pooled(train: Queries, valid: Queries) -> Queries:
    """``train`` ∪ the usable queries of ``valid``, with the relevant counts of both; ``train``'s reference."""
    usable = valid.subset(valid.usable())
    tr_n, va_n = train.n_relevant, usable.n_relevant
    if tr_n is not None or va_n is not None:
        tr_n = tr_n if tr_n is not None else np.add.reduceat(train.labels, train.offsets[:-1])
        va_n = va_n if va_n is not None else \
            np.add.reduceat(usable.labels, usable.offsets[:-1]) if len(usable.labels) else np.zeros(0)
    fit = Queries.concatenate([Queries(train.raw, train.labels, train.offsets, n_relevant=tr_n),
                               Queries(usable.raw, usable.labels, usable.offsets, n_relevant=va_n)])
    fit.reference = train.reference
    return fit


def _model(selection: Selection, choice: Optional[Choice], settings, grids, fit: Optional[Queries],
           paths: Dict[int, Path], held: Optional[HeldOut], train_path, encodings, protocol: Protocol,
           fallback, shards, tie: Optional[int] = None) -> Search:
    """The final model: the fallback, or the chosen setting's path, averaged with the fold models when asked."""
    G = len(grids[0])
    tie = queries_best_function(fit) if tie is None else tie
    record = dict(selection=selection, choice=choice, settings=settings, grids=grids, fit=fit, tie_function=tie)
    if choice is not None and choice.fallback:
        layout, w, f = fallback(fit)
        return Search(**record, paths={}, layout=layout, coef=np.array(w, dtype=float),
                      coefs=np.array([w], dtype=float), C=0.0, setting=-1, function=f, result=None, averaged_models=1)
    s, i = divmod(selection.chosen, G)
    if s not in paths:
        for t in range(len(settings)) if protocol.refit_every else [s]:
            grid = grids[t] if protocol.refit_every else grids[t][:i + 1]
            seeds = None if held is None else held.seeds(t, len(grid))
            paths[t] = train_path(fit, grid, settings[t], None, shards, encodings[t],
                                  **({} if seeds is None else dict(seeds=seeds)))
    layout, results, f = paths[s]
    kept = results[i]
    coef, averaged = np.array(kept.w, dtype=float), 1
    if held is not None and protocol.average_folds:
        # bagging at no extra fit: the folds share the final layout, so their weights mean the same
        fold_w = held.fold_weights[s]
        coef = (np.sum([w[i] for w in fold_w], axis=0) + kept.w) / (len(fold_w) + 1)
        averaged = len(fold_w) + 1
    return Search(**record, paths=paths, layout=layout, coef=coef, coefs=np.stack([r.w for r in results]),
                  C=grids[s][i], setting=s, function=f, result=kept, averaged_models=averaged)
