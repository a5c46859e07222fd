"""The named systems of the experiments: :data:`CONFIGS`, the learners' configurations that both commands know
(a name means one configuration in every command: ``svmmap letor`` builds its array-level fits from it,
:data:`pyterrier_svmmap.experiments.letor.LEARNERS`, and tests/experiments/test_names.py checks that both
build the same parameters), and :data:`SYSTEMS`, the factories of fresh, unfitted PyTerrier estimators that
``svmmap reproduce --systems`` compares.

``svm-map`` is the package's default ``SVMMap()``; ``svm-map-paper`` and the other losses' rows (``svm-roc``,
``svm-ndcg@10``, …) use the paper's bins (:data:`PAPER_PARAMS`), so that they differ in the loss only (Yue et
al. Table 9, Chakrabarti et al. Figure 9); the ``-std`` rows are the losses on the raw features standardised
within queries, the ``-t100`` rows a larger Approx search. The boosted peers' configurations stay in their
command, under different names: reproduce runs the estimators' defaults (``lambdamart``, ``mcrank``,
``adarank``), letor searches a grid (``lambdamart-grid``, ``mcrank-grid``, ``adarank-grid``).

Each trial fits an estimator with ``fit(train_res, train_qrels, valid_res, valid_qrels)`` (``valid_*`` None with
``--valid 0``; the ``*_res`` frames have columns qid, query, docno and ``features``); it chooses its own
hyper-parameters on the validation queries, and ``transform(res)`` adds a ``score`` column. A factory that raises
``ImportError`` (an optional dependency is missing) makes ``reproduce`` skip that system with one message. Add a
system with :func:`register`::

    @register("my-system")
    def _my_system():
        from my_package import MyEstimator      # import inside: an ImportError skips the system
        return MyEstimator(...)
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

logger = logging.getLogger(__name__)

#: Yue et al.'s configuration (§4.2, §5): |K_f| = 50 quantile bins, regularisation towards w = 0, C chosen
#: by validation MAP on the paper's grid. ``svm-map-paper`` and the other losses' rows use it, so that the
#: loss comparison (Table 9, Figure 9) stays the papers'; ``svm-map`` is the package's default SVMMap().
PAPER_PARAMS = dict(features="bins", n_bins=50, prior=None, selection="validation")

#: Multipliers of the C grid for the losses whose joint feature map is on another scale. Scaling Ψ by λ
#: is the same problem as scaling C by λ² (substitute u = λw in OP 1), so a loss whose constraints are
#: λ times longer needs a grid λ² lower to cover the same range of regularisation. φ_mrr is
#: unnormalised (Chakrabarti et al. Eq. 5): a constraint sums up to |N| ≈ 10³ candidates where φ_po
#: averages, so λ² ≈ 10⁶–10⁸; φ_dorm sums A(r) over the top-20 window, λ ≈ 10 or more. svm-mrr@10's grid
#: starts lower still: its higher C cost the most per fit without a better model (docs/experiments.md).
C_GRID_SCALE = {"mrr": 1e-8, "dorm": 1e-4}


@dataclass(frozen=True)
class Config:
    """One configuration: ``learner`` (``"svm-map-default"``: the default ``SVMMap()``, ``"struct"``, ``"approx-ap"``,
    ``"approx-ndcg"``), its ``params`` (a structural SVM's all but C; the Approx learners' ``alphas``, ``betas``,
    ``n_iter``), ``c_scale`` (the C grid is ``DEFAULT_C_GRID`` times it) and ``description``."""
    learner: str
    params: Mapping = field(default_factory=dict)
    description: str = ""
    c_scale: float = 1.0

    def c_grid(self) -> Tuple[float, ...]:
        """The C grid of a structural SVM, read from :data:`pyterrier_svmmap.DEFAULT_C_GRID` when called."""
        import pyterrier_svmmap
        return tuple(c * self.c_scale for c in pyterrier_svmmap.DEFAULT_C_GRID)


def _paper(loss: str, description: str, c_scale: float = 1.0, **params) -> Config:
    # first_stage="auto", the estimators' default: the reference function (the tie-break) is the one the candidates
    # declare; LETOR files declare none, so there it is the best training function, as first_stage=None
    return Config("struct", {"first_stage": "auto", **PAPER_PARAMS, "loss": loss, **params}, description, c_scale)


def _std(loss: str, description: str) -> Config:
    return _paper(loss, description, features="raw", normalise="query")


#: every configuration by name (the commands choose which of them they run)
CONFIGS: Dict[str, Config] = {
    "svm-map": Config("svm-map-default", {}, "the package's default SVMMap(): raw, bins or both, C relative to "
                      "the features' spread, prior, or the best feature, by 5-fold CV, fold models averaged"),
    "svm-map-paper": _paper("map", "SVM-map, 50 quantile bins per feature, C on vali (the paper's)"),
    "svm-map-raw": _paper("map", "SVM-map, raw features as they are, C on vali (svm_map_learn's linear model)",
                          features="raw", normalise=None),
    "svm-map-auto": _paper("map", "SVM-map, features bins / raw / bins+raw (×3 grid) chosen with C", features="auto"),
    # the other losses on the paper's features (Yue et al. Table 9, Chakrabarti et al. Figure 9)
    "svm-roc": _paper("roc", "structural SVM for ROC area (≈ RankSVM), the paper's bins"),
    "svm-ndcg@10": _paper("ndcg@10", "structural SVM for NDCG@10 (binary gains), the paper's bins"),
    "svm-ndcg-nc": _paper("ndcg", "structural SVM for NDCG without cutoff, the paper's bins"),
    "svm-mrr@10": _paper("mrr@10", "structural SVM for MRR@10, the paper's bins", c_scale=C_GRID_SCALE["mrr"]),
    # SVM-COMBO, separate slacks; the MRR member's C is scaled as svm-mrr@10's grid (C_weights)
    "svm-combo": _paper("combo", "SVM-COMBO (MAP, NDCG@10, MRR@10), separate slacks, the paper's bins",
                        loss_params=dict(losses=["map", "ndcg@10", "mrr@10"], slack="separate",
                                         C_weights=[1.0, 1.0, C_GRID_SCALE["mrr"]])),
    # DORM (Le & Smola 2007 as in Chakrabarti et al. 2008): 1 − NDCG@10 with the decay truncated to the
    # top 20 ranks, so each argmax is a ≤ 40 × 20 assignment problem per query
    "dorm": _paper("dorm", "DORM, 1 − NDCG@10 over the top 20, the paper's bins", c_scale=C_GRID_SCALE["dorm"],
                   loss_params=dict(k=10, window=20)),
    "svm-acc": _paper("acc", "structural SVM for accuracy (Yue et al. §5.2), the paper's bins"),
    "svm-acc2": _paper("acc2", "structural SVM for balanced accuracy, the paper's bins"),
    "svm-acc3": _paper("acc", "SVM_acc3: accuracy on percentile bins", binning="percentile"),
    "svm-acc4": _paper("acc", "SVM_acc4: accuracy on min-max bins", binning="minmax"),
    # letor's losses on the raw features standardised within queries (the package's raw block)
    "svm-roc-std": _std("roc", "structural SVM for ROC area (≈ RankSVM), raw features standardised per query"),
    "svm-ndcg@10-std": _std("ndcg@10", "structural SVM for NDCG@10 (binary gains), raw features standardised "
                            "per query"),
    "svm-acc2-std": _std("acc2", "structural SVM for balanced accuracy (classification), raw features "
                         "standardised per query"),
    # reproduce's Approx search (a documented reduction: the estimators' defaults search Qin et al.'s grid, 20
    # (α, β) settings for ApproxAP, 8 α for ApproxNDCG, with T = 200 passes each)
    "approx-ap": Config("approx-ap", dict(alphas=(20.0, 100.0), betas=(10.0, 50.0), n_iter=50),
                        "ApproxAP (Qin et al. 2010), min-max features, α ∈ {20, 100} × β ∈ {10, 50}, T = 50"),
    "approx-ndcg": Config("approx-ndcg", dict(alphas=(20.0, 100.0), betas=None, n_iter=50),
                          "ApproxNDCG (Qin et al. 2010), min-max features, α ∈ {20, 100}, T = 50, "
                          "gains 2^label − 1"),
    "approx-ap-t100": Config("approx-ap", dict(alphas=(10.0, 100.0), betas=(1.0, 10.0), n_iter=100),
                             "ApproxAP (Qin et al. 2010), min-max features, α ∈ {10, 100} × β ∈ {1, 10}, "
                             "T = 100"),
    "approx-ndcg-t100": Config("approx-ndcg", dict(alphas=(10.0, 50.0, 100.0), betas=None, n_iter=100),
                               "ApproxNDCG (Qin et al. 2010), min-max features, α ∈ {10, 50, 100}, T = 100, "
                               "gains 2^label − 1"),
}


SYSTEMS: Dict[str, Callable[[], object]] = {}


def register(name: str, factory: Callable[[], object] = None):
    """Add ``factory`` to ``SYSTEMS`` under ``name`` (usable as a decorator)."""
    def deco(f):
        SYSTEMS[name] = f
        return f
    return deco(factory) if factory is not None else deco


def build(name: str):
    """A fresh estimator of the configuration ``name`` of :data:`CONFIGS`: ``SVMMap()`` for the default,
    ``SVMMap`` (the MAP loss) or ``StructSVM`` with the C grid for a structural SVM, ``ApproxAP`` / ``ApproxNDCG``
    with the configuration's grid and passes."""
    import pyterrier_svmmap as ps
    cfg = CONFIGS[name]
    params = dict(cfg.params)
    if cfg.learner != "struct":
        return getattr(ps, {"svm-map-default": "SVMMap", "approx-ap": "ApproxAP",
                            "approx-ndcg": "ApproxNDCG"}[cfg.learner])(**params)
    if params.get("loss") == "map":
        del params["loss"]
        return ps.SVMMap(C=list(cfg.c_grid()), **params)
    return ps.StructSVM(C=list(cfg.c_grid()), **params)


