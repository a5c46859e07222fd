"""Model selection: the one home of choosing among a learner's settings.

A learner with a grid (a C path, feature blocks, an (α, β) grid, …) trains every setting, scores each on
validation queries or by cross-validation over its training queries, and keeps one. This module holds
what every learner shares for that:

* the grids: :data:`DEFAULT_C_GRID`, :func:`c_grid` (a C grid, checked), :data:`AUTO_FEATURES` and
  :func:`feature_options` (the feature blocks ``features="auto"`` compares), :func:`features_name`;
* the score: :func:`ranked_ap` (per-query AP under the package's tie policy; its mean, MAP, is the measure
  every setting is compared by);
* internal cross-validation: :func:`cv_folds` (folds by query, shuffled with a seed);
* the rule that picks: :func:`select` applies :data:`RULE` (:func:`first_best`, the first maximum) to the
  settings' scores and returns a :class:`Selection`, the evidence of the choice (what ``path_`` and
  ``selection_`` record);
* :func:`queries_best_function`: the reference function — the queries' first stage where known
  (:attr:`~pyterrier_svmmap.queries.Queries.reference`), else :func:`best_function`, the base function with
  the highest training MAP — (the tie-break function and the prior's function);
* the package's default rule, ``selection="auto"`` (the estimators' default, :func:`select_auto`): every
  setting and the *fallback* — the reference function itself — scored per held-out query by cross-validation
  over every judged query (training ∪ validation), the learned arg-max kept only when a sign-flip max-gain
  test (:func:`max_gain_pvalue`, :func:`choose`) says its gain over the fallback is more likely real than an
  artefact of picking the best of many, then refitted on all judged queries and averaged with the fold
  models. The learner trains (a callback); this module decides.

Why the default rule is what it is (docs/model-selection.md, measured on Vaswani and LETOR MQ2008): a grid's
arg-max on five validation queries mostly picks noise, and even 157 validation queries (MQ2008) were too few
to see learning's ~0.01 MAP gain over the best feature in 3 of 5 folds, where cross-validation over the 627
judged queries saw it in all 5. With few queries, the best of many noisy means is optimistic: even when no
setting beats the base function, the best of 8 shows a gain on 15 queries; the max-gain test corrects for
that (the number and the correlation of the settings, and queries where every setting ties with the base).
``alpha = 0.5`` is the median-unbiased decision; smaller ``alpha`` trusts the base function more
(``alpha = 0.05`` is a conventional significance test), ``alpha = 1`` keeps any positive gain, ``None``
never falls back. The one-standard-error rule was measured and lowered MAP, so the learned setting is the
arg-max.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap._jit as _jit
from pyterrier_svmmap.chunks import query_blocks, score_matrix
from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.encoder import parse_blocks
from pyterrier_svmmap.features.layout import EncodedQueries, FeatureLayout
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.measures import average_precision
from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.string_codes import sorted_string_codes
from pyterrier_svmmap.ties import break_ties

#: the default grid of C (OP 1's constant: ½‖w‖² + C/n Σ ξ_i), searched on validation queries
DEFAULT_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)

#: the grid of ``selection="auto"`` (the estimators' default): the paper's grid and two smaller C, with which
#: the prior-regularised model ½‖w − w₀‖² comes close to the base function itself
SELECTION_C_GRID = (1e-4, 1e-3) + DEFAULT_C_GRID

#: ``C="auto"`` (the estimators' default): this grid relative to φ's spread R², i.e. C = c / R² for each c
#: (:func:`resolve_c_grid`). At c = 1 the regulariser and the loss weigh alike (a margin of 1 between candidates
#: a distance R apart needs ‖w‖ ≈ 1/R); the grid spans from nearly the prior's base function (1e-4) to two decades
#: above that balance (100); beyond it each C costs the most iterations of its path (docs/model-selection.md gives
#: the held-out evidence for this range)
AUTO_C_GRID = (1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0)

#: the C, feature blocks and prior of the estimators' default (``selection="auto"``, :func:`select_auto`)
DEFAULT_C = "auto"
DEFAULT_FEATURES = "auto"
DEFAULT_PRIOR = "best"

#: the selection methods a learner with a grid takes: ``"validation"`` (the paper's protocol: the best
#: validation MAP, or cross-validation over the training queries without validation data) or ``"auto"``
SELECTION_METHODS = ("validation", "auto")

#: the default level of the fallback test (:func:`choose`): the median-unbiased decision
DEFAULT_ALPHA = 0.5
#: sign flips of :func:`max_gain_pvalue` (all 2^n of them when n ≤ ``EXACT_FLIPS_MAX_QUERIES``)
N_FLIPS = 2000
EXACT_FLIPS_MAX_QUERIES = 11
#: the default size from which a given validation set alone is the evidence (:func:`evidence_source`):
#: None, always cross-validate over every judged query (a validation set is a subset of them)
DEFAULT_MIN_VALID_QUERIES = None

#: the feature blocks that ``features="auto"`` chooses among, jointly with C (no block wins on every collection:
#: docs/model-selection.md)
AUTO_FEATURES = ("bins", "raw", "bins+raw")


def is_auto_c(C) -> bool:
    """Whether ``C`` is ``"auto"``: the grid :data:`AUTO_C_GRID` relative to φ's spread (:func:`resolve_c_grid`)."""
    return isinstance(C, str) and C == "auto"


