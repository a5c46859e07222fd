"""Run the LETOR 5-fold protocol on a LETOR directory (Fold1..FoldK with train/vali/test.txt) and print the table.

For each fold every learner trains on train.txt, chooses its hyper-parameters by validation MAP on vali.txt
(svm-map, the package's default, by cross-validation over train.txt and vali.txt together) and is scored on
test.txt with LETOR 4.0's official evaluation (Eval-Score-4.0.pl): MAP and P@k with
label >= REL relevant (--rel, default 1: ir_measures' AP(rel=1)), NDCG@k with gain 2^label - 1 (ranks 1-2
undiscounted, NDCG@k = 0 for a query of fewer than k documents). Queries without a relevant document count 0
in every mean. The table shows the fold averages and the training seconds, wall clock and CPU time of the
process (model selection included, reading the files excluded), of every learner, then each learner's MAP
per fold.

Learners: svm-map (the package's default SVMMap()), svm-map-raw (raw features as they are, svm_map_learn's
model), svm-map-paper (50 bins, the paper's), svm-map-auto, svm-roc-std, svm-ndcg@10-std, svm-acc2-std (C in
0.01 ... 1000), approx-ap-t100, approx-ndcg-t100, adarank-grid, lambdamart-grid, mcrank-grid (LightGBM; skipped
with a warning without it). The SVMs, ApproxAP and AdaRank train on label >= REL; LambdaMART, McRank and ApproxNDCG on the
grades. The grids (every setting is trained; the best validation MAP is kept) are listed below.
"""
from __future__ import annotations

import argparse
import logging
import warnings
from pathlib import Path
from typing import List

log = logging.getLogger(__name__)


def _folds(text: str) -> List[int]:
    try:
        folds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fold numbers, got {text!r}") from None
    if not folds or min(folds) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated fold numbers from 1, got {text!r}")
    return folds


def _grids() -> str:
    from pyterrier_svmmap.experiments.letor import LEARNERS

    def show(g: dict) -> str:
        return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in g.items())
    return "learners and their grids:\n" + "\n".join(
        f"  {name:<13} {learner.description}\n  {'':<13} grid: {' | '.join(show(g) for g in learner.grid)}"
        for name, learner in LEARNERS.items())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _grids()
    parser.add_argument("directory", metavar="DIR", help="LETOR folder holding Fold1..FoldK/{train,vali,test}.txt")
    parser.add_argument("--learners", default="all", metavar="A,B,...",
                        help="comma-separated learners (default: all of them)")
    parser.add_argument("--rel", default="1", metavar="REL",
                        help="labels >= REL are relevant for MAP, P@k and the binary learners (default 1)")
    parser.add_argument("--folds", type=_folds, default=None, metavar="K,K,...",
                        help="only these folds (default: all)")
    parser.add_argument("--out", metavar="FILE",
                        help="write every fold's results as JSON to FILE (rewritten after every fold, so an "
                             "interrupted run keeps its finished folds; \"complete\" says whether all ran)")
    parser.add_argument("--threads", type=int, default=1, metavar="N", help="LightGBM threads (default 1)")
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="do not fit each learner once on a few queries before timing it")


def interrupted(args: argparse.Namespace) -> str:
    """What ``svmmap letor`` says after Ctrl-C: what ``--out`` keeps."""
    return f"{args.out} holds the finished folds" if args.out else "no results kept (give --out FILE to keep folds)"


def run(args: argparse.Namespace) -> int:
    from pyterrier_svmmap.cli import UsageError
    import pyterrier_svmmap.experiments.letor as letor
    from pyterrier_svmmap.io.atomic import check_creatable
    from pyterrier_svmmap.io.svmlight import FeatureIndexTooLarge

    rel = letor.check_rel(args.rel)                 # every argument checked before any data is read
    names = letor.learner_names(args.learners)
    if args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    letor.discover_folds(args.directory, args.folds)
    if args.out:
        parent = Path(args.out).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"--out {args.out}: directory {parent} does not exist")
        if Path(args.out).is_dir():
            raise UsageError(f"--out {args.out} is a directory; give a file name")
        check_creatable(args.out, "--out")
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = letor.run_letor(args.directory, names, rel=rel, folds=args.folds, warm_up=args.warm_up,
                                      threads=args.threads, progress=None if not args.out else
                                      lambda _, so_far: letor.write_json(so_far, args.out))
    except FeatureIndexTooLarge as e:
        raise UsageError(e.message(None)) from None
    finally:                          # the warnings, logged once each (one line, no source line)
        for text in dict.fromkeys(str(w.message) for w in caught):
            log.warning("%s", text)
    print(results.table(), flush=True)
    if args.out:
        letor.write_json(results, args.out)
        log.info("results written to %s", args.out)
    return 0