def _svm_map(paper_grid: bool = False, **params) -> Callable[[], object]:
    """A factory of ``SVMMap(**params)``, with ``DEFAULT_C_GRID`` (read when called) if ``paper_grid``."""
    def make():
        import pyterrier_svmmap as ps
        return ps.SVMMap(**(dict(C=list(ps.DEFAULT_C_GRID)) if paper_grid else {}), **params)
    return make


#: LightGBM's parameters in the comparison: one thread, as every other learner here trains on one (in the forked
#: trial workers LightGBM's OpenMP pool, limited by threadpoolctl only, stalled: fits of ~1 s took 30–70 s)
LIGHTGBM_PARAMS = {"n_jobs": 1}


def _lightgbm(cls: str) -> Callable[[], object]:
    def make():
        try:
            import lightgbm  # noqa: F401
        except ImportError as e:
            raise ImportError(f"needs LightGBM ({e}); pip install 'pyterrier-svmmap[peers]'") from e
        import pyterrier_svmmap as ps
        return getattr(ps, cls)(params=dict(LIGHTGBM_PARAMS))
    return make


#: the names of :data:`CONFIGS` that reproduce runs, in the order of
#: its tables (svm-map-raw is registered with SVM-map's feature options)
SHARED_SYSTEMS = ["svm-map", "svm-map-paper", "svm-roc", "svm-ndcg@10", "svm-ndcg-nc", "svm-mrr@10", "svm-combo",
                  "dorm", "svm-acc", "svm-acc2", "svm-acc3", "svm-acc4", "approx-ap", "approx-ndcg"]