def c_grid(C) -> List[float]:
    """``C`` (a number or a sequence) as a list of floats, checked: finite, positive, no duplicates; for
    ``"auto"``, :data:`AUTO_C_GRID` (relative values, :func:`resolve_c_grid` scales them)."""
    if is_auto_c(C):
        return list(AUTO_C_GRID)
    try:
        grid = [float(c) for c in np.atleast_1d(np.asarray(C, dtype=float))]
    except (TypeError, ValueError):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}") from None
    if not grid or any(not math.isfinite(c) or c <= 0 for c in grid):
        raise ValueError(f"C must be a positive number or a list of them, got {C!r}")
    if len(set(grid)) != len(grid):
        raise ValueError(f"C has duplicate values: {C!r}")
    return grid


def feature_options(features: Union[str, Sequence[str]]) -> List[Union[str, Sequence[str]]]:
    """The feature blocks to train: :data:`AUTO_FEATURES` for ``features="auto"``, else ``[features]``."""
    return list(AUTO_FEATURES) if isinstance(features, str) and features == "auto" else [features]


def features_name(features) -> str:
    """``"bins+raw"`` for ``("bins", "raw")`` or ``"bins+raw"``."""
    return features if isinstance(features, str) else "+".join(features)


def cv_folds(n_queries: int, n_folds: int, random_state: Optional[int], n_settings: int) -> np.ndarray:
    """The fold (0 … ``n_folds`` − 1) of each of ``n_queries`` queries: queries shuffled with ``random_state``,
    then dealt round-robin, so that the folds differ in size by one at most. ValueError when there are
    fewer queries than folds (``n_settings``, the settings to compare, for the message) or fewer than 2 folds."""
    if n_folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {n_folds}")
    if n_queries < n_folds:
        raise ValueError(f"{n_settings} (features, C) settings and no validation data were given, so they are chosen "
                         f"by {n_folds}-fold cross-validation, which needs at least {n_folds} usable training "
                         f"queries (got {n_queries}); give validation data, a single C, or a smaller cv")
    fold = np.empty(n_queries, dtype=np.int64)
    fold[np.random.default_rng(random_state).permutation(n_queries)] = np.arange(n_queries) % n_folds
    return fold


def first_best(values: Sequence[float]) -> int:
    """The rule that picks: the index of the first maximum, NaN (or None) counting as lowest, so that
    without any score (no validation) the first setting is kept."""
    v = np.array([-np.inf if (x is None or np.isnan(x)) else x for x in values])
    return int(np.argmax(v))


#: the rule that picks a setting from the settings' scores
RULE: Callable[[Sequence[float]], int] = first_best


@dataclass
class Selection:
    """The evidence of one choice among settings.

    Attributes
    ----------
    method : str
        How the settings were scored: ``"validation"`` (on validation queries), ``"cv"`` (mean held-out score
        of cross-validation over the training queries; with ``selection="auto"``, over training ∪ validation)
        or ``"none"`` (one setting, or too few queries to compare any).
    scores : list of float
        One score per setting, in the settings' order (NaN when not scored); with ``selection="auto"`` the
        last setting is the fallback base function.
    fold_scores : ndarray or None
        With ``"cv"``: the held-out score of every (fold, setting).
    chosen : int
        The index of the setting kept.
    """
    method: str
    scores: List[float]
    fold_scores: Optional[np.ndarray]
    chosen: int

    def path(self, settings: Sequence[Tuple[Any, Optional[str]]], grids: Sequence[Sequence[float]],
             with_prior: bool = True) -> List[dict]:
        """The learners' ``path_``: one entry per (features, prior, C) of ``settings`` × their ``grids``, in
        setting-major order, with its score (``validation``) and, with cross-validation, its held-out score per
        fold (``cv_scores``); ``with_prior=False`` leaves the prior out of the entries. A score beyond the
        settings' (``selection="auto"``'s fallback base function) is a last entry ``fallback=True`` (C = 0)."""
        G = len(grids[0]) if len(grids) else 0
        out = []

        def entry(column: int, **fields) -> dict:
            e = dict(fields, validation=self.scores[column])
            if self.method == "cv":
                e["cv_scores"] = [float(x) for x in self.fold_scores[:, column]]
            return e
        for s, (features, prior) in enumerate(settings):
            for i, C in enumerate(grids[s]):
                out.append(entry(s * G + i, features=features_name(features),
                                 **({"prior": prior} if with_prior else {}), C=C))
        if len(self.scores) > len(settings) * G:
            out.append(dict(entry(len(self.scores) - 1, features="raw", prior="best", C=0.0), fallback=True))
        return out


