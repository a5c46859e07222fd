"""Score an svmlight/LETOR file with a trained model (like svm_map_classify).

``svmmap classify TEST MODEL PREDICTIONS`` writes one score per line of TEST, in TEST's order, to
PREDICTIONS (as svm_map_classify does); higher is better. Labels in TEST are not used. TEST may use
fewer feature indices than the model (absent features are 0, as in svmlight) but not more.

With --trec, PREDICTIONS is a TREC run instead ("qid Q0 docno rank score name" per line, docno from the
line's "#docid = X" comment); --qrels FILE writes TEST's labels as TREC qrels, so that
"ir_measures FILE PREDICTIONS 'AP nDCG@10'" evaluates the ranking.
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
    parser.add_argument("--trec", action="store_true",
                        help="write PREDICTIONS as a TREC run (qid Q0 docno rank score name), docnos from the "
                             "'#docid = X' comments, for trec_eval or ir_measures")
    parser.add_argument("--run-name", default="svmmap", metavar="NAME", help="with --trec, the run's name "
                        "(its last column; default svmmap)")
    parser.add_argument("--qrels", metavar="FILE", help="also write TEST's labels as TREC qrels (qid 0 docno label) "
                        "to FILE")


def interrupted(args: argparse.Namespace) -> str:
    """What ``svmmap classify`` says after Ctrl-C."""
    return f"{args.predictions} was not written"


def run(args: argparse.Namespace) -> int:
    from pyterrier_svmmap.io.atomic import check_creatable, write_atomic
    from pyterrier_svmmap.io.model_files import load_ranker
    from pyterrier_svmmap.io.svmlight import read_svmlight
    from pyterrier_svmmap.io.trec import check_docids, qrels_text, run_text
    outputs = {"PREDICTIONS": args.predictions, **({"--qrels": args.qrels} if args.qrels else {})}
    for what, path in outputs.items():                # a path that cannot be written fails before any work
        check_creatable(path, what)
    model = load_ranker(args.model)          # the array-level ranker: PyTerrier is not imported
    if args.n_jobs is not None:
        model.n_jobs = args.n_jobs
    data = read_svmlight(args.test, n_features=model.n_functions_)
    if args.trec or args.qrels:
        check_docids(data, "--trec" if args.trec else "--qrels")
    # ties broken as transform breaks them (pyterrier_svmmap.ties), docnos from the '#docid =' comments
    test = data.queries()
    scores = ranking_scores(model, test.raw, test.offsets, test.docnos)
    ungrouped = data.ungroup(scores)   # without --trec full precision (the shortest repr): 10 digits would create ties
    text = run_text(data, ungrouped, args.run_name) if args.trec else "".join(f"{float(x)!r}\n" for x in ungrouped)
    files = {args.predictions: text, **({args.qrels: qrels_text(data)} if args.qrels else {})}
    for path, content in files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content.encode())
    log.info("wrote %d scores to %s%s", len(scores), args.predictions, " (a TREC run)" if args.trec else "")
    return 0


def ranking_scores(model, raw, offsets, docnos):
    """The model's scores with ties broken by the package's policy (an estimator's, loaded when the model has no
    array-level ranker, with its tie-break function)."""
    if hasattr(model, "ranking_scores"):
        return model.ranking_scores(raw, offsets, docnos)
    from pyterrier_svmmap.ties import break_ties
    return break_ties(model.decision_function(raw, offsets), offsets, raw[:, model.tie_function_], docnos)[0]
