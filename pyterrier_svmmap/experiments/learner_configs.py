"""One table of the learners' configurations (:data:`CONFIGS`): a name means one configuration in every command.
``svmmap reproduce`` builds its estimators from it (:data:`pyterrier_svmmap.experiments.systems.SYSTEMS`),
``svmmap letor`` its array-level fits (:data:`pyterrier_svmmap.experiments.letor_learners.LEARNERS`);
tests/experiments/test_names.py checks that both build the same parameters.

``svm-map`` is the package's default ``SVMMap()``; ``svm-map-paper`` and the other losses' rows (``svm-roc``,
``svm-ndcg@10``, …) use the paper's bins (:data:`PAPER_PARAMS`), so that they differ in the loss only (Yue et
al. Table 9, Chakrabarti et al. Figure 9); the ``-std`` rows are the losses on the raw features standardised
within queries, the ``-t100`` rows a larger Approx search. The boosted peers' configurations stay in their
command, under different names: reproduce runs the estimators' defaults (``lambdamart``, ``mcrank``,
``adarank``), letor searches a grid (``lambdamart-grid``, ``mcrank-grid``, ``adarank-grid``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

#: Yue et al.'s configuration (§4.2, §5): |K_f| = 50 quantile bins, regularisation towards w = 0, C chosen
#: by validation MAP on the paper's grid. ``svm-map-paper`` and the other losses' rows use it, so that the
#: loss comparison (Table 9, Figure 9) stays the papers'; ``svm-map`` is the package's default SVMMap().
PAPER_PARAMS = dict(features="bins", n_bins=50, prior=None, selection="validation")

#: what every structural SVM of the table adds to its configuration: the reference function (the tie-break) is
#: the one the candidates declare, the estimators' default; LETOR files declare none, so there it is the best
#: training function, as ``first_stage=None``
STRUCT_DEFAULTS = dict(first_stage="auto")

#: Multipliers of the C grid for the losses whose joint feature map is on another scale. Scaling Ψ by λ
#: is the same problem as scaling C by λ² (substitute u = λw in OP 1), so a loss whose constraints are
#: λ times longer needs a grid λ² lower to cover the same range of regularisation. φ_mrr is
#: unnormalised (Chakrabarti et al. Eq. 5): a constraint sums up to |N| ≈ 10³ candidates where φ_po
#: averages, so λ² ≈ 10⁶–10⁸; φ_dorm sums A(r) over the top-20 window, λ ≈ 10 or more. svm-mrr@10's grid
#: starts lower still: its higher C cost the most per fit without a better model (docs/experiments.md).
C_GRID_SCALE = {"mrr": 1e-8, "dorm": 1e-4}

#: reproduce's Approx search (a documented reduction: the estimators' defaults search Qin et al.'s grid, 20
#: (α, β) settings for ApproxAP, 8 α for ApproxNDCG, with T = 200 passes each)
APPROX_AP_ALPHAS = (20.0, 100.0)
APPROX_AP_BETAS = (10.0, 50.0)
APPROX_NDCG_ALPHAS = (20.0, 100.0)
APPROX_N_ITER = 50


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
    return Config("struct", {**STRUCT_DEFAULTS, **PAPER_PARAMS, "loss": loss, **params}, description, c_scale)


def _std(loss: str, description: str) -> Config:
    return Config("struct", dict(STRUCT_DEFAULTS, loss=loss, features="raw", normalise="query", n_bins=50,
                                 prior=None, selection="validation"), description)


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
    "approx-ap": Config("approx-ap", dict(alphas=APPROX_AP_ALPHAS, betas=APPROX_AP_BETAS, n_iter=APPROX_N_ITER),
                        "ApproxAP (Qin et al. 2010), min-max features, α ∈ {20, 100} × β ∈ {10, 50}, T = 50"),
    "approx-ndcg": Config("approx-ndcg", dict(alphas=APPROX_NDCG_ALPHAS, betas=None, n_iter=APPROX_N_ITER),
                          "ApproxNDCG (Qin et al. 2010), min-max features, α ∈ {20, 100}, T = 50, "
                          "gains 2^label − 1"),
    "approx-ap-t100": Config("approx-ap", dict(alphas=(10.0, 100.0), betas=(1.0, 10.0), n_iter=100),
                             "ApproxAP (Qin et al. 2010), min-max features, α ∈ {10, 100} × β ∈ {1, 10}, "
                             "T = 100"),
    "approx-ndcg-t100": Config("approx-ndcg", dict(alphas=(10.0, 50.0, 100.0), betas=None, n_iter=100),
                               "ApproxNDCG (Qin et al. 2010), min-max features, α ∈ {10, 50, 100}, T = 100, "
                               "gains 2^label − 1"),
}


def config(name: str) -> Optional[Config]:
    """The configuration of ``name`` (None: a name only one command knows, e.g. a boosted peer)."""
    return CONFIGS.get(name)