def select(scores: Sequence[float], method: str, fold_scores: Optional[np.ndarray] = None) -> Selection:
    """Apply :data:`RULE` to the settings' ``scores`` (``method`` and ``fold_scores`` as in
    :class:`Selection`) and return the evidence with the choice."""
    if method not in ("validation", "cv", "none"):
        raise ValueError(f"method must be 'validation', 'cv' or 'none', got {method!r}")
    scores = [float("nan") if s is None else float(s) for s in scores]
    return Selection(method, scores, fold_scores, RULE(scores))


def best_function(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> int:
    """The base function with the highest MAP on these queries (a missing score ranks last; the first of
    equal MAPs).

    Parameters
    ----------
    raw : np.ndarray
        The base functions' scores, candidates × functions (NaN: missing).
    labels : np.ndarray
        Relevance labels per candidate (> 0: relevant).
    offsets : np.ndarray
        Query boundaries, one more than queries.

    Returns
    -------
    int
        The chosen function's column.
    """
    return best_row(function_aps(raw, labels, offsets))


def queries_best_function(queries: Queries) -> int:
    """The reference function of ``queries``: their ``reference`` (the first stage) when known, else
    :func:`best_function` of them (binary labels), computed once per :class:`Queries` object. A fold's
    tie-break function, its fallback and each setting's prior all ask for it."""
    if queries.reference is not None:
        return int(queries.reference)
    cached = queries.__dict__.get("_best_function")
    if cached is None:
        cached = queries.__dict__["_best_function"] = best_function(queries.raw, queries.labels, queries.offsets)
    return cached


def best_row(aps: np.ndarray) -> int:
    """The row (base function) of an (F, Q) array of per-query APs with the highest mean; the first of equal
    means. A cluster gathers the shards' :func:`function_aps` in query order and calls this, so it picks the
    function one process picks, bit for bit."""
    return int(np.argmax([row.mean() for row in aps]))


def function_aps(raw: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The AP of every base function on every query, (F, Q) (a missing score ranks last).

    The APs come from the compiled :func:`pyterrier_svmmap.measures._kernels.function_ap` (counts instead of
    sorts; the bits of :func:`.measures.average_precision`), on blocks of whole
    queries spread over :func:`~pyterrier_svmmap.threads.current` threads.
    """
    raw = score_matrix(raw)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    rel = np.ascontiguousarray(np.asarray(labels) > 0)
    jit = _jit.load("measures._kernels")
    out = np.empty((raw.shape[1], len(offsets) - 1))
    for chunk in query_blocks(raw, offsets):           # a query's APs are the same in any block
        values, offs = chunk.values, chunk.offsets
        labels_here = rel[chunk.start:chunk.stop]
        qb = threads.query_bounds(offs, threads.pieces(values.size))

        def block(i: int) -> None:
            lo, hi = int(qb[i]), int(qb[i + 1])
            part = np.empty((values.shape[1], hi - lo))
            jit.function_ap(values, labels_here, offs[lo:hi + 1], part)
            out[:, chunk.first + lo:chunk.first + hi] = part
        threads.run(block, len(qb) - 1)
    return out


# -- the package's default rule: selection="auto" --------------------------------------------------
def prior_options(prior: Optional[str]) -> List[Optional[str]]:
    """The priors to train: both (``None`` and ``"best"``) for ``prior="auto"``, else ``[prior]``."""
    return [None, "best"] if prior == "auto" else [prior]


def evidence_source(n_valid: int, min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES) -> str:
    """``"validation"`` when ``min_valid_queries`` is given and the validation set has at least that many
    queries, else ``"cv"`` (cross-validation over training ∪ validation, refit on all; the default)."""
    return "validation" if min_valid_queries is not None and n_valid >= min_valid_queries else "cv"


def paired_t(gains: np.ndarray) -> float:
    """t statistic of the mean of paired per-query gains: mean / (sd / √n); ±inf when every gain is equal
    and non-zero (standard error below 1e-12), 0 when all are 0 or there is only one."""
    d = np.asarray(gains, dtype=float)
    if len(d) < 2:
        return 0.0
    m = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(len(d))
    if se < 1e-12:                                  # equal gains (up to rounding)
        return 0.0 if m == 0.0 else math.copysign(math.inf, m)
    return m / se


def max_gain_pvalue(gains: np.ndarray, n_flips: int = N_FLIPS, seed: int = 0) -> float:
    """Sign-flip permutation p-value of the largest mean column of ``gains`` (queries × settings, the paired
    per-query gains of each setting over the fallback): the share of sign vectors s (one sign per query,
    applied to the whole row) with max_j mean_q(s_q · gains[q, j]) ≥ the observed max_j mean_q(gains[q, j]),
    counting the identity — Westfall & Young's max statistic under the null hypothesis "no setting differs
    from the base function". Exact (all 2^n sign vectors) for n ≤ ``EXACT_FLIPS_MAX_QUERIES``, else
    ``n_flips`` seeded random ones plus the identity. 1.0 when no column has a positive mean."""
    D = np.asarray(gains, dtype=float)
    n = len(D)
    if n == 0 or D.shape[1] == 0:
        return 1.0
    observed = D.mean(axis=0).max()
    if observed <= 0:
        return 1.0
    if n <= EXACT_FLIPS_MAX_QUERIES:
        codes = np.arange(2 ** n)[:, None] >> np.arange(n)[None, :] & 1
        signs = 1.0 - 2.0 * codes                         # the identity is row 0
    else:
        rng = np.random.default_rng(seed)
        signs = np.vstack([np.ones(n), rng.choice([-1.0, 1.0], size=(n_flips, n))])
    null = (signs @ D / n).max(axis=1)
    tol = 1e-12 * max(1.0, abs(observed))
    return float((null >= observed - tol).mean())


@dataclass
class Choice:
    """What :func:`choose` decided: ``index`` the chosen column of the evidence (-1: the fallback), ``best`` the
    learned arg-max's column, the means, and of the test that decided (the last one passed, else the first):
    the paired gain over what it was compared with, its t statistic (for information), the max-gain permutation
    p-value and the level ``alpha``; ``steps`` one dict per level of settings (:func:`choose`)."""
    index: int
    best: int
    best_mean: float
    fallback_mean: Optional[float]
    gain: Optional[float]
    t: Optional[float]
    p_value: Optional[float]
    alpha: Optional[float]
    n_queries: int
    steps: List[dict] = field(default_factory=list)

    @property
    def fallback(self) -> bool:
        return self.index < 0

    def as_dict(self) -> dict:
        clean = lambda v: None if isinstance(v, float) and not math.isfinite(v) else v   # noqa: E731
        out = {k: clean(v) for k, v in asdict(self).items() if k != "steps"}
        return {**out, "steps": [{k: clean(v) for k, v in step.items()} for step in self.steps],
                "fallback": self.fallback}


def choose(evidence: np.ndarray, fallback: Optional[np.ndarray] = None, alpha: Optional[float] = DEFAULT_ALPHA,
           seed: int = 0, levels: Optional[Sequence[Sequence[int]]] = None) -> Choice:
    """Pick a column of ``evidence`` (held-out queries × settings, per-query AP; NaN counts as the lowest
    mean) or the fallback (``fallback``: the same queries' AP of the base function; None: no fallback).

    ``levels`` groups the columns into model classes of increasing richness (default: one group of all), e.g.
    linear models of the scores, then step functions of them (bins). Starting from the fallback, each level's
    arg-max replaces the current choice iff its mean gain over it is positive and the sign-flip max-gain test
    over every column tried so far — this level's and the simpler ones' — (:func:`max_gain_pvalue` of their
    per-query gains over the current choice) gives p ≤ ``alpha``: a richer class must show evidence against the
    simpler choice, as learning must against the base function, and the test counts every setting that had a
    chance to win (a richer class that follows a rejected simpler one is not tested as if it were the first).
    Without a fallback the first level's arg-max is the start; ``alpha=None`` tests nothing and takes the
    arg-max of all columns."""
    E = np.asarray(evidence, dtype=float)
    if E.ndim != 2 or E.shape[1] == 0:
        raise ValueError(f"evidence must be a (queries × settings) array with a setting, got shape {E.shape}")
    means = E.mean(axis=0) if len(E) else np.full(E.shape[1], np.nan)
    best = RULE(means)
    if alpha is None:
        return Choice(best, best, float(means[best]), None, None, None, None, alpha, len(E))
    levels = [list(range(E.shape[1]))] if levels is None else [list(cols) for cols in levels if len(cols)]
    if fallback is not None:
        f = np.asarray(fallback, dtype=float)
        if f.shape != (len(E),):
            raise ValueError(f"fallback must have one AP per evidence query ({len(E)}), got shape {f.shape}")
        index, current = -1, f
    else:
        first = levels.pop(0)
        index = first[RULE(means[first])]
        current = np.nan_to_num(E[:, index], nan=0.0)
    steps: List[dict] = []
    decided = None
    tried: List[int] = [] if fallback is not None else list(first)
    for cols in levels:
        tried += cols
        D = np.nan_to_num(E[:, tried], nan=0.0) - current[:, None]
        D[:, np.isnan(means[tried])] = -1.0                   # a setting without evidence never wins
        top = cols[RULE(means[cols])]
        d = D[:, tried.index(top)]
        gain = float(d.mean()) if len(d) else 0.0
        p = max_gain_pvalue(D, seed=seed) if gain > 0 else 1.0
        accepted = gain > 0 and p <= alpha
        step = dict(best=top, against=index, gain=gain, t=paired_t(d), p_value=p, accepted=accepted)
        steps.append(step)
        if accepted or decided is None:
            decided = step
        if accepted:
            index, current = top, np.nan_to_num(E[:, top], nan=0.0)
    if decided is None:
        return Choice(index, best, float(means[best]), None, None, None, None, alpha, len(E), steps)
    return Choice(index, best, float(means[best]), float(np.mean(fallback)) if fallback is not None and len(E)
                  else None, decided["gain"], decided["t"], decided["p_value"], alpha, len(E), steps)


def ranked_ap(X, w: np.ndarray, queries: Queries, tie_scores: np.ndarray, codes=None) -> np.ndarray:
    """AP of each of ``queries`` ranked by ``X·w`` (X: their φ) with the package's tie policy, as ``transform``
    ranks: equal scores ordered by ``tie_scores`` (the tie-break function's raw scores), then by ``codes``
    (the docnos' string codes) when given; normalised by ``queries.n_relevant`` when known. The score of
    every held-out comparison: validation MAP (its mean), cross-validation, the rule."""
    scores = break_ties(X.dot(w), queries.offsets, tie_scores, docno_codes=codes)[0]
    return average_precision(scores, queries.labels, queries.offsets, queries.n_relevant)


def per_query_ap(layout: FeatureLayout, w: np.ndarray, queries: Queries, tie: int, codes=None) -> np.ndarray:
    """:func:`ranked_ap` of ``queries`` under ``layout`` with tie-break function ``tie``."""
    return ranked_ap(layout.transform(queries.raw, queries.offsets), w, queries, queries.raw[:, tie], codes)


def base_function_weights(layout: FeatureLayout, raw: np.ndarray, offsets: np.ndarray, function: int,
                          scale: float = 1.0) -> np.ndarray:
    """w₀ of ``layout`` that ranks like base function ``function`` alone, its score column scaled by its range on
    ``raw`` (the training candidates, grouped by ``offsets``; :meth:`FeatureLayout.prior_weights`): the prior's
    centre, and the fallback's model."""
    return layout.prior_weights(function, raw, offsets, scale=scale)


def resolve_c_grid(C, spread: float) -> List[float]:
    """The C values to train: ``C`` itself (:func:`c_grid`), or for ``C="auto"`` the relative grid
    :data:`AUTO_C_GRID` divided by ``spread``, φ's R² (:meth:`~pyterrier_svmmap.features.matrices.FeatureMatrix.spread`).

    The constraints of a ranking loss are differences of φ within a query, and the solution of OP 1 depends on
    C only through C·R² once φ is rescaled, so a relative grid means the same regularisation for every feature
    block and number of base functions (SVMlight's default C = 1/mean ‖x‖² rests on the same argument)."""
    if not is_auto_c(C):
        return c_grid(C)
    if not spread > 0 or not math.isfinite(spread):
        return list(AUTO_C_GRID)
    return [float(c / spread) for c in AUTO_C_GRID]


#: ``train(queries, grid, (features, prior), fold, shards, encoded) -> (layout, results, prior function or None)``:
#: the learner's path of C on ``queries`` (``results[i].w`` the weights at ``grid[i]``); ``fold`` the
#: cross-validation fold (None for a final fit), ``shards`` the queries per shard or None, ``encoded`` φ of
#: ``queries`` (:class:`~pyterrier_svmmap.features.layout.EncodedQueries`, its layout fitted on these or on more
#: queries)
TrainPath = Callable[[Queries, Sequence[float], Tuple[Any, Optional[str]], Optional[int], Optional[np.ndarray],
                      EncodedQueries], Tuple[FeatureLayout, list, Optional[int]]]

#: ``make_layout(queries, features) -> FeatureLayout``: the learner's layout of feature blocks ``features``
#: fitted on ``queries`` (labels unused)
MakeLayout = Callable[[Queries, Any], FeatureLayout]


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

    def fold_means(self, k: int) -> List[float]:
        """Fold ``k``'s MAP of every (setting, C): each column's held-out APs of the fold, averaged."""
        rows = self.fold == k
        return [float(self.ap[rows, c].mean()) for c in range(self.ap.shape[1])]


#: below this many candidates, the fits of a cross-validation run side by side (one thread each,
#: :func:`~pyterrier_svmmap.threads.run_concurrently`): each is too small for its kernels to use several
#: threads well; above it they run one after another, each on every thread, holding one fold's φ at a time
CONCURRENT_FOLDS_MAX_CANDIDATES = 1 << 20


#: ``fit_map(job, n) -> [job(0), …, job(n − 1)]``: how the independent fits of a search run (the
#: (fold, setting) paths of :func:`cross_validate`, the settings of :func:`select_auto` on validation queries).
#: ``job`` is a picklable callable of module level (:class:`FoldFits`, :class:`SettingFits`), so that a shard
#: executor may run the fits on other processes (:mod:`~pyterrier_svmmap.svm.executors`); None runs them here.
FitMap = Callable[[Callable[[int], Any], int], list]


@dataclass
class FoldFits:
    """The (fold, setting) fits of :func:`cross_validate` as one job: ``job(j)`` trains fit ``j`` (fold ``j //
    len(settings)``, setting ``j % len(settings)``) on the other folds and returns (the weights of every C,
    the held-out queries' APs under each C, queries × C). A pure function of its fields, so that it gives the
    same bits in any process."""
    queries: Queries
    fold: np.ndarray
    settings: List[Any]
    grids: List[List[float]]
    train_path: "TrainPath"
    encodings: List[EncodedQueries]
    ties: List[int]

    def __call__(self, j: int) -> Tuple[List[np.ndarray], np.ndarray]:
        k, s = divmod(j, len(self.settings))
        held = self.fold == k
        tr, te = self.queries.subset(~held), self.queries.subset(held)
        tr.__dict__["_best_function"] = self.ties[k]                  # queries_best_function(tr), known
        _, results, _ = self.train_path(tr, self.grids[s], self.settings[s], k, None, self.encodings[s].subset(~held))
        X_te = self.encodings[s].subset(held).X
        ap = np.stack([ranked_ap(X_te, r.w, te, te.raw[:, self.ties[k]]) for r in results], axis=1)
        return [r.w for r in results], ap


@dataclass
class SettingFits:
    """The settings of :func:`select_auto` trained on the training queries (evidence from validation queries)
    as one job: ``job(s)`` is setting ``s``'s path (layout, results, prior function)."""
    queries: Queries
    settings: List[Any]
    grids: List[List[float]]
    train_path: "TrainPath"
    encodings: List[EncodedQueries]
    shards: Optional[np.ndarray]

    def __call__(self, s: int):
        return self.train_path(self.queries, self.grids[s], self.settings[s], None, self.shards, self.encodings[s])


def run_here(job: Callable[[int], Any], n: int, n_candidates: int) -> list:
    """The fits of a search in this process: side by side on the threads of
    :func:`~pyterrier_svmmap.threads.current` (one thread each) below :data:`CONCURRENT_FOLDS_MAX_CANDIDATES`
    candidates, else one after another, each on every thread; the same results either way."""
    if n_candidates < CONCURRENT_FOLDS_MAX_CANDIDATES:
        return threads.run_concurrently(job, n)
    return [job(j) for j in range(n)]


def cross_validate(queries: Queries, settings: Sequence[Any], grids: Sequence[Sequence[float]], train_path: TrainPath,
                   encodings: Sequence[EncodedQueries], cv: int, random_state: Optional[int],
                   fallback: Optional[Callable[[Queries], Tuple[FeatureLayout, np.ndarray, int]]] = None,
                   fit_map: Optional[FitMap] = None) -> HeldOut:
    """``cv``-fold cross-validation over ``queries``: for each fold, the path of C of every setting (its C
    values ``grids[s]``, all of the same length) trained on the other folds
    (``train_path(train, grids[s], setting, fold, None, encoded)``, with the rows of ``encodings[s]``, φ of
    ``queries``) and each held-out query's AP under each C's model, ranked with the training part's tie-break
    function (:func:`best_function`); ``fallback`` (optional) makes a model (layout, w, tie-break function) of
    the training part whose held-out APs are measured too. The one cross-validation loop of the learners with
    a grid.

    The (fold, setting) fits are independent (:class:`FoldFits`): ``fit_map`` runs them (:data:`FitMap`, e.g.
    on a cluster); without it they run in this process (:func:`run_here`). Each fit's result depends on its
    inputs only, so the held-out APs and the fold weights are the same however the fits are run."""
    settings = list(settings)
    G = len(grids[0])
    fold = cv_folds(queries.n_queries, cv, random_state, len(settings) * G)
    ap = np.empty((queries.n_queries, len(settings) * G))
    fallback_ap = None if fallback is None else np.empty(queries.n_queries)
    parts = [(queries.subset(fold != k), queries.subset(fold == k)) for k in range(cv)]
    ties = [queries_best_function(tr) for tr, _ in parts]             # each fold's tie-break function
    job = FoldFits(queries, fold, settings, [list(g) for g in grids], train_path, list(encodings), ties)
    n_tasks = cv * len(settings)
    paths = fit_map(job, n_tasks) if fit_map is not None else run_here(job, n_tasks, len(queries.raw))
    for j, (_, held_ap) in enumerate(paths):
        k, s = divmod(j, len(settings))
        ap[fold == k, s * G:(s + 1) * G] = held_ap
    weights = [[np.stack(paths[k * len(settings) + s][0]) for k in range(cv)] for s in range(len(settings))]
    if fallback is not None:
        for k, (tr, te) in enumerate(parts):
            fb_layout, fb_w, fb_f = fallback(tr)
            fallback_ap[fold == k] = per_query_ap(fb_layout, fb_w, te, fb_f)
    return HeldOut(fold, ap, fallback_ap, weights)


@dataclass
class AutoSelection:
    """What :func:`select_auto` decided, and the model it made.

    ``selection``: the evidence (:class:`Selection`: ``method`` the evidence used — ``"cv"``, ``"validation"``
    or ``"none"`` —, one score per (setting, C) in setting-major order and a last one for the fallback,
    ``fold_scores`` per cv fold, ``chosen`` the index kept, the last for the fallback); ``choice`` the
    decision (:class:`Choice`, None when nothing could be compared); ``settings`` the (features, prior)
    pairs; ``grids`` the C values of each setting (one length); ``fit`` the judged queries the final model was
    fitted on; the model: ``layout``, ``coef``, ``coefs`` (w of every C of its path), ``C`` (0 for the
    fallback), ``setting`` (index, -1 for the fallback), ``function`` (the prior's or fallback's base
    function, or None), ``result`` (the kept C's training result, None for the fallback) and
    ``averaged_models``."""
    selection: Selection
    choice: Optional[Choice]
    settings: List[Tuple[Any, Optional[str]]]
    grids: List[List[float]]
    fit: Queries
    layout: FeatureLayout
    coef: np.ndarray
    coefs: np.ndarray
    C: float
    setting: int
    function: Optional[int]
    result: Any = None
    averaged_models: int = 1
    tie_function: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def fallback(self) -> bool:
        return self.setting < 0

    def path(self) -> List[dict]:
        """``path_``: one entry per (features, prior, C) with its mean held-out AP (``validation``; per fold
        ``cv_scores``), and a last entry ``fallback=True`` (C = 0) for the base function when it was scored."""
        return self.selection.path(self.settings, self.grids)

    def record(self, path: List[dict]) -> Optional[dict]:
        """``choice_``: the :class:`Choice` as a dict with the evidence's ``source``, the ``chosen`` and the
        ``best_learned`` entries of ``path`` and ``averaged_models``; None when nothing was compared."""
        if self.choice is None:
            return None
        return dict(self.choice.as_dict(), source=self.selection.method,
                    chosen=path[-1 if self.choice.fallback else self.choice.index],
                    best_learned=path[self.choice.best], averaged_models=self.averaged_models)


def model_class(features) -> int:
    """How rich the model of feature blocks ``features`` is: 0 for a linear function of the scores (``raw``,
    ``minmax``), 1 with the paper's threshold indicators (``bins``: a step function of each score, fitted
    thresholds and many more weights)."""
    return max(BLOCK_KINDS[kind].model_class for kind in parse_blocks(features))


def setting_levels(settings: Sequence[Tuple[Any, Optional[str]]], n_c: int) -> List[List[int]]:
    """The evidence's columns (``n_c`` per setting, setting-major) grouped by :func:`model_class` of each
    setting's features, simplest first: the ``levels`` of :func:`choose`."""
    classes = sorted({model_class(features) for features, _ in settings})
    return [[s * n_c + i for s, (features, _) in enumerate(settings) if model_class(features) == c
             for i in range(n_c)] for c in classes]


def encode_settings(queries: Queries, settings: Sequence[Tuple[Any, Optional[str]]], make_layout: MakeLayout
                    ) -> List[EncodedQueries]:
    """φ of ``queries`` for every setting, one layout per distinct feature block fitted on ``queries`` and
    shared by the settings (and the folds) that use it."""
    by_block = {}
    for features, _ in settings:
        name = features_name(features)
        if name not in by_block:
            by_block[name] = EncodedQueries.of(make_layout(queries, features), queries.raw, queries.offsets)
    return [by_block[features_name(features)] for features, _ in settings]


def select_auto(train: Queries, valid: Optional[Queries], settings: Sequence[Tuple[Any, Optional[str]]],
                C, train_path: TrainPath, make_layout: MakeLayout, *,
                cv: int = 5, random_state: Optional[int] = 0, alpha: Optional[float] = DEFAULT_ALPHA,
                min_valid_queries: Optional[int] = DEFAULT_MIN_VALID_QUERIES, average_folds: bool = True,
                prior_scale: float = 1.0, shards: Optional[np.ndarray] = None,
                fit_map: Optional[FitMap] = None) -> AutoSelection:
    """``selection="auto"``: per-query held-out AP of every (setting, C) and of the *fallback* (the base
    function with the best MAP on the same training part, as a model of the ``raw`` layout: C = 0 of the
    prior), from the validation queries when there are at least ``min_valid_queries`` of them, else from
    ``cv``-fold cross-validation over training ∪ validation (the usable validation queries; then the choice
    is refitted on all of them, and averaged with the fold models, ``average_folds``); :func:`choose` decides
    at level ``alpha``. With fewer judged queries than folds nothing is compared: the first setting at the
    first C is trained on all of them (``method="none"``).

    Each setting's layout is fitted once, on the queries the final model is fitted on (labels unused), and
    shared by the folds (:func:`encode_settings`); its C values are ``C`` resolved against that φ
    (:func:`resolve_c_grid`: ``"auto"`` is relative to φ's spread).

    ``train`` and ``valid`` hold binary labels (``valid``: None or with labels; its ``docnos`` break ties on
    validation); ``train_path`` trains a path of C (:data:`TrainPath`); ``make_layout`` fits a layout
    (:data:`MakeLayout`); ``shards``: the training queries per shard, for the fits on ``train`` alone;
    ``fit_map`` runs the independent fits (the cross-validation's, or the settings' on the validation
    evidence; :data:`FitMap`, default: in this process), the final refit and the fallback run here."""
    settings = list(settings)
    S = len(settings)
    n_valid = 0 if valid is None else valid.n_queries
    source = evidence_source(n_valid, min_valid_queries)
    fit = train
    if source == "cv" and valid is not None:
        # every judged query is evidence (cross-validation), then the choice is refitted on all of them
        usable = valid.subset(valid.usable())
        tr_n, va_n = train.n_relevant, usable.n_relevant
        if tr_n is not None or va_n is not None:
            tr_n = tr_n if tr_n is not None else np.add.reduceat(train.labels, train.offsets[:-1])
            va_n = va_n if va_n is not None else \
                np.add.reduceat(usable.labels, usable.offsets[:-1]) if len(usable.labels) else np.zeros(0)
        fit = Queries.concatenate([Queries(train.raw, train.labels, train.offsets, n_relevant=tr_n),
                                   Queries(usable.raw, usable.labels, usable.offsets, n_relevant=va_n)])
        fit.reference = train.reference
        shards = None
    encodings = encode_settings(fit, settings, make_layout)
    grids = [resolve_c_grid(C, e.spread) for e in encodings]
    G = len(grids[0])
    raw_layout = lambda q: make_layout(q, "raw")                            # noqa: E731 - the fallback's
    trained, fold, fold_means, fold_w = None, None, None, [[] for _ in settings]
    if source == "validation":
        # the given validation queries: train on the training queries, score the validation queries
        tie = queries_best_function(train)
        codes = sorted_string_codes(valid.docnos)[0] if valid.docnos is not None else None
        job = SettingFits(train, settings, grids, train_path, encodings, shards)
        trained = fit_map(job, S) if fit_map is not None else [job(s) for s in range(S)]
        E = np.stack([per_query_ap(layout, r.w, valid, tie, codes) for layout, results, _ in trained
                      for r in results], axis=1)
        fb_layout, fb_w, fb_f = fallback_model(train, raw_layout, prior_scale)
        F = per_query_ap(fb_layout, fb_w, valid, fb_f, codes)
    elif fit.n_queries < cv:
        source, E, F = "none", np.zeros((0, S * G)), None
    else:
        held_out = cross_validate(fit, settings, grids, train_path, encodings, cv, random_state,
                                  fallback=lambda tr: fallback_model(tr, raw_layout, prior_scale), fit_map=fit_map)
        fold, E, F, fold_w = held_out.fold, held_out.ap, held_out.fallback_ap, held_out.fold_weights
        fold_means = np.stack([np.r_[E[fold == k].mean(axis=0), F[fold == k].mean()] for k in range(cv)])
    tie_function = queries_best_function(fit) if source != "validation" else tie
    choice = choose(E, F, alpha, levels=setting_levels(settings, G)) if len(E) else None
    means = E.mean(axis=0) if len(E) else np.full(S * G, np.nan)
    scores = [float(x) for x in means] + ([] if F is None else [float(F.mean())])
    chosen = (len(scores) - 1 if choice.fallback else choice.index) if choice is not None else 0
    selection = Selection(source, scores, fold_means, chosen)
    if choice is not None and choice.fallback:
        layout, w, f = fallback_model(fit, raw_layout, prior_scale)
        return AutoSelection(selection, choice, settings, grids, fit, layout, np.array(w, dtype=float),
                             np.array([w], dtype=float), 0.0, -1, f, tie_function=tie_function)
    s, i = divmod(choice.index if choice is not None else 0, G)
    if source == "validation":
        layout, results, f = trained[s]
    else:           # refit on every judged query, the path up to the chosen C (warm starts as in the grid)
        layout, results, f = train_path(fit, grids[s][:i + 1], settings[s], None,
                                        shards if source == "none" else None, encodings[s])
    kept = results[i]
    coef, averaged = np.array(kept.w, dtype=float), 1
    if source == "cv" and average_folds:
        # the refit and the cv fold models at the chosen setting, averaged (bagging: one layout, so the same
        # weights' meaning; lower variance than the refit alone, no extra fit)
        coef = (np.sum([w[i] for w in fold_w[s]], axis=0) + kept.w) / (len(fold_w[s]) + 1)
        averaged = len(fold_w[s]) + 1
    return AutoSelection(selection, choice, settings, grids, fit, layout, coef, np.stack([r.w for r in results]),
                         grids[s][i], s, f, kept, averaged, tie_function=tie_function)


def fallback_model(queries: Queries, raw_layout: Callable[[Queries], FeatureLayout], prior_scale: float = 1.0
                   ) -> Tuple[FeatureLayout, np.ndarray, int]:
    """The fallback candidate: the reference function of ``queries`` (:func:`queries_best_function`: the
    first stage, or the base function with the best MAP on them) as a model of the raw layout
    (``raw_layout(queries)``): w₀ of the prior, the limit C → 0 of prior-regularised training, missing
    documents last. (layout, w, function)."""
    layout = raw_layout(queries)
    f = queries_best_function(queries)
    return layout, base_function_weights(layout, queries.raw, queries.offsets, f, prior_scale), f
