"""The LETOR 4.0 MQ2008 protocol and the C-path ratio, for ``benchmarks/bench.py`` (parts f and g).

Protocol (the LETOR convention, see the data's README): for each of the 5 official folds, train on
``train.txt``, choose hyper-parameters by validation MAP on ``vali.txt``, report MAP and NDCG@10 on
``test.txt`` with the semantics of Eval-Score-4.0.pl (:mod:`pyterrier_svmmap.measures`: label ≥ 1
relevant, gain 2^label − 1, queries without relevant documents count 0, NDCG@10 = 0 for queries of
fewer than 10 documents), averaged over the folds. Training seconds cover all folds, model selection
(every hyper-parameter setting and its validation scoring) included; parsing the files is timed apart.

Learners:

* ours: :class:`pyterrier_svmmap.svm.ranker.StructSVMRanker` (SVM-map raw, SVM-map 50 bins, SVM-roc raw),
  C ∈ (0.01, 0.1, 1, 10, 100, 1000), ε = 1e-3, validation MAP picks C;
* the previous release (git commit ``9f3a7af``), the same learners, imported in the same process as
  ``pyterrier_svmmap_prev`` from ``git archive``: one ``StructSVM._fit_arrays`` per C (as its
  ``svmmap learn`` trains on arrays), selected on vali by the same MAP here;
* LightGBM lambdarank (``lightgbm.train``): num_leaves ∈ {7, 31} × learning_rate ∈ {0.05, 0.1},
  min_data_in_leaf 20, up to 1,000 rounds, early stopping (50 rounds) on vali map@1000, the setting
  with the best vali MAP (ours) kept;
* XGBoost ``rank:map`` / ``rank:pairwise`` with ``booster="gblinear"`` (coord_descent updater, which is
  deterministic; other rank parameters at their defaults; rank:map on binary labels, label ≥ 1, as it
  requires, rank:pairwise on the graded ones): eta 0.5 × lambda ∈ {0, 0.01, 0.1, 1},
  up to 200 rounds, early stopping (20) on vali map, the best vali MAP kept.

LETOR features are already min–max normalised per query, so every learner gets them as they are.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
import io
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pyterrier_svmmap.measures import letor_average_precision, letor_ndcg_at  # noqa: E402
from pyterrier_svmmap.io.svmlight import read_svmlight  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "letor" / "MQ2008"
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
EPSILON = 1e-3
N_BINS = 50
PREV_COMMIT = "9f3a7af"
#: LightGBM/XGBoost threads: on this loaded 2-core machine 2 threads made XGBoost gblinear 5–50× slower
#: per round than 1 (threads spin-waiting for a busy core), so the peers run on one
THREADS = 1

#: numbers of the previous release measured before this round of work (the issue's)
KNOWN_PREV = dict(map_bins=0.4801, map_raw=0.4734, lgb=0.4747, svm_map_learn=0.4718,
                  seconds_raw=245.0, seconds_bins=1100.0)


# -------------------------------------------------------------------------------------------------
# data
# -------------------------------------------------------------------------------------------------
@dataclass
class Split:
    """One file of a fold as grouped arrays: raw (n, 46), labels (n,), offsets (Q + 1,)."""
    raw: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    def head(self, n_queries: int) -> "Split":
        """The first ``n_queries`` queries (for warm-up fits)."""
        end = self.offsets[n_queries]
        return Split(self.raw[:end], self.labels[:end], self.offsets[: n_queries + 1])


def load_split(path: Path) -> Split:
    data = read_svmlight(str(path))
    return Split(data.grouped(data.features).astype(float), data.grouped(data.labels).astype(int),
                 np.asarray(data.offsets, dtype=np.int64))


def load_folds(folds) -> Tuple[Dict[int, Dict[str, Split]], float]:
    """{fold: {"train"|"vali"|"test": Split}} and the parsing seconds."""
    t = time.perf_counter()
    out = {k: {part: load_split(DATA / f"Fold{k}" / f"{part}.txt") for part in ("train", "vali", "test")}
           for k in folds}
    return out, time.perf_counter() - t


def letor_map(scores: np.ndarray, split: Split) -> float:
    return float(letor_average_precision(scores, split.labels, split.offsets).mean())


def letor_ndcg10(scores: np.ndarray, split: Split) -> float:
    return float(letor_ndcg_at(scores, split.labels, split.offsets, 10).mean())


def trec_ndcg10(scores: np.ndarray, split: Split) -> float:
    """trec_eval's nDCG@10 form (gain = label, 1/log2(rank + 1), short queries scored), for reference."""
    return float(letor_ndcg_at(scores, split.labels, split.offsets, 10, discount="trec", gain="linear",
                               short_query="score").mean())


