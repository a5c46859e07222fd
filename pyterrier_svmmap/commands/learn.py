"""Train a ranking model on an svmlight/LETOR file (like svm_map_learn / svm_rank_learn).

``svmmap learn [-c C] [-e EPSILON] [--loss map|roc|ndcg@10|...] [--bins N | --raw] TRAIN MODEL``

TRAIN holds lines ``label qid:Q idx:val ... # comment`` (label > 0 = relevant; a feature absent from
a line is 0, as in svmlight), or is an index file listing such files. MODEL is a directory (written as
:mod:`pyterrier_svmmap.model_io` describes) that ``svmmap classify``, ``SVMMap.load`` and
``pt.Artifact.load`` read.

The objective is OP 1 of Yue et al. (2007), the 1-slack structural SVM over the n training queries:

    min_w  ½‖w‖² + (C/n) Σ_{i=1..n} ξ_i
    s.t.   ∀i, ∀y ≠ y_i:  wᵀΨ(x_i, y_i) − wᵀΨ(x_i, y) ≥ Δ(y_i, y) − ξ_i

with Δ in [0, 1] (1 − AP for --loss map). This is the normalisation of SVMstruct 3.x (the documented
objective of its instances such as SVMmulticlass is ½w·w + C/n Σξ_i), the framework svm_map and svm_rank
are built on, so ``-c`` means the same thing: C is divided by the number of queries n. It is *not*
SVMlight's C (½w·w + C Σξ_i, unnormalised): C_light = C/n. Because Δ ≤ 1 (svm_rank scales its
loss differently), the best C on a given data set need not coincide with svm_rank's.

Features: the svmlight features are the base scores. ``--raw`` (default) uses them as they are — the
linear model on the given features that svm_map_learn trains; LETOR features are already normalised
per query, so nothing else is needed. ``--bins N`` instead learns the paper's step functions: N
thresholds per feature at quantiles of the training values (§4.2; N·F weights, which needs more
training queries than the features have dimensions). Queries without a relevant document (or without a
non-relevant one) cannot form constraints: they are skipped with a warning.
"""
from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = __doc__
    parser.add_argument("-c", dest="C", type=float, default=1.0, metavar="C",
                        help="C of ½‖w‖² + C/n Σξ_i, n = number of training queries (svm_struct's "
                             "convention; SVMlight's C = this C / n). Default 1.0")
    parser.add_argument("-e", dest="epsilon", type=float, default=1e-3, metavar="EPSILON",
                        help="cutting-plane tolerance: stop when no constraint is violated by more (default 0.001)")
    parser.add_argument("--loss", default="map",
                        help="structural loss: map (SVM-map, default), roc, ndcg@10, mrr@10, ... (any name "
                             "of pyterrier_svmmap.LOSSES, with @k for the cut-off)")
    grp = parser.add_mutually_exclusive_group()
    grp.add_argument("--bins", type=int, metavar="N", help="N quantile thresholds per feature (the paper's φ)")
    grp.add_argument("--raw", action="store_true", help="features as they are (default)")
    parser.add_argument("--max-iter", type=int, default=1000, help="cutting-plane iterations cap (default 1000)")
    parser.add_argument("train", metavar="TRAIN", help="svmlight/LETOR training file, or an index file listing files")
    parser.add_argument("model", metavar="MODEL", help="model directory to write")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from ..model_io import check_writable
    from ..ranker import StructSVMRanker
    from ..svmlight import read_svmlight

    features = "bins" if args.bins is not None else "raw"
    try:                                   # every parameter checked before any data is read
        ranker = StructSVMRanker(C=args.C, loss=args.loss, features=features, n_bins=args.bins if args.bins is not None else 50,
                                 epsilon=args.epsilon, max_iter=args.max_iter)
        check_writable(args.model)
    except (ValueError, FileExistsError) as e:
        raise UsageError(str(e)) from None
    t = time.perf_counter()
    data = read_svmlight(args.train)
    log.info("read %d lines, %d queries, %d features from %s (%.1fs)", data.n_lines, len(data.query_ids),
             data.n_features, ", ".join(data.sources), time.perf_counter() - t)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit_ranking_data(ranker, data)
        except ValueError as e:
            raise UsageError(f"{data.sources[0]}: {e}") from None
    for w in caught:
        log.warning("%s", w.message)
    estimator = "pyterrier_svmmap.estimator:SVMMap" if args.loss == "map" else "pyterrier_svmmap.estimator:StructSVM"
    save_ranker(ranker, args.model, estimator)
    log.info("trained in %d iterations (%s), model written to %s", ranker.n_iter_,
             "converged" if ranker.converged_ else "NOT converged: raise --max-iter or -e", args.model)
    return 0


def fit_ranking_data(ranker, data):
    """Fit an array-level ranker on a :class:`~pyterrier_svmmap.svmlight.RankingData` (svmlight features
    are named ``f1, f2, ...`` after their 1-based indices)."""
    from ..layout import default_base_names
    ranker.fit(data.grouped(data.features), data.grouped(data.labels), data.offsets,
               base_names=default_base_names(data.n_features, start=1))
    ranker.training_summary_["source"] = ", ".join(data.sources)
    return ranker


def save_ranker(ranker, path, estimator: str):
    """Write a fitted StructSVMRanker as the model of PyTerrier estimator ``estimator`` (``module:class``),
    so that ``SVMMap.load``/``pt.Artifact.load`` read it too, without importing PyTerrier here."""
    from ..model_io import class_path, save_model
    params = dict(ranker.get_params(), verbose=False)
    return save_model(path, estimator, params, ranker.get_state(), ranker=class_path(type(ranker)))
