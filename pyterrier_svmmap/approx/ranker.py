"""ApproxAP and ApproxNDCG (Qin, Liu & Li 2010) on arrays: smoothed AP / NDCG trained by Algorithm 1 and selected
over the paper's grids (§6.3, §6.4), exact sums over the relevant candidates in :mod:`._kernels`."""
from __future__ import annotations

import logging
import time
from itertools import product
from types import ModuleType
from typing import Dict, List, Optional, Tuple

import numpy as np

import pyterrier_svmmap._jit as _jit
from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
from pyterrier_svmmap.measures import average_precision, dcg_at
from pyterrier_svmmap.selection import select
from pyterrier_svmmap.params import (Param, ParamSpec, Parametrized, boolean, one_of, optional_int, positive_int,
                                     positive_number)
from pyterrier_svmmap.state import (check_state, float_from_json, int_from_json, json_float, json_params,
                                    state_array)

log = logging.getLogger(__name__)

#: §6.3: "a set of α values {10, 20, 50, 100} and a set of β values {1, 10, 20, 50, 100}"
AP_ALPHAS: Tuple[float, ...] = (10.0, 20.0, 50.0, 100.0)
AP_BETAS: Tuple[float, ...] = (1.0, 10.0, 20.0, 50.0, 100.0)
#: §6.4: "a larger set of α values {10, 20, 50, 100, 150, 200, 250, 300}"
NDCG_ALPHAS: Tuple[float, ...] = (10.0, 20.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0)

#: the default of :class:`ApproxRanker`'s ``max_entries`` (a parameter without effect on the compiled kernels)
DEFAULT_MAX_ENTRIES = 1 << 22


def jit() -> ModuleType:
    return _jit.load("approx._kernels")


def gains(labels: np.ndarray) -> np.ndarray:
    """2^r − 1 of Eq. (3)/(21); labels ≤ 0 (non-relevant, or negative judgements) gain 0."""
    return np.exp2(np.clip(np.asarray(labels, dtype=float), 0.0, None)) - 1.0


def ideal_dcg(labels: np.ndarray, offsets: np.ndarray, k: Optional[int] = None,
              n_relevant: Optional[np.ndarray] = None) -> np.ndarray:
    """N_k of Eq. (3) per query; relevant documents of the qrels that are not candidates count with gain 1."""
    offsets = np.asarray(offsets)
    g = gains(labels)
    out = np.zeros(len(offsets) - 1)
    for q in range(len(out)):
        gq = g[offsets[q]:offsets[q + 1]]
        gq = gq[gq > 0]
        if n_relevant is not None and n_relevant[q] > len(gq):
            gq = np.concatenate([gq, np.ones(int(n_relevant[q]) - len(gq))])
        gq = np.sort(gq)[::-1][:k]
        out[q] = np.sum(gq / np.log2(np.arange(2, len(gq) + 2)))
    return out


def ndcg(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, k: Optional[int] = None,
         n_relevant: Optional[np.ndarray] = None, idcg: Optional[np.ndarray] = None) -> np.ndarray:
    """Exact NDCG@k per query (k=None: NDCG@n, Eq. (5)) with gains 2^r − 1; ties by candidate order."""
    offsets = np.asarray(offsets)
    dcg = dcg_at(scores, gains(labels), offsets, k)
    if idcg is None:
        idcg = ideal_dcg(labels, offsets, k, n_relevant)
    return np.divide(dcg, idcg, out=np.zeros(len(dcg)), where=idcg > 0)


def _json_record(record: dict, fields) -> dict:
    """The ``fields`` ((key, int or float) pairs) of ``record`` as JSON values (a model file's records)."""
    return {k: int(record[k]) if t is int else json_float(record[k]) for k, t in fields}


def _record_from_json(record, fields, what: str) -> dict:
    """The ``fields`` of a JSON dict as :func:`_json_record` wrote them, checked (ValueError naming ``what``)."""
    lacking = [k for k, _ in fields if not isinstance(record, dict) or k not in record]
    if lacking:
        raise ValueError(f"{what} lacks {lacking}")
    return {k: (int_from_json if t is int else float_from_json)(record[k], f"{what}[{k!r}]") for k, t in fields}