# -------------------------------------------------------------------------------------------------
# learners: fit(train, vali) -> (predict(split) -> scores, chosen setting, per-setting notes)
# -------------------------------------------------------------------------------------------------
Fitted = Tuple[Callable[[Split], np.ndarray], str, List[dict]]


def ours(loss: str, features: str) -> Callable[[Split, Split], Fitted]:
    """StructSVMRanker over the C grid, C chosen by validation MAP inside ``fit``."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker

    def fit(tr: Split, va: Split, grid=C_GRID) -> Fitted:
        r = StructSVMRanker(C=list(grid), loss=loss, features=features, n_bins=N_BINS, epsilon=EPSILON)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r.fit(tr.raw, tr.labels, tr.offsets, valid=(va.raw, va.labels, va.offsets))
        return (lambda s: r.decision_function(s.raw, s.offsets)), f"C={r.C_:g}", list(r.path_)
    return fit


def load_previous_release(commit: str = PREV_COMMIT):
    """The package as of ``commit``, imported as ``pyterrier_svmmap_prev`` (from ``git archive``)."""
    if "pyterrier_svmmap_prev" in sys.modules:
        return sys.modules["pyterrier_svmmap_prev"]
    tar = subprocess.run(["git", "-C", str(REPO), "archive", commit, "pyterrier_svmmap"],
                         capture_output=True, check=True).stdout
    root = Path(tempfile.mkdtemp(prefix="svmmap-prev-"))
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(root)
    pkg = root / "pyterrier_svmmap"
    spec = importlib.util.spec_from_file_location("pyterrier_svmmap_prev", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pyterrier_svmmap_prev"] = mod
    spec.loader.exec_module(mod)
    return mod


def previous(prev, loss: str, features: str) -> Callable[[Split, Split], Fitted]:
    """The previous release: one StructSVM._fit_arrays per C (its array path), C chosen on vali here."""
    import pandas as pd
    from pyterrier_svmmap_prev.estimator import StructSVM          # noqa: F401  (registered by load)
    from pyterrier_svmmap_prev.frames import Candidates

    def fit(tr: Split, va: Split, grid=C_GRID) -> Fitted:
        qids = np.arange(tr.n_queries).astype(str)
        frame = pd.DataFrame({"qid": np.repeat(qids, np.diff(tr.offsets))})
        cands = Candidates(frame=frame, raw=tr.raw, offsets=tr.offsets, qids=qids, labels=tr.labels,
                           n_relevant=np.add.reduceat(tr.labels > 0, tr.offsets[:-1]).astype(float))
        best, notes = None, []
        for C in grid:
            t = time.perf_counter()
            m = StructSVM(C=C, loss=loss, features=features, n_bins=N_BINS, epsilon=EPSILON)
            m.n_functions_ = tr.raw.shape[1]
            m.base_names_ = [f"f{i}" for i in range(1, tr.raw.shape[1] + 1)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m._fit_arrays(m._usable_training_queries(cands), None)
            v = letor_map(m.decision_function(va.raw, va.offsets), va)
            notes.append(dict(C=C, validation=v, n_iter=m.n_iter_, converged=m.converged_,
                              seconds=time.perf_counter() - t))
            if best is None or v > best[0]:
                best = (v, C, m)
        _, C, m = best
        return (lambda s: m.decision_function(s.raw, s.offsets)), f"C={C:g}", notes
    return fit


LGB_GRID = [dict(num_leaves=nl, learning_rate=lr) for nl in (7, 31) for lr in (0.05, 0.1)]
XGB_GRID = [dict(eta=0.5, reg_lambda=lam) for lam in (0.0, 0.01, 0.1, 1.0)]


def lightgbm_lambdarank(tr: Split, va: Split) -> Fitted:
    """LightGBM lambdarank over LGB_GRID, each with early stopping on vali; best vali MAP kept."""
    import lightgbm as lgb
    best, notes = None, []
    for g in LGB_GRID:
        params = dict(objective="lambdarank", metric="map", eval_at=[1000], min_data_in_leaf=20,
                      num_threads=THREADS, verbose=-1, seed=0, deterministic=True, **g)
        dtr = lgb.Dataset(tr.raw, tr.labels, group=np.diff(tr.offsets))
        dva = lgb.Dataset(va.raw, va.labels, group=np.diff(va.offsets), reference=dtr)
        bst = lgb.train(params, dtr, num_boost_round=1000, valid_sets=[dva],
                        callbacks=[lgb.early_stopping(50, verbose=False)])
        v = letor_map(bst.predict(va.raw, num_iteration=bst.best_iteration), va)
        notes.append(dict(g, rounds=bst.best_iteration, validation=v))
        if best is None or v > best[0]:
            best = (v, g, bst)
    _, g, bst = best
    return ((lambda s: bst.predict(s.raw, num_iteration=bst.best_iteration)),
            f"leaves={g['num_leaves']} lr={g['learning_rate']} trees={bst.best_iteration}", notes)


def xgboost_linear(objective: str) -> Callable[[Split, Split], Fitted]:
    """XGBoost gblinear with ``objective`` over XGB_GRID, early stopping on vali; best vali MAP kept."""
    def fit(tr: Split, va: Split) -> Fitted:
        import xgboost as xgb
        qid = lambda s: np.repeat(np.arange(s.n_queries), np.diff(s.offsets))   # noqa: E731
        # rank:map and the map metric take binary labels only (label ≥ 1 relevant, as MAP's); rank:pairwise
        # trains on the graded labels
        y = (tr.labels >= 1).astype(int) if objective == "rank:map" else tr.labels
        dtr = xgb.DMatrix(tr.raw, label=y, qid=qid(tr))
        dva = xgb.DMatrix(va.raw, label=(va.labels >= 1).astype(int), qid=qid(va))
        best, notes = None, []
        for g in XGB_GRID:
            params = dict(booster="gblinear", updater="coord_descent", objective=objective, eval_metric="map",
                      nthread=THREADS, seed=0, eta=g["eta"], reg_lambda=g["reg_lambda"])
            bst = xgb.train(params, dtr, num_boost_round=200, evals=[(dva, "vali")], early_stopping_rounds=20,
                            verbose_eval=False)
            rounds = bst.best_iteration + 1
            v = letor_map(bst.predict(dva, iteration_range=(0, rounds)), va)
            notes.append(dict(g, rounds=rounds, validation=v))
            if best is None or v > best[0]:
                best = (v, g, bst, rounds)
        _, g, bst, rounds = best

        def predict(s: Split) -> np.ndarray:
            return bst.predict(xgb.DMatrix(s.raw, qid=qid(s)), iteration_range=(0, rounds))
        return predict, f"eta={g['eta']} lambda={g['reg_lambda']} rounds={rounds}", notes
    return fit


# -------------------------------------------------------------------------------------------------
# the protocol
# -------------------------------------------------------------------------------------------------
@dataclass
class FoldResult:
    fold: int
    seconds: float
    test_map: float
    test_ndcg10: float
    test_ndcg10_trec: float
    chosen: str
    notes: List[dict] = field(default_factory=list)


def run_learner(fit, folds: Dict[int, Dict[str, Split]], which) -> List[FoldResult]:
    """Train ``fit`` on each fold in ``which`` (timed: training + model selection), evaluate on test."""
    out = []
    for k in which:
        f = folds[k]
        t = time.perf_counter()
        predict, chosen, notes = fit(f["train"], f["vali"])
        seconds = time.perf_counter() - t
        s = predict(f["test"])
        out.append(FoldResult(k, seconds, letor_map(s, f["test"]), letor_ndcg10(s, f["test"]),
                              trec_ndcg10(s, f["test"]), chosen, notes))
    return out


def warm_up(fit, folds, first: int) -> None:
    """One small fit at C = 1 (numba compilation, imports) before an SVM learner is timed; the boosted
    peers (compiled code, no JIT) are not warmed."""
    tiny = folds[first]["vali"].head(60)
    fit(tiny, tiny, grid=(1.0,))


def learners(prev_pkg) -> List[Tuple[str, str, Callable]]:
    """(row name, key for the previous-release pairing, fit)."""
    rows = [("SVM-map raw (ours)", "map raw", ours("map", "raw")),
            ("SVM-map 50 bins (ours)", "map bins", ours("map", "bins")),
            ("SVM-roc raw (ours)", "roc raw", ours("roc", "raw"))]
    if prev_pkg is not None:
        rows += [("SVM-map raw (prev 9f3a7af)", "prev map raw", previous(prev_pkg, "map", "raw")),
                 ("SVM-map 50 bins (prev 9f3a7af)", "prev map bins", previous(prev_pkg, "map", "bins")),
                 ("SVM-roc raw (prev 9f3a7af)", "prev roc raw", previous(prev_pkg, "roc", "raw"))]
    rows += [("LightGBM lambdarank", "lgb", lightgbm_lambdarank),
             ("XGBoost gblinear rank:map", "xgb map", xgboost_linear("rank:map")),
             ("XGBoost gblinear rank:pairwise", "xgb pairwise", xgboost_linear("rank:pairwise"))]
    return rows


def mean(results: List[FoldResult], attr: str, folds=None) -> float:
    vals = [getattr(r, attr) for r in results if folds is None or r.fold in folds]
    return float(np.mean(vals)) if vals else float("nan")


def protocol(quick: bool = False, prev_bins_folds=(1,), prev_folds=(1, 2, 3, 4, 5), with_prev: bool = True
             ) -> Dict[str, List[FoldResult]]:
    """Part f: every learner on the folds, the table, per-fold MAP of ours raw. Returns the results."""
    all_folds = (1, 2, 3, 4, 5)
    folds, t_parse = load_folds(all_folds)
    n_lines = sum(len(s.labels) for f in folds.values() for s in f.values())
    print(f"MQ2008 from {DATA}: 5 folds × train/vali/test, {n_lines:,} lines parsed in {t_parse:.2f}s "
          "(read_svmlight; not in the training seconds)")
    prev_pkg = None
    if with_prev:
        try:
            prev_pkg = load_previous_release()
        except Exception as e:                     # noqa: BLE001  (report and go on without it)
            print(f"previous release {PREV_COMMIT} not importable in-process ({type(e).__name__}: {e}); "
                  "its rows are left out")
    plan = {"prev map raw": prev_folds, "prev roc raw": prev_folds, "prev map bins": prev_bins_folds}
    if quick:
        plan = {k: (1,) for k in plan}
    results: Dict[str, List[FoldResult]] = {}
    names = {}
    for name, key, fit in learners(prev_pkg):
        which = plan.get(key, all_folds)
        if key.endswith(("raw", "bins")):
            warm_up(fit, folds, which[0])
        t = time.perf_counter()
        results[key] = run_learner(fit, folds, which)
        names[key] = name
        r = results[key]
        print(f"  {name:<32} folds {','.join(map(str, which))}: {time.perf_counter() - t:7.1f}s, "
              f"test MAP {mean(r, 'test_map'):.4f}; chosen: {'; '.join(x.chosen for x in r)}", flush=True)
    print_table(results, names)
    print_folds(results)
    return results


def print_table(results: Dict[str, List[FoldResult]], names: Dict[str, str]) -> None:
    print(f"\n{'learner':<32} {'folds':>9} {'MAP':>7} {'NDCG@10':>8} {'(trec)':>7} {'train s':>8} "
          f"{'÷ prev':>7} {'ΔMAP vs prev':>12}")
    for key, res in results.items():
        which = [r.fold for r in res]
        prev = results.get(f"prev {key}")
        ratio = delta = ""
        if prev:
            same = [r.fold for r in prev]
            mine = sum(r.seconds for r in res if r.fold in same)
            ratio = f"{mine / sum(r.seconds for r in prev):7.3f}"
            delta = f"{mean(res, 'test_map', same) - mean(prev, 'test_map'):+.4f} (f{','.join(map(str, same))})"
        print(f"{names[key]:<32} {','.join(map(str, which)):>9} {mean(res, 'test_map'):7.4f} "
              f"{mean(res, 'test_ndcg10'):8.4f} {mean(res, 'test_ndcg10_trec'):7.4f} "
              f"{sum(r.seconds for r in res):8.2f} {ratio:>7} {delta:>12}")
    raw, bins = results.get("map raw"), results.get("map bins")
    print("MAP, NDCG@10: Eval-Score-4.0.pl semantics (NDCG@10 = 0 for queries of < 10 documents); "
          "(trec): trec_eval's nDCG@10 form. Training seconds: all folds listed, C/grid selection included.")
    if raw and bins and len(raw) == 5:
        print(f"targets: raw protocol ≤ 30 s — {sum(r.seconds for r in raw):.1f} s; 50 bins ≤ 60 s — "
              f"{sum(r.seconds for r in bins):.1f} s; MAP within ±0.002 of the previous release on the same folds "
              "(ΔMAP column)")
    k = KNOWN_PREV
    print(f"known numbers of the previous release: MAP bins {k['map_bins']}, raw {k['map_raw']}, LightGBM "
          f"lambdarank {k['lgb']}, original svm_map_learn {k['svm_map_learn']}; training {k['seconds_raw']:.0f} s raw, "
          f"{k['seconds_bins']:.0f} s with 50 bins (whole protocol)")


def print_folds(results: Dict[str, List[FoldResult]]) -> None:
    raw = results.get("map raw")
    if not raw:
        return
    print("\nSVM-map raw (ours) per fold: " + "  ".join(
        f"Fold{r.fold} MAP {r.test_map:.4f} ({r.chosen}, {r.seconds:.1f}s)" for r in raw))
    path = "; ".join(f"C={p['C']:g}: {p['n_iter']} it" for p in raw[0].notes)
    print(f"  Fold1 path (iterations per C): {path}")


# -------------------------------------------------------------------------------------------------
# part g: C path ÷ one fit at C = 1
# -------------------------------------------------------------------------------------------------
def c_path_ratio(name: str, tr: Split, va: Split, features: str, repeat: int = 2) -> None:
    """Seconds of StructSVMRanker(C=grid) (validation on ``va``) ÷ one fit at C = 1 (best of ``repeat``)."""
    from pyterrier_svmmap.svm.ranker import StructSVMRanker

    def fit(C):
        r = StructSVMRanker(C=C, features=features, n_bins=N_BINS, epsilon=EPSILON)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            r.fit(tr.raw, tr.labels, tr.offsets, valid=(va.raw, va.labels, va.offsets))
            return time.perf_counter() - t, r
    fit(1.0)                                                            # warm-up
    one = min(fit(1.0)[0] for _ in range(repeat))
    runs = [fit(list(C_GRID)) for _ in range(repeat)]
    grid, r = min(runs, key=lambda x: x[0])
    its = " ".join(f"{p['C']:g}:{p['n_iter']}" for p in r.path_)
    print(f"{name:<28} {one:8.2f} {grid:8.2f} {grid / one:6.2f}  C_={r.C_:<6g} iterations per C: {its}",
          flush=True)


def part_g(quick: bool, synthetic) -> None:
    """C-path ratio on MQ2008 Fold1 (raw, 50 bins) and a synthetic set (``synthetic(n, seed=)``)."""
    folds, _ = load_folds((1,))
    f = folds[1]
    print(f"{'data':<28} {'C=1 s':>8} {'grid s':>8} {'ratio':>6}  (grid: {len(C_GRID)} C, validation MAP picks C)")
    c_path_ratio("MQ2008 Fold1 raw", f["train"], f["vali"], "raw")
    c_path_ratio("MQ2008 Fold1 50 bins", f["train"], f["vali"], "bins", repeat=1)     # minutes per grid
    n = 100_000
    raw, labels, offsets = synthetic(n, seed=3)
    cut = len(offsets) * 3 // 4
    tr = Split(raw[: offsets[cut]], labels[: offsets[cut]], offsets[: cut + 1])
    va = Split(raw[offsets[cut]:], labels[offsets[cut]:], offsets[cut:] - offsets[cut])
    c_path_ratio(f"synthetic {n:,} bins", tr, va, "bins", repeat=1 if quick else 2)
    print("target: the 6-value grid ≤ 2× one fit at C = 1")
