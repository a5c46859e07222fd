"""Score an svmlight/LETOR file with a trained model (like svm_map_classify).

``svmmap classify TEST MODEL PREDICTIONS`` writes one score per line of TEST, in TEST's order, to
PREDICTIONS (as svm_map_classify does); higher is better. Labels in TEST are not used. TEST may use
fewer feature indices than the model (absent features are 0, as in svmlight) but not more.
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from pyterrier_svmmap.cli import jobs

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("test", metavar="TEST", help="svmlight/LETOR file (or index file) to score")
    parser.add_argument("model", metavar="MODEL", help="model directory written by svmmap learn or .save()")
    parser.add_argument("predictions", metavar="PREDICTIONS", help="output: one score per line of TEST")
    parser.add_argument("-j", "--jobs", dest="n_jobs", type=jobs, default=None, metavar="N",
                        help="threads of this process (default: every core; -1 all, -2 all but one); the scores "
                             "are the same for every N")


def run(args: argparse.Namespace) -> int:
    from pyterrier_svmmap.io.model_files import load_ranker
    from pyterrier_svmmap.io.svmlight import read_svmlight
    model = load_ranker(args.model)          # the array-level ranker: PyTerrier is not imported
    if args.n_jobs is not None:
        model.n_jobs = args.n_jobs
    data = read_svmlight(args.test, n_features=model.n_functions_)
    # ties broken as transform breaks them (pyterrier_svmmap.ties), docnos from the '#docid =' comments
    test = data.queries()
    scores = ranking_scores(model, test.raw, test.offsets, test.docnos)
    # full precision (shortest repr that reads back to the same float): 10 digits would create ties
    Path(args.predictions).parent.mkdir(parents=True, exist_ok=True)
    with open(args.predictions, "w") as out:
        out.writelines(f"{float(x)!r}\n" for x in data.ungroup(scores))
    log.info("wrote %d scores to %s", len(scores), args.predictions)
    return 0


def ranking_scores(model, raw, offsets, docnos):
    """The model's scores with ties broken by the package's policy: the array-level ranker's own method,
    or, for an estimator loaded instead, the same policy with its tie-break function."""
    if hasattr(model, "ranking_scores"):
        return model.ranking_scores(raw, offsets, docnos)
    from pyterrier_svmmap.ties import break_ties
    return break_ties(model.decision_function(raw, offsets), offsets, raw[:, model.tie_function_], docnos)[0]
