"""The rule that picks a setting, and the record of what it picked: the one function every search calls.

:func:`choose` takes the evidence — per held-out query (or per fold), the score of every setting, and
optionally of a *fallback* (the reference function itself) — and returns a :class:`Choice`. Both protocols of
:func:`~pyterrier_svmmap.selection.engine.search` call it: the paper's as the plain arg-max (``alpha=None``, no
fallback), the default's with the fallback and a sign-flip max-gain test (:func:`max_gain_pvalue`) over levels
of model classes. The grid searches of the other learners (Approx, the boosted peers) call it through
:func:`select`.

Why the default rule is what it is (docs/model-selection.md): with few queries, the best of many noisy means
is optimistic: even when no setting beats the base function, the best of 8 shows a gain on 15 queries; the
max-gain test corrects for that (the number and the correlation of the settings, and queries where every
setting ties with the base). ``alpha = 0.5`` is the median-unbiased decision; smaller ``alpha`` trusts the
base function more (``alpha = 0.05`` is a conventional significance test), ``alpha = 1`` keeps any positive
gain, ``None`` never falls back. The one-standard-error rule was measured and lowered MAP, so the learned
setting is the arg-max.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.selection.grids import DEFAULT_ALPHA, features_name

#: sign flips of :func:`max_gain_pvalue` (all 2^n of them when n ≤ ``EXACT_FLIPS_MAX_QUERIES``)
N_FLIPS = 2000
EXACT_FLIPS_MAX_QUERIES = 11


def column_means(evidence: np.ndarray) -> np.ndarray:
    """The mean of each column of ``evidence`` (rows × settings), each summed as one vector (numpy's pairwise
    sum, the bits of ``evidence[:, c].mean()``); NaN for every column without rows. The score every search
    compares settings by."""
    E = np.asarray(evidence, dtype=float)
    return np.array([E[:, c].mean() for c in range(E.shape[1])]) if len(E) else np.full(E.shape[1], np.nan)


def first_best(values: Sequence[float]) -> int:
    """The arg-max: the index of the first maximum, NaN (or None) counting as lowest, so that without any
    score (no validation) the first setting is kept."""
    v = np.array([-np.inf if (x is None or np.isnan(x)) else x for x in values])
    return int(np.argmax(v))


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
    means = column_means(E)
    best = first_best(means)
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
        index = first[first_best(means[first])]
        current = np.nan_to_num(E[:, index], nan=0.0)
    steps: List[dict] = []
    decided = None
    tried: List[int] = [] if fallback is not None else list(first)
    for cols in levels:
        tried += cols
        D = np.nan_to_num(E[:, tried], nan=0.0) - current[:, None]
        D[:, np.isnan(means[tried])] = -1.0                   # a setting without evidence never wins
        top = cols[first_best(means[cols])]
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
    """The arg-max of the settings' ``scores`` (:func:`choose` without a test) with its evidence (``method``
    and ``fold_scores`` as in :class:`Selection`): the grid searches of Approx and the boosted peers."""
    if method not in ("validation", "cv", "none"):
        raise ValueError(f"method must be 'validation', 'cv' or 'none', got {method!r}")
    scores = [float("nan") if s is None else float(s) for s in scores]
    return Selection(method, scores, fold_scores, choose(np.array([scores]), alpha=None).index)
