"""Compile the numba kernels ahead, so that the first ``svmmap learn`` (or fit) does not wait for them.

numba compiles the package's kernels the first time they run after an install and caches them on disk
(``__pycache__`` beside the package, or ``NUMBA_CACHE_DIR``); every later run loads them. A wheel built by
``pip install`` already holds those of a default fit, its predictions and the svmlight parser (``setup.py``
runs ``warm_up(every_learner=False)`` on the built package), so this is for the other learners, and for an
install whose cache numba cannot use (another CPU, another numba, ``NUMBA_CACHE_DIR``, a read-only
``site-packages``). ``svmmap warm-up`` runs tiny fits of every loss and feature block, their predictions,
every loss's single-query argmax, the ApproxAP/ApproxNDCG learners and the svmlight parser, which compiles
(or, when already cached, just loads) every kernel they use; the dual QP, about a third of the compiling,
compiles meanwhile in a second process (:func:`pyterrier_svmmap.svm.qp.warm_up`), as numba compiles one kernel at a time.
"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

log = logging.getLogger(__name__)

#: (loss, its parameters) whose kernels the warm-up compiles
LOSSES = (("map", None), ("roc", None), ("ndcg", None), ("ndcg", {"k": 10}), ("mrr", {"k": 10}),
          ("dorm", {"k": 10, "window": 20}), ("acc", None), ("acc2", None),
          ("combo", {"losses": ["map", "ndcg@10"]}))


def feature_settings() -> list:
    """(features, binning) whose kernels the warm-up compiles: every block kind
    (:data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS`), and every binning of the kinds with thresholds."""
    from pyterrier_svmmap.features.blocks import BLOCK_KINDS
    from pyterrier_svmmap.features.transforms import BINNINGS
    return [(name, binning) for name, kind in BLOCK_KINDS.items()
            for binning in (BINNINGS if kind.thresholds else BINNINGS[:1])]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-j", "--jobs", dest="n_jobs", type=int, default=1, metavar="N",
                        help="threads of the tiny fits (default 1; the kernels are the same for any N)")


def tiny_data(seed: int = 0, n_queries: int = 6, per_query: int = 30, n_functions: int = 3):
    """(raw, labels, offsets, docnos) of a few random queries with missing scores and ties."""
    import numpy as np
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    labels = (rng.random(n) < 0.2).astype(float)
    labels[::per_query] = 1.0
    labels[1::per_query] = 0.0
    raw = np.round(rng.standard_normal((n, n_functions)) + labels[:, None], 1)
    raw[rng.random(raw.shape) < 0.1] = np.nan
    offsets = np.arange(n_queries + 1, dtype=np.int64) * per_query
    docnos = np.array([f"d{i}" for i in range(n)], dtype=object)
    return raw, labels, offsets, docnos


def warm_up(n_jobs: int = 1, qp_process: bool = True, every_learner: bool = True) -> float:
    """Run once every kernel the fits, predictions and argmaxes use (loaded from numba's cache, or compiled and
    cached); the seconds it took. ``qp_process``: a second process (:data:`SECOND_PROCESS`) compiles the dual QP,
    then runs :func:`_apart`, while this one compiles the kernels that need no QP. ``every_learner=False``: only
    the kernels of a default fit, its predictions and the svmlight parser (those ``setup.py`` compiles)."""
    t0 = time.perf_counter()
    side = None
    if qp_process:
        package_parent = str(Path(__file__).resolve().parents[2])    # the child imports this very package
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_parent,
                                                                        os.environ.get("PYTHONPATH")])))
        side = subprocess.Popen([sys.executable, "-c", SECOND_PROCESS] + (["apart"] if every_learner else []),
                                env=env, stdout=subprocess.PIPE, text=True)
    quiet = {q: q.level for q in (logging.getLogger(f"pyterrier_svmmap.{room}")
                                  for room in ("svm", "approx", "selection", "features"))}
    for q in quiet:                                         # the tiny fits' INFO lines are noise here
        q.setLevel(logging.WARNING)
    try:
        _fits(n_jobs, side, every_learner)
        if side is not None and side.wait() and every_learner:     # the second process failed: its fits here
            _apart(*tiny_data()[:3])
    finally:
        for q, level in quiet.items():
            q.setLevel(level)
        if side is not None:
            side.communicate()
    return time.perf_counter() - t0


def _apart(raw, labels, offsets) -> None:
    """The fits :data:`SECOND_PROCESS` runs after the QP: ApproxAP's and ApproxNDCG's (Qin et al.) on their
    feature blocks, and an SVM fit of every loss."""
    from pyterrier_svmmap.approx.ranker import ApproxRanker
    from pyterrier_svmmap.features.layout import FeatureLayout
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for features in ("minmax", "bins"):
            X = FeatureLayout.fit(raw, offsets, features, 5).transform(raw, offsets)
            for measure in ("ap", "ndcg"):
                ApproxRanker(measure=measure, alphas=[10.0], betas=[10.0], n_iter=2).fit(X, labels, offsets)
        for loss, params in LOSSES:
            StructSVMRanker(C=1.0, loss=loss, loss_params=params, n_bins=5, n_jobs=1).fit(raw, labels, offsets)


#: :func:`warm_up`'s second process: the QP, a line on stdout once it is cached, then (argument ``apart``)
#: :func:`_apart`; its compile notice silenced (the first process says it)
SECOND_PROCESS = ("import logging, sys; logging.getLogger('pyterrier_svmmap').setLevel(logging.ERROR); "
                  "import pyterrier_svmmap.svm.qp as q, pyterrier_svmmap.cli.warm_up as w; q.warm_up(); "
                  "print('qp', flush=True); sys.argv[1:] == ['apart'] and w._apart(*w.tiny_data()[:3])")


def _fits(n_jobs: int, side=None, every_learner: bool = True) -> None:
    """The tiny fits, predictions and argmaxes of :func:`warm_up`: those that solve no QP first, then (once
    ``side``, the second process, has its QP cached) the SVM fits."""
    import numpy as np
    from pyterrier_svmmap.features.layout import FeatureLayout
    from pyterrier_svmmap.io.svmlight import parse_chunk
    from pyterrier_svmmap.svm.losses import get_loss, most_violated
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    raw, labels, offsets, _ = tiny_data()
    v_raw, v_labels, v_offsets, v_docnos = tiny_data(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for loss, params in LOSSES if every_learner else ():
            most_violated(np.nan_to_num(raw[:30, 0]), labels[:30], loss=get_loss(loss, **(params or {})))
        for features, binning in feature_settings():                  # φ and its R² (C="auto")
            FeatureLayout.fit(raw, offsets, features, 5, binning).transform(raw, offsets).spread(offsets)
        parse_chunk(b"1 qid:1 1:0.5 2:-1e-3 # docid = d1\n0 qid:1 1:0.25\n", 10)   # svmmap learn's svmlight parser
        if side is not None:
            side.stdout.readline()                          # its QP cached (or its end: then compiled here)
        elif every_learner:
            _apart(raw, labels, offsets)
        for features, binning in feature_settings():
            r = StructSVMRanker(C=[0.1, 1.0], features=features, binning=binning, n_bins=5, n_jobs=n_jobs)
            r.fit(raw, labels, offsets, valid=(v_raw, v_labels, v_offsets, None, v_docnos))
            r.ranking_scores(v_raw, v_offsets, v_docnos)
        StructSVMRanker(C=[0.1, 1.0], n_bins=5, cv=2, prior="best", n_jobs=n_jobs).fit(raw, labels, offsets)


def run(args: argparse.Namespace) -> int:
    seconds = warm_up(args.n_jobs)
    log.info("kernels ready in %.1f s (compiled now, or loaded from numba's cache)", seconds)
    return 0
