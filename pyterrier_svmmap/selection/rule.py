"""The rule that picks a setting, :func:`choose` (every search calls it), and the record of what it picked."""
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
    """The mean of each column (each summed as ``evidence[:, c].mean()`` sums it); NaN for columns without rows."""
    E = np.asarray(evidence, dtype=float)
    return np.array([E[:, c].mean() for c in range(E.shape[1])]) if len(E) else np.full(E.shape[1], np.nan)


def first_best(values: Sequence[float]) -> int:
    """The index of the first maximum, NaN or None counting as lowest (so without scores the first is kept)."""
    v = np.array([-np.inf if (x is None or np.isnan(x)) else x for x in values])
    return int(np.argmax(v))


def paired_t(gains: np.ndarray) -> float:
    """t statistic of the mean of paired gains; ±inf when all gains are equal and non-zero, 0 when all are 0."""
    d = np.asarray(gains, dtype=float)
    if len(d) < 2:
        return 0.0
    m = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(len(d))
    if se < 1e-12:                                  # equal gains (up to rounding)
        return 0.0 if m == 0.0 else math.copysign(math.inf, m)
    return m / se


def max_gain_pvalue(gains: np.ndarray, n_flips: int = N_FLIPS, seed: int = 0) -> float:
    """Westfall & Young's sign-flip p-value of the largest mean column of ``gains`` (exact up to 11 queries)."""
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
    """What :func:`choose` decided (``index`` -1: the fallback), the learned arg-max and the deciding test's figures."""
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
    """Pick a column of ``evidence`` (queries × settings, per-query AP) or the ``fallback``.

    From the fallback (or the first level's arg-max), each of ``levels`` (simplest first) replaces the choice iff
    its arg-max's gain is positive and :func:`max_gain_pvalue` over every column tried gives p ≤ ``alpha``."""
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
    d = decided or {}                                         # no level: no test decided
    return Choice(index, best, float(means[best]), float(np.mean(fallback)) if d and fallback is not None and len(E)
                  else None, d.get("gain"), d.get("t"), d.get("p_value"), alpha, len(E), steps)


@dataclass
class Selection:
    """The evidence of one choice: ``method``, a score per setting (the fallback last), ``fold_scores``, ``chosen``."""
    method: str
    scores: List[float]
    fold_scores: Optional[np.ndarray]
    chosen: int

    def path(self, settings: Sequence[Tuple[Any, Optional[str]]], grids: Sequence[Sequence[float]],
             with_prior: bool = True) -> List[dict]:
        """The learners' ``path_``: an entry per (features, prior, C) with its score(s), then the fallback's."""
        G = len(grids[0]) if len(grids) else 0

        def entry(column: int, **fields) -> dict:
            e = dict(fields, validation=self.scores[column])
            if self.method == "cv":
                e["cv_scores"] = [float(x) for x in self.fold_scores[:, column]]
            return e
        out = [entry(s * G + i, features=features_name(features), **({"prior": prior} if with_prior else {}), C=C)
               for s, (features, prior) in enumerate(settings) for i, C in enumerate(grids[s])]
        if len(self.scores) > len(settings) * G:
            out.append(dict(entry(len(self.scores) - 1, features="raw", prior="best", C=0.0), fallback=True))
        return out


def select(scores: Sequence[float], method: str, fold_scores: Optional[np.ndarray] = None) -> Selection:
    """The arg-max of ``scores`` with its evidence: the grid searches of Approx and the boosted peers."""
    if method not in ("validation", "cv", "none"):
        raise ValueError(f"method must be 'validation', 'cv' or 'none', got {method!r}")
    scores = [float("nan") if s is None else float(s) for s in scores]
    return Selection(method, scores, fold_scores, choose(np.array([scores]), alpha=None).index)