#: the structural SVMs of the papers' other losses (``--systems default``)
STRUCT_SYSTEMS = SHARED_SYSTEMS[2:12]
for _name in SHARED_SYSTEMS[:2]:
    register(_name, partial(build, _name))
# the default's ablations (docs/model-selection.md): no fallback test and no fold averaging, no averaging, a more
# lenient fallback test; SVM-map's feature options (docs/experiments.md): the raw scores as they are, the
# default's rule on the bins alone, thresholds over all training candidates, the prior towards the best function
register("svm-map-cv", _svm_map(fallback_alpha=None, average_folds=False))
register("svm-map-noavg", _svm_map(average_folds=False))
register("svm-map-alpha0.6", _svm_map(fallback_alpha=0.6))
register("svm-map-raw", partial(build, "svm-map-raw"))
register("svm-map-bins", _svm_map(features="bins"))
register("svm-map-allbins", _svm_map(paper_grid=True, threshold_depth=None, **PAPER_PARAMS))
register("svm-map-prior", _svm_map(paper_grid=True, **{**PAPER_PARAMS, "prior": "best"}))
for _name in SHARED_SYSTEMS[2:]:
    register(_name, partial(build, _name))
register("lambdamart", _lightgbm("LambdaMART"))
register("mcrank", _lightgbm("McRank"))


@register("adarank")
def _adarank():
    from pyterrier_svmmap import AdaRank
    return AdaRank()


def resolve(names: Sequence[str]) -> Dict[str, Callable[[], object]]:
    """The factories of ``names`` that can be built; unknown names are an error. Systems whose optional
    dependency is missing are skipped with one warning per missing dependency, naming all the systems
    it skips (e.g. LambdaMART and McRank without LightGBM) and how to install it."""
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {', '.join(unknown)}; known: {', '.join(sorted(SYSTEMS))}")
    out = {}
    skipped: Dict[str, List[str]] = {}          # reason → systems
    for n in names:
        try:
            SYSTEMS[n]()
        except ImportError as e:
            skipped.setdefault(str(e), []).append(n)
            continue
        out[n] = SYSTEMS[n]
    for reason, systems in skipped.items():
        logger.warning("skipping system%s %s: %s", "s" if len(systems) > 1 else "", ", ".join(systems), reason)
    return out


#: ``--systems default``: the learners of the papers (Yue et al. Table 9, Chakrabarti et al. Figure 9,
#: Qin et al.) with the package's default beside the paper's SVM-map, and the boosted peers; ``all`` adds
#: SVM-map's feature options (svm-map-raw, ...) and the default's ablations (svm-map-cv, ...)
PAPER_SYSTEMS = ["svm-map", "svm-map-paper", *STRUCT_SYSTEMS, "approx-ap", "approx-ndcg", "lambdamart", "mcrank",
                 "adarank"]


def parse_names(spec: str) -> List[str]:
    """System names from ``--systems``: a comma-separated list, ``default`` (:data:`PAPER_SYSTEMS`)
    or ``all`` (every registered system)."""
    if spec.strip().lower() in ("all", "default"):
        return list(SYSTEMS if spec.strip().lower() == "all" else PAPER_SYSTEMS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise ValueError("--systems needs at least one name")
    return names