MEASURES = ("ap", "ndcg")
_EMPTY = np.empty(0)


class _Dense32(DenseBlock):
    """A dense part of φ in float32 for the training loop (memory-bound products measured 2–4× faster)."""

    def __init__(self, values: np.ndarray):
        self.values = np.ascontiguousarray(values, dtype=np.float32)

    def dot(self, w: np.ndarray) -> np.ndarray:
        return (self.values @ w.astype(np.float32)).astype(float)

    def rdot(self, c: np.ndarray) -> np.ndarray:
        return (c.astype(np.float32) @ self.values).astype(float)


def _single_blas_thread():
    """Limit BLAS to one thread while training (multi-threaded gemv measured 5–10× slower on small products)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                                  # pragma: no cover
        from contextlib import nullcontext
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


class _QuerySet:
    """Candidates of several queries split per query (``parts`` with ``split``), with what the measures need."""

    def __init__(self, X: FeatureMatrix, labels, offsets, n_relevant, split: bool):
        self.labels = labels = np.asarray(labels, dtype=float)
        self.offsets = offsets = np.asarray(offsets, dtype=np.int64)
        if len(labels) != X.n_rows or offsets[0] != 0 or offsets[-1] != len(labels):
            raise ValueError(f"{X.n_rows} feature rows, {len(labels)} labels and offsets ending at "
                             f"{offsets[-1]} do not describe the same candidates")
        self.n_relevant = None if n_relevant is None else np.asarray(n_relevant, dtype=float)
        self.idcg = ideal_dcg(labels, offsets, None, self.n_relevant)
        self.X = FeatureMatrix([_Dense32(b.values) if isinstance(b, DenseBlock) else b for b in X.blocks])
        queries = list(zip(offsets[:-1], offsets[1:]))
        self.parts = [self.X.take(np.arange(lo, hi)) for lo, hi in queries] if split else []
        g = gains(labels)
        self.rel = [np.flatnonzero(labels[lo:hi] > 0).astype(np.int64) for lo, hi in queries]   # local indices
        self.rel_gains = [np.ascontiguousarray(g[lo:hi][r]) for (lo, hi), r in zip(queries, self.rel)]
        # the same, flat, for the compiled exact measures
        self._rel_flat = np.concatenate(self.rel + [np.zeros(0, np.int64)])
        self._rel_offsets = np.r_[0, np.cumsum([len(r) for r in self.rel])].astype(np.int64)
        self._rel_gains_flat = np.concatenate(self.rel_gains + [np.zeros(0)])
        self._ap_n_rel = np.array([self.n_rel(q) for q in range(self.n_queries)], dtype=float)
        longest = int(np.diff(offsets).max()) if len(offsets) > 1 else 0
        self._disc = 1.0 / np.log2(np.arange(1, longest + 1) + 1)       # as measures.dcg_at computes it

    def n_rel(self, q: int) -> float:
        """|D+| of query q: ``n_relevant`` if given, else its relevant candidates."""
        return float(len(self.rel[q]) if self.n_relevant is None else self.n_relevant[q])

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    def exact(self, measure: str, scores: np.ndarray) -> np.ndarray:
        """Exact AP or NDCG@n per query, the bits of :func:`.measures.average_precision` and :func:`ndcg`."""
        if not np.all(np.isfinite(scores)):
            if measure == "ap":
                return average_precision(scores, self.labels, self.offsets, self.n_relevant)
            return ndcg(scores, self.labels, self.offsets, idcg=self.idcg)
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        out = np.zeros(self.n_queries)
        if measure == "ap":
            jit().exact_ap(scores, self.offsets, self._rel_flat, self._rel_offsets, self._ap_n_rel, out)
            return out
        jit().exact_dcg(scores, self.offsets, self._rel_flat, self._rel_offsets, self._rel_gains_flat, self._disc, out)
        return np.divide(out, self.idcg, out=np.zeros(len(out)), where=self.idcg > 0)


class ApproxRanker(Parametrized):
    """Linear ranker on a FeatureMatrix trained by ApproxAP or ApproxNDCG: ``n_iter`` passes of Algorithm 1 per grid
    point; the model with the best validation (else training) measure is kept.

    Learned: ``coef_``, ``alpha_``, ``beta_``, ``best_iteration_``, the selected point's ``coef_path_``,
    ``approx_error_``, ``train_score_`` and ``valid_score_``, ``search_results_`` and ``best_valid_score_``.

    {parameters}"""

    PARAMS = ParamSpec([
        Param("measure", "ap", "{'ap', 'ndcg'}", "The smoothed measure: ÂP (binary labels) or N̂DCG (gains "
              "2^label − 1).", check=one_of(*MEASURES)),
        Param("alphas", None, "sequence of float or None", "The α grid of the position approximation; None: the "
              "paper's (§6.3, §6.4)."),
        Param("betas", None, "sequence of float or None", "The β grid of the truncation (ÂP only); None: the "
              "paper's."),
        Param("n_iter", 200, "int", "T, the passes over the training queries per grid point; the best iteration is "
              "kept.", check=positive_int),
        Param("learning_rate", 0.01, "float", "η, the step of the gradient ascent.", check=positive_number),
        Param("w0", None, "ndarray or None", "θ_0, the start of every grid point (None: 0)."),
        Param("track_error", True, "bool", "Record ρ, the approximation error per iteration (``approx_error_``).",
              check=boolean, model=False),
        Param("max_entries", DEFAULT_MAX_ENTRIES, "int", "No effect (the compiled kernels take O(n) memory per "
              "query); kept in the parameters and model files.", check=positive_int),
        Param("random_state", 0, "int or None", "The seed of the query order of every pass.", check=optional_int),
        Param("verbose", False, "bool", "Show progress.", check=boolean, model=False),
    ])

    def __init__(self, *, measure="ap", alphas=None, betas=None, n_iter=200, learning_rate=0.01, w0=None,
                          track_error=True, max_entries=DEFAULT_MAX_ENTRIES, random_state=0, verbose=False):
        self.measure = measure
        self.alphas = alphas
        self.betas = betas
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.w0 = w0
        self.track_error = track_error
        self.max_entries = max_entries
        self.random_state = random_state
        self.verbose = verbose

    def grid(self) -> List[Tuple[float, float]]:
        """The (α, β) pairs searched (β NaN for ApproxNDCG, whose measure has none)."""
        if self.measure not in MEASURES:
            raise ValueError(f"measure={self.measure!r} is not valid; choose one of {MEASURES}")
        ap = self.measure == "ap"
        alphas = (AP_ALPHAS if ap else NDCG_ALPHAS) if self.alphas is None else self.alphas
        betas = (AP_BETAS if self.betas is None else self.betas) if ap else (np.nan,)
        return [(float(a), float(b)) for a, b in product(alphas, betas)]

    def _query(self, qs: _QuerySet, q: int, s: np.ndarray, alpha: float, beta: float,
               grad: bool) -> Tuple[float, Optional[np.ndarray]]:
        """(M̂, ∂M̂/∂s) of query q of ``qs`` at scores ``s``, from the compiled kernels (:func:`jit`)."""
        rel = qs.rel[q]
        norm = qs.n_rel(q) if self.measure == "ap" else float(qs.idcg[q])        # |D+| or N_n
        if len(rel) == 0 or norm <= 0:
            return 0.0, (np.zeros(len(s)) if grad else None)
        s = np.ascontiguousarray(s, dtype=np.float64)
        out = np.empty(len(s)) if grad else _EMPTY
        if self.measure == "ap":
            value = jit().ap_query(s, rel, float(alpha), float(beta), norm, grad, out)
        else:
            value = jit().ndcg_query(s, rel, qs.rel_gains[q], float(alpha), norm, grad, out)
        return float(value), (out if grad else None)

    def fit(self, X: FeatureMatrix, labels: np.ndarray, offsets: np.ndarray,
            n_relevant: Optional[np.ndarray] = None, X_valid: Optional[FeatureMatrix] = None,
            labels_valid: Optional[np.ndarray] = None, offsets_valid: Optional[np.ndarray] = None,
            n_relevant_valid: Optional[np.ndarray] = None) -> "ApproxRanker":
        """Run Algorithm 1 for every grid point and keep the best model."""
        self.check_params()
        grid = self.grid()
        train = _QuerySet(X, labels, offsets, n_relevant, split=True)
        if X_valid is not None:
            valid = _QuerySet(X_valid, labels_valid, offsets_valid, n_relevant_valid, split=False)
        else:
            log.info("no validation queries: selecting the model by the training %s", self.measure)
            valid = train
        w0 = np.zeros(X.dim) if self.w0 is None else np.asarray(self.w0, dtype=float).copy()
        if w0.shape != (X.dim,):
            raise ValueError(f"w0 has shape {w0.shape}, the features have {X.dim} dimensions")
        # queries whose gradient is always 0 (no relevant candidate) are skipped
        active = np.flatnonzero([len(r) > 0 for r in train.rel])

        with _single_blas_thread():
            runs = [self._run(train, valid, active, w0, alpha, beta) for alpha, beta in grid]
        self.search_results_: List[Dict] = [{k: v for k, v in r.items() if k != "coef_path"} for r in runs]
        res = runs[select([r["best_valid"] for r in runs], "validation").chosen]
        for key in ("alpha", "beta", "best_iteration", "coef_path", *self._CURVES):
            setattr(self, key + "_", res[key])
        self.coef_ = self.coef_path_[self.best_iteration_ - 1].copy()
        self.best_valid_score_ = res["best_valid"]
        log.info("%s: selected alpha=%g beta=%g iteration %d, validation %.4f",
                 type(self).__name__, self.alpha_, self.beta_, self.best_iteration_, res["best_valid"])
        return self

    def _run(self, train: _QuerySet, valid: _QuerySet, active: np.ndarray, w0: np.ndarray,
             alpha: float, beta: float) -> Dict:
        """Algorithm 1 for one (α, β): the T models and their curves."""
        t0 = time.perf_counter()
        rng = np.random.default_rng(self.random_state)
        T, eta = int(self.n_iter), float(self.learning_rate)
        w = w0.copy()
        path = np.empty((T, len(w)))
        rho = np.full(T, np.nan)
        train_score = np.full(T, np.nan)
        valid_score = np.empty(T)
        from tqdm.auto import tqdm
        for t in tqdm(range(T), desc=f"Approx{self.measure.upper()} α={alpha:g} β={beta:g}", disable=not self.verbose):
            for q in rng.permutation(active):
                Xq = train.parts[q]
                _, gs = self._query(train, q, Xq.dot(w), alpha, beta, True)
                w += eta * Xq.rdot(gs)                         # Algorithm 1, line 11
            path[t] = w
            if not np.all(np.isfinite(w)):
                raise FloatingPointError(f"weights diverged at iteration {t + 1} (alpha={alpha}, "
                                         f"beta={beta}); lower learning_rate")
            if self.track_error or valid is train:
                s = train.X.dot(w)
                exact = train.exact(self.measure, s)
                train_score[t] = exact.mean()
                if self.track_error:
                    o = train.offsets
                    approx = [self._query(train, q, s[o[q]:o[q + 1]], alpha, beta, False)[0] for q in range(len(o) - 1)]
                    rho[t] = np.mean(np.abs(np.array(approx) - exact))
            valid_score[t] = train_score[t] if valid is train else \
                valid.exact(self.measure, valid.X.dot(w)).mean()
        best_t = int(np.argmax(valid_score))                   # first of equal maxima
        return {"alpha": alpha, "beta": beta, "best_iteration": best_t + 1,
                "best_valid": float(valid_score[best_t]), "valid_score": valid_score,
                "train_score": train_score, "approx_error": rho, "coef_path": path,
                "seconds": time.perf_counter() - t0}

    def decision_function(self, X: FeatureMatrix) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        return X.dot(self.coef_)

    #: learned arrays of length T (per iteration of the selected grid point), and per grid point
    _CURVES = ("approx_error", "train_score", "valid_score")
    _SEARCH_SCALARS = (("alpha", float), ("beta", float), ("best_iteration", int),
                       ("best_valid", float), ("seconds", float))
    _META_SCALARS = (("alpha", float), ("beta", float), ("best_iteration", int), ("best_valid_score", float))

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        params = self.get_params(deep=False)
        w0 = params.pop("w0")
        meta = {"ranker": type(self).__name__,
                "params": {**json_params(params, type(self).__name__), "w0": None if w0 is None else "array"},
                **_json_record({k: getattr(self, k + "_") for k, _ in self._META_SCALARS}, self._META_SCALARS),
                "search_results": [_json_record(r, self._SEARCH_SCALARS) for r in self.search_results_]}
        arrays = {"coef": np.array(self.coef_, dtype=float), "coef_path": np.array(self.coef_path_, dtype=float)}
        T = len(self.coef_path_)
        for name in self._CURVES:
            arrays[name] = np.array(getattr(self, name + "_"), dtype=float)
            arrays["search_" + name] = np.array([r[name] for r in self.search_results_], dtype=float).reshape(-1, T)
        if w0 is not None:
            arrays["w0"] = np.array(w0, dtype=float)
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "ApproxRanker":
        name = cls.__name__
        array_keys = ("coef", "coef_path", *cls._CURVES, *("search_" + c for c in cls._CURVES))
        params = check_state(cls, meta, arrays, (*(k for k, _ in cls._META_SCALARS), "search_results"), array_keys)
        if params["w0"] not in (None, "array"):
            raise ValueError(f"{name} state: meta['params']['w0'] must be None or 'array' (the vector "
                             f"is arrays['w0']), got {params['w0']!r}")
        if params["w0"] == "array" and "w0" not in arrays:
            raise ValueError(f"{name} state is incomplete: meta['params']['w0'] is 'array' but arrays['w0'] is missing")
        try:
            probe = cls(**{**params, "w0": None})
            n_grid, T = len(probe.grid()), int(probe.n_iter)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name} state: meta['params'] is invalid ({e})") from None
        coef_path = state_array(arrays, "coef_path", (T, None), name)
        dim = coef_path.shape[1]
        if params["w0"] == "array":
            params["w0"] = state_array(arrays, "w0", (dim,), name)
        self = cls(**params)
        self.coef_path_ = coef_path
        self.coef_ = state_array(arrays, "coef", (dim,), name)
        what = f"{name} state: meta"
        results = meta["search_results"]
        if not isinstance(results, list) or len(results) != n_grid:
            raise ValueError(f"{what}['search_results'] must be a list of one dict per grid point "
                             f"({n_grid} for these parameters), got "
                             f"{len(results) if isinstance(results, list) else type(results).__name__}")
        for c in cls._CURVES:
            setattr(self, c + "_", state_array(arrays, c, (T,), name))
        search = {c: state_array(arrays, "search_" + c, (n_grid, T), name) for c in cls._CURVES}
        scalars = _record_from_json(meta, cls._META_SCALARS, what)
        self.alpha_, self.beta_, self.best_iteration_, self.best_valid_score_ = scalars.values()
        if not 1 <= self.best_iteration_ <= T:
            raise ValueError(f"{what}['best_iteration'] is {self.best_iteration_}, not in 1..n_iter={T}")
        self.search_results_ = []
        for i, r in enumerate(results):
            sc = _record_from_json(r, cls._SEARCH_SCALARS, f"{what}['search_results'][{i}]")
            seconds = sc.pop("seconds")                                       # the key order fit writes:
            self.search_results_.append({**sc, **{c: search[c][i].copy() for c in cls._CURVES[::-1]},
                                         "seconds": seconds})
        return self
