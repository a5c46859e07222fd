"""The one selection engine: trains a learner's settings, scores them on held-out queries, and keeps one.

:func:`search` is what every structural SVM with more than one setting (feature blocks × priors × a path of C)
runs; the learner only trains (a :data:`TrainPath` callback) and fits layouts (:data:`MakeLayout`). A
:class:`Protocol` configures it:

* :data:`PAPER` — Yue et al.'s protocol (``selection="validation"``): the setting with the best validation MAP
  ("The model which performed best on the validation set was selected", §5), or without validation queries
  the best mean of ``cv`` folds' MAPs over the training queries; every setting's path trained on the training
  queries.
* :meth:`Protocol.auto` — the package's default (``selection="auto"``): every setting and the *fallback* — the
  reference function itself (:func:`~pyterrier_svmmap.selection.reference.fallback_model`) — scored per
  held-out query by cross-validation over every judged query (training ∪ validation), the learned arg-max kept
  only when the max-gain test of :func:`~pyterrier_svmmap.selection.rule.choose` says its gain over the
  fallback is more likely real than an artefact of picking the best of many; then refitted on all judged
  queries up to the chosen C and averaged with the fold models.

Why (docs/model-selection.md, measured on every collection of ../shared/data): a grid's arg-max on five
validation queries mostly picks noise, and even 157 validation queries (MQ2008) were too few to see
learning's ~0.01 MAP gain over the best feature in 3 of 5 folds, where cross-validation over the 627 judged
queries saw it in all 5.

The independent fits (the (fold, setting) paths of :func:`cross_validate`, the settings on validation queries)
are module-level picklable jobs (:class:`FoldFits`, :class:`SettingFits`) that a :data:`FitMap` may run
elsewhere, e.g. on a Dask cluster; each depends on its inputs only, so the model is the same wherever they run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.features.layout import EncodedQueries, FeatureLayout
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.selection.grids import (DEFAULT_ALPHA, DEFAULT_MIN_VALID_QUERIES, Setting, cv_folds,
                                              evidence_source, features_name, resolve_c_grid, setting_levels)
from pyterrier_svmmap.selection.reference import HeldOutRanking, fallback_model, queries_best_function
from pyterrier_svmmap.selection.rule import Choice, Selection, choose, column_means
from pyterrier_svmmap.string_codes import sorted_string_codes

#: ``train(queries, grid, (features, prior), fold, shards, encoded) -> (layout, results, prior function or None)``:
#: the learner's path of C on ``queries`` (``results[i].w`` the weights at ``grid[i]``); ``fold`` the
#: cross-validation fold (None for a final fit), ``shards`` the queries per shard or None, ``encoded`` φ of
#: ``queries`` (:class:`~pyterrier_svmmap.features.layout.EncodedQueries`, its layout fitted on these or on more
#: queries)
TrainPath = Callable[[Queries, Sequence[float], Setting, Optional[int], Optional[np.ndarray], EncodedQueries],
                     Tuple[FeatureLayout, list, Optional[int]]]

#: ``make_layout(queries, features) -> FeatureLayout``: the learner's layout of feature blocks ``features``
#: fitted on ``queries`` (labels unused)
MakeLayout = Callable[[Queries, Any], FeatureLayout]

#: ``fit_map(job, n) -> [job(0), …, job(n − 1)]``: how the independent fits of a search run. ``job`` is a
#: picklable callable of module level (:class:`FoldFits`, :class:`SettingFits`), so that a shard executor may
#: run the fits on other processes (:mod:`~pyterrier_svmmap.svm.executors`); None runs them here.
FitMap = Callable[[Callable[[int], Any], int], list]

#: a trained path: (layout, one training result per C, the prior's base function or None)
Path = Tuple[FeatureLayout, list, Optional[int]]

#: below this many candidates, the fits of a cross-validation run side by side (one thread each,
#: :func:`~pyterrier_svmmap.threads.run_concurrently`): each is too small for its kernels to use several
#: threads well; above it they run one after another, each on every thread, holding one fold's φ at a time
CONCURRENT_FOLDS_MAX_CANDIDATES = 1 << 20

#: the folds on which :func:`cross_validate` races the richer settings before it trains them on the others
RACE_FOLDS = 2


@dataclass(frozen=True)
class Protocol:
    """How :func:`search` gathers evidence, decides and makes the final model.

    Attributes
    ----------
    alpha : float or None
        The level of :func:`~pyterrier_svmmap.selection.rule.choose`'s tests; None: the plain arg-max.
    fallback : bool
        The reference function competes with the settings; and with fewer judged queries than folds the first
        setting is trained at its first C instead of an error.
    pool : bool
        Cross-validate over training ∪ validation queries and fit the final model on all of them.
    min_valid_queries : int or None
        A validation set of at least this many queries is the evidence alone (None: never).
    refit_every : bool
        After cross-validation, train every setting's whole path on the fit queries (else the chosen setting
        up to the chosen C).
    average_folds : bool
        Average the final model with the cross-validation's fold models at the chosen setting.
    fold_means : bool
        A setting's cross-validated score is the mean of its folds' MAPs (else of its held-out queries' APs).
    race : bool
        Cross-validation races the richer model classes (:func:`race_richer`): trained on the first
        :data:`RACE_FOLDS` folds, they go on to the others only when their best setting beats the simpler
        level's choice on those folds' queries.
    """
    alpha: Optional[float] = None
    fallback: bool = False
    pool: bool = False
    min_valid_queries: Optional[int] = 1
    refit_every: bool = True
    average_folds: bool = False
    fold_means: bool = True
    race: bool = False

    @classmethod
    def auto(cls, alpha: Optional[float] = DEFAULT_ALPHA, min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES,
             average_folds: bool = True, race: bool = True) -> "Protocol":
        """The package's default rule (``selection="auto"``) with its parameters."""
        return cls(alpha=alpha, fallback=True, pool=True, min_valid_queries=min_valid_queries, refit_every=False,
                   average_folds=average_folds, fold_means=False, race=race)


#: Yue et al.'s protocol (``selection="validation"``)
PAPER = Protocol()


@dataclass
class HeldOut:
    """What :func:`cross_validate` measured: ``fold`` (each query's fold), ``ap`` (queries × settings·C, the
    held-out AP of each query under every (setting, C), setting-major), ``fallback_ap`` (per query, under the
    fold's fallback model; None without one) and ``fold_weights`` (per setting, per fold, the weights of
    every C: the folds share the final model's layout, so their weights mean what its weights mean)."""
    fold: np.ndarray
    ap: np.ndarray
    fallback_ap: Optional[np.ndarray]
    fold_weights: List[List[np.ndarray]]

    def fold_means(self) -> np.ndarray:
        """Each fold's MAP of every (setting, C) and, last, of the fallback when measured: (folds × columns)."""
        E = self.ap if self.fallback_ap is None else np.column_stack([self.ap, self.fallback_ap])
        return np.stack([column_means(E[self.fold == k]) for k in range(int(self.fold.max()) + 1)])


@dataclass
class FoldFits:
    """The (fold, setting) fits of :func:`cross_validate` as one job: ``job(j)`` trains setting ``s`` on the
    folds other than ``k``, ``(k, s) = pairs[j]``, and returns (the weights of every C, the held-out queries'
    APs under each C, queries × C). A pure function of its fields, so that it gives the same bits in any
    process."""
    queries: Queries
    fold: np.ndarray
    settings: List[Setting]
    grids: List[List[float]]
    train_path: TrainPath
    encodings: List[EncodedQueries]
    ties: List[int]
    pairs: List[Tuple[int, int]]

    def __call__(self, j: int) -> Tuple[List[np.ndarray], np.ndarray]:
        k, s = self.pairs[j]
        held = self.fold == k
        tr, te = self.queries.subset(~held), self.queries.subset(held)
        tr.__dict__["_best_function"] = self.ties[k]                  # queries_best_function(tr), known
        _, results, _ = self.train_path(tr, self.grids[s], self.settings[s], k, None, self.encodings[s].subset(~held))
        X_te, ranking = self.encodings[s].subset(held).X, HeldOutRanking(te, self.ties[k])
        return [r.w for r in results], np.stack([ranking.ap(X_te.dot(r.w)) for r in results], axis=1)


@dataclass
class SettingFits:
    """Every setting trained on the training queries (the evidence from validation queries) as one job:
    ``job(s)`` is setting ``s``'s path."""
    queries: Queries
    settings: List[Setting]
    grids: List[List[float]]
    train_path: TrainPath
    encodings: List[EncodedQueries]
    shards: Optional[np.ndarray]

    def __call__(self, s: int) -> Path:
        return self.train_path(self.queries, self.grids[s], self.settings[s], None, self.shards, self.encodings[s])


def run_here(job: Callable[[int], Any], n: int, n_candidates: int) -> list:
    """The fits of a search in this process: side by side on the threads of
    :func:`~pyterrier_svmmap.threads.current` (one thread each) below :data:`CONCURRENT_FOLDS_MAX_CANDIDATES`
    candidates, else one after another, each on every thread; the same results either way."""
    if n_candidates < CONCURRENT_FOLDS_MAX_CANDIDATES:
        return threads.run_concurrently(job, n)
    return [job(j) for j in range(n)]


def cross_validate(queries: Queries, settings: Sequence[Setting], grids: Sequence[Sequence[float]],
                   train_path: TrainPath, encodings: Sequence[EncodedQueries], cv: int, random_state: Optional[int],
                   fallback: Optional[Callable[[Queries], Tuple[FeatureLayout, np.ndarray, int]]] = None,
                   fit_map: Optional[FitMap] = None, raced: Sequence[int] = (),
                   go_on: Optional[Callable[[HeldOut], bool]] = None) -> HeldOut:
    """``cv``-fold cross-validation over ``queries``: for each fold, the path of C of every setting (its C
    values ``grids[s]``, all of the same length) trained on the other folds
    (``train_path(train, grids[s], setting, fold, None, encoded)``, with the rows of ``encodings[s]``, φ of
    ``queries``) and each held-out query's AP under each C's model, ranked with the training part's reference
    function breaking ties; ``fallback`` (optional) makes a model (layout, w, tie-break function) of the
    training part whose held-out APs are measured too. ``fit_map`` runs the (fold, setting) fits
    (:class:`FoldFits`), by default in this process (:func:`run_here`).

    Racing: the settings ``raced`` are first trained on the first :data:`RACE_FOLDS` folds only, beside every
    other setting on every fold; they are completed when ``go_on`` says so of that evidence, else their APs on
    the other folds' queries stay NaN (and their fold weights None)."""
    settings = list(settings)
    G = len(grids[0])
    fold = cv_folds(queries.n_queries, cv, random_state, len(settings) * G)
    ap = np.full((queries.n_queries, len(settings) * G), np.nan)
    parts = [(queries.subset(fold != k), queries.subset(fold == k)) for k in range(cv)]
    ties = [queries_best_function(tr) for tr, _ in parts]             # each fold's tie-break function
    raced = list(raced) if go_on is not None and cv > RACE_FOLDS else []
    first = [(k, s) for k in range(cv) for s in range(len(settings)) if s not in raced or k < RACE_FOLDS]
    rest = [(k, s) for k in range(RACE_FOLDS, cv) for s in raced]
    weights: List[List[Optional[np.ndarray]]] = [[None] * cv for _ in settings]
    held = HeldOut(fold, ap, None, weights)

    def run(pairs: List[Tuple[int, int]]) -> None:
        job = FoldFits(queries, fold, settings, [list(g) for g in grids], train_path, list(encodings), ties, pairs)
        paths = fit_map(job, len(pairs)) if fit_map is not None else run_here(job, len(pairs), len(queries.raw))
        for (k, s), (w, held_ap) in zip(pairs, paths):
            ap[fold == k, s * G:(s + 1) * G] = held_ap
            weights[s][k] = np.stack(w)
    run(first)
    if fallback is not None:
        held.fallback_ap = np.empty(queries.n_queries)
        for k, (tr, te) in enumerate(parts):
            layout, w, f = fallback(tr)
            held.fallback_ap[fold == k] = HeldOutRanking(te, f).ap(layout.transform(te.raw, te.offsets).dot(w))
    if rest and go_on(held):
        run(rest)
    return held


def encode_settings(queries: Queries, settings: Sequence[Setting], make_layout: MakeLayout) -> List[EncodedQueries]:
    """φ of ``queries`` for every setting, one layout per distinct feature block fitted on ``queries`` and
    shared by the settings (and the folds) that use it."""
    by_block: Dict[str, EncodedQueries] = {}
    for features, _ in settings:
        name = features_name(features)
        if name not in by_block:
            by_block[name] = EncodedQueries.of(make_layout(queries, features), queries.raw, queries.offsets)
    return [by_block[features_name(features)] for features, _ in settings]


def validation_evidence(paths: Sequence[Path], valid: Queries, tie: int) -> np.ndarray:
    """Per-query AP of the validation queries under every (setting, C) of the trained ``paths``, setting-major
    (queries × settings·C); ties broken by base function ``tie``, then by the docnos when known."""
    codes = sorted_string_codes(valid.docnos)[0] if valid.docnos is not None else None
    ranking = HeldOutRanking(valid, tie, codes)
    columns = []
    for layout, results, _ in paths:
        X = layout.transform(valid.raw, valid.offsets)
        columns += [ranking.ap(X.dot(r.w)) for r in results]
    return np.stack(columns, axis=1)


@dataclass
class Search:
    """What :func:`search` decided, and the model it made.

    ``selection``: the evidence (:class:`~pyterrier_svmmap.selection.rule.Selection`: ``method`` —
    ``"validation"``, ``"cv"`` or ``"none"`` —, one score per (setting, C) in setting-major order and, with a
    fallback, a last one for it, ``fold_scores`` per cv fold, ``chosen`` the index kept); ``choice`` the decision
    (None when nothing was compared); ``settings``, their C values ``grids`` (one length); ``fit`` the queries the
    final model was fitted on (None when the paths were trained elsewhere); ``paths`` the final paths, by
    setting; the model: ``layout``, ``coef``, ``coefs`` (w of every C of its path), ``C`` (0 for the fallback),
    ``setting`` (index, -1 for the fallback), ``function`` (the prior's or fallback's base function, or None),
    ``result`` (the kept C's training result, None for the fallback), ``averaged_models`` and
    ``tie_function``."""
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
        """``path_``: one entry per (features, prior, C) with its score (``validation``; per fold ``cv_scores``),
        and a last entry ``fallback=True`` (C = 0) for the reference function when it was scored.
        ``with_prior=False`` leaves the prior out; ``with_training`` adds the training statistics of every
        (setting, C) that the final fits trained (iterations, duality gap, seconds, …)."""
        out = self.selection.path(self.settings, self.grids, with_prior)
        G = len(self.grids[0])
        for s, (_, results, _) in self.paths.items() if with_training else ():
            for i, res in enumerate(results):
                out[s * G + i].update(n_iter=res.n_iter, oracle_calls=res.oracle_calls, converged=bool(res.converged),
                                      gap=float(res.duality_gap), primal=float(res.history[-1]["primal"]),
                                      seconds=float(res.history[-1]["seconds"]))
        return out

    def record(self, path: List[dict]) -> Optional[dict]:
        """``choice_``: the :class:`~pyterrier_svmmap.selection.rule.Choice` as a dict with the evidence's
        ``source``, the ``chosen`` and the ``best_learned`` entries of ``path`` and ``averaged_models``; None
        when nothing was compared."""
        if self.choice is None:
            return None
        return dict(self.choice.as_dict(), source=self.selection.method,
                    chosen=path[-1 if self.choice.fallback else self.choice.index],
                    best_learned=path[self.choice.best], averaged_models=self.averaged_models)


def search(train: Queries, valid: Optional[Queries], settings: Sequence[Setting], C, train_path: TrainPath,
           make_layout: MakeLayout, protocol: Protocol = PAPER, *, cv: int = 5, random_state: Optional[int] = 0,
           prior_scale: float = 1.0, shards: Optional[np.ndarray] = None, fit_map: Optional[FitMap] = None) -> Search:
    """Choose among ``settings`` × their C values and make the model, as ``protocol`` says.

    The evidence: the validation queries when there are at least ``protocol.min_valid_queries`` of them (every
    setting trained on ``train``); else ``cv``-fold cross-validation over ``train`` (with ``protocol.pool``, over
    ``train`` ∪ the usable validation queries, on which the final model is then fitted); a single setting and C
    without validation is trained as given (``"none"``). The decision:
    :func:`~pyterrier_svmmap.selection.rule.choose` at level ``protocol.alpha`` over the levels of model classes,
    with the fallback when ``protocol.fallback``.

    Each setting's layout is fitted once, on the queries the final model is fitted on (labels unused), and
    shared by the folds (:func:`encode_settings`); its C values are ``C`` resolved against that φ
    (:func:`~pyterrier_svmmap.selection.grids.resolve_c_grid`: ``"auto"`` is relative to φ's spread).

    ``train`` and ``valid`` hold binary labels (``valid``: None or with labels; its ``docnos`` break ties);
    ``shards``: the training queries per shard, for the final fits on ``train`` alone; ``fit_map`` runs the
    independent fits (:data:`FitMap`, default: in this process); the final fits and the fallback run here."""
    settings = list(settings)
    S = len(settings)
    source = "validation" if valid is not None and evidence_source(valid.n_queries, protocol.min_valid_queries) == \
        "validation" else "cv"
    fit = train
    if source == "cv" and valid is not None and protocol.pool:
        fit, shards = pooled(train, valid), None
    encodings = encode_settings(fit, settings, make_layout)
    grids = [resolve_c_grid(C, e.spread) for e in encodings]
    G = len(grids[0])
    levels = setting_levels(settings, G)
    if source == "cv" and (S * G == 1 or (protocol.fallback and fit.n_queries < cv)):
        source = "none"
    raw_layout = lambda q: make_layout(q, "raw")                            # noqa: E731 - the fallback's
    paths: Dict[int, Path] = {}
    F, held = None, None
    if source == "validation":
        job = SettingFits(train, settings, grids, train_path, encodings, shards)
        paths = dict(enumerate(fit_map(job, S) if fit_map is not None else [job(s) for s in range(S)]))
        E = validation_evidence([paths[s] for s in range(S)], valid, queries_best_function(train))
        if protocol.fallback:
            layout, w, f = fallback_model(train, raw_layout, prior_scale)
            F = validation_evidence([(layout, [_Weights(w)], None)], valid, queries_best_function(train))[:, 0]
    elif source == "cv":
        raced = [] if not (protocol.race and protocol.fallback) else \
            sorted({c // G for level in levels[1:] for c in level})
        held = cross_validate(fit, settings, grids, train_path, encodings, cv, random_state, fit_map=fit_map,
                              fallback=(lambda tr: fallback_model(tr, raw_layout, prior_scale))
                              if protocol.fallback else None,
                              raced=raced, go_on=lambda h: race_richer(h, levels, protocol.alpha))
        E, F = held.ap, held.fallback_ap
        if any(w is None for s in raced for w in held.fold_weights[s]):
            levels = levels[:1]                                     # the richer classes lost the race
    else:
        E = np.zeros((0, S * G))
    fold_scores = None if held is None else held.fold_means()
    if held is not None and protocol.fold_means:
        evidence = fold_scores[:, :S * G]
    else:
        evidence = E
    choice = choose(evidence, F, protocol.alpha, levels=levels) if len(E) else None
    means = column_means(evidence) if len(E) else np.full(S * G, np.nan)
    scores = [float(x) for x in means] + ([] if F is None else [float(F.mean())])
    chosen = (len(scores) - 1 if choice.fallback else choice.index) if choice is not None else 0
    return _model(Selection(source, scores, fold_scores, chosen), choice, settings, grids, fit, paths, held,
                  train_path, encodings, protocol, prior_scale, raw_layout,
                  shards if fit is train else None)


def race_richer(held: HeldOut, levels: Sequence[Sequence[int]], alpha: Optional[float]) -> bool:
    """Whether cross-validation goes on with the richer model classes (``levels[1:]``, columns of
    ``held.ap``) after the first :data:`RACE_FOLDS` folds: their best column's mean gain over the simplest
    level's choice (:func:`~pyterrier_svmmap.selection.rule.choose` at ``alpha`` over every query, with the
    fallback) is positive on those folds' queries. A richer class that does not beat the simpler choice there
    is unlikely to pass :func:`~pyterrier_svmmap.selection.rule.choose`'s test against it on every query, and
    costs most of a search (step functions have the most weights and take the most iterations)."""
    simple = list(levels[0])
    first = choose(held.ap[:, simple], held.fallback_ap, alpha)
    current = held.fallback_ap if first.fallback else held.ap[:, simple[first.index]]
    rows = held.fold < RACE_FOLDS
    richer = [c for level in levels[1:] for c in level]
    return bool(column_means(held.ap[rows][:, richer] - current[rows, None]).max() > 0)


def from_paths(paths: Sequence[Path], settings: Sequence[Setting], grids: Sequence[Sequence[float]],
               valid: Optional[Queries], tie: int) -> Search:
    """:data:`PAPER`'s decision among paths trained elsewhere (a cluster's shards): the best validation MAP of
    the validation queries ``valid`` (ties broken by base function ``tie``), or, without them, the first."""
    settings, grids = list(settings), [list(g) for g in grids]
    paths = dict(enumerate(paths))
    if valid is None:
        E, source = np.zeros((0, len(settings) * len(grids[0]))), "none"
    else:
        E, source = validation_evidence([paths[s] for s in range(len(settings))], valid, tie), "validation"
    choice = choose(E, None, None) if len(E) else None
    means = column_means(E)
    selection = Selection(source, [float(x) for x in means], None, 0 if choice is None else choice.index)
    return _model(selection, choice, settings, grids, None, paths, None, None, None, PAPER, 1.0, None, None, tie)


@dataclass
class _Weights:
    """A model given by its weights alone, where a training result is expected."""
    w: np.ndarray


def pooled(train: Queries, valid: Queries) -> Queries:
    """``train`` ∪ the usable queries of ``valid`` (those with a relevant and a non-relevant candidate), with
    the relevant counts of both when either has them; the reference of ``train``."""
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
           prior_scale: float, raw_layout, shards, tie: Optional[int] = None) -> Search:
    """The final model of a search: the fallback fitted on ``fit``, or the chosen setting's path — trained
    already (``paths``), or now on ``fit`` (every setting's whole path with ``protocol.refit_every``, else the
    chosen one up to its C) — averaged with the fold models when ``protocol.average_folds``."""
    G = len(grids[0])
    tie = queries_best_function(fit) if tie is None else tie
    record = dict(selection=selection, choice=choice, settings=settings, grids=grids, fit=fit, tie_function=tie)
    if choice is not None and choice.fallback:
        layout, w, f = fallback_model(fit, raw_layout, prior_scale)
        return Search(**record, paths={}, layout=layout, coef=np.array(w, dtype=float),
                      coefs=np.array([w], dtype=float), C=0.0, setting=-1, function=f, result=None, averaged_models=1)
    s, i = divmod(selection.chosen, G)
    if s not in paths:
        for t in range(len(settings)) if protocol.refit_every else [s]:
            paths[t] = train_path(fit, grids[t] if protocol.refit_every else grids[t][:i + 1], settings[t], None,
                                  shards, encodings[t])
    layout, results, f = paths[s]
    kept = results[i]
    coef, averaged = np.array(kept.w, dtype=float), 1
    if held is not None and protocol.average_folds:
        # the refit and the cv fold models at the chosen setting, averaged (bagging: one layout, so the same
        # weights' meaning; lower variance than the refit alone, no extra fit)
        fold_w = held.fold_weights[s]
        coef = (np.sum([w[i] for w in fold_w], axis=0) + kept.w) / (len(fold_w) + 1)
        averaged = len(fold_w) + 1
    return Search(**record, paths=paths, layout=layout, coef=coef, coefs=np.stack([r.w for r in results]),
                  C=grids[s][i], setting=s, function=f, result=kept, averaged_models=averaged)
