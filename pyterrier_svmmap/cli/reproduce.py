"""Reproduce the base-function comparison of Yue et al. (SIGIR 2007) on a test collection.

Builds PISA indices (no stemming, porter2), runs 16 base functions (bm25, qld, dph, pl2 × stemming
× stopwords), takes the union of their top 1000 as candidates, then over ``--trials`` random splits
(``--train`` training, ``--valid`` validation, the rest test queries) fits each learned system and
reports MAP, nDCG@10, RR@10 and W/L with Wilcoxon tests against svm-map: the learners against
svm-map (the paper's Table 9 form), test measures per training loss (Chakrabarti et al. 2008,
Figure 9 form) and all systems with the base functions (Table 6 form), printed and in OUT/tables.md.

``--folds K [--repeats R]`` replaces the random splits by R repeats of K-fold cross-validation over
all judged queries (``experiment.make_folds``: fold k tests, the next fold validates, the rest trains),
so that every query is tested exactly R times. With either protocol, the base function with the best
MAP on each split's training and validation queries is one more row, ``base-chosen-on-training``:
the comparison a user without a learner can make, beside the best base function in hindsight.

``--workers N`` (a local Dask cluster of N single-threaded processes) or ``--scheduler ADDRESS`` (a
running cluster) run every trial as one Dask task (``pip install 'pyterrier-svmmap[dask]'``);
without them, ``--jobs`` trials run at once in forked processes (no Dask needed). Results and
checkpoints do not depend on how the trials were run.

Everything is cached under OUT and keyed on content (see ``base_runs`` and ``checkpoints``): indices,
base runs and every finished (trial, system) result. Ctrl-C ends with one line and exit status 130;
the same command then resumes from the finished trials, with the results of an uninterrupted run.
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

#: the default run fits every learner of the papers (systems.PAPER_SYSTEMS; about 40 minutes on 2 cores with
#: --jobs 2, estimated, see the README); ``--systems svm-map`` is the paper's Table 6 alone, in a few minutes
DEFAULT_SYSTEMS = "default"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--collection", metavar="DIR",
                     help="folder with docs.trec, topics.trec and qrels (TREC format)")
    src.add_argument("--dataset", metavar="ID",
                     help="an ir_datasets id, e.g. irds:vaswani (needs ir_datasets and internet)")
    parser.add_argument("--trials", type=int, default=None, help="random splits (default 50)")
    parser.add_argument("--train", type=int, default=None, help="training queries per trial (default 10)")
    parser.add_argument("--valid", type=int, default=None, help="validation queries per trial (default 5)")
    parser.add_argument("--folds", type=int, default=None, metavar="K",
                        help="instead of random splits, K-fold cross-validation over all judged queries: "
                             "each fold is tested once, the next fold validates, the K-2 others train "
                             "(K >= 3)")
    parser.add_argument("--repeats", type=int, default=None, metavar="R",
                        help="with --folds: R differently shuffled K-fold partitions, so every query is "
                             "tested R times (default 1)")
    parser.add_argument("--first-stage", default=DEFAULT_FIRST_STAGE, metavar="NAME",
                        help="the base function that is the first stage, the ranking a user would have without "
                             "learning: SVMMap() starts from it and keeps it unless learning shows evidence "
                             f"against it, and every system is compared with it (default {DEFAULT_FIRST_STAGE}, "
                             "BM25 with porter2 stemming and Terrier's stopwords; 'none': no first stage, "
                             "SVMMap() starts from the best base function on each split's training queries)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the splits (default 0)")
    parser.add_argument("--out", metavar="DIR", default="svmmap-reproduce",
                        help="output and cache folder: indices/, runs/, results.json, tables.md "
                             "(default ./svmmap-reproduce)")
    parser.add_argument("--systems", default=DEFAULT_SYSTEMS,
                        help="comma-separated learned systems; 'default' (the default): the papers' learners "
                             "and the boosted peers whose dependencies are installed; 'all': these and "
                             "SVM-map's feature options (svm-map-raw, svm-map-allbins, svm-map-prior)")
    parser.add_argument("--depth", type=int, default=1000,
                        help="rank cutoff of the evaluated rankings (default 1000, the base runs' depth)")
    parser.add_argument("--threads", type=int, default=2, help="PISA threads (default 2)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="trials run at once, in forked worker processes, without Dask (default: 2, "
                             "or 1 on a one-core machine); the results do not depend on it")
    dask = parser.add_mutually_exclusive_group()
    dask.add_argument("--workers", type=int, default=None, metavar="N",
                      help="run the trials as Dask tasks on a local cluster of N single-threaded worker "
                           "processes (needs pip install 'pyterrier-svmmap[dask]')")
    dask.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help="run the trials as Dask tasks on the running cluster at ADDRESS, e.g. "
                           "tcp://host:8786 (needs pip install 'pyterrier-svmmap[dask]')")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


#: ``--first-stage``'s default: BM25 with stemming and stopwords, PyTerrier's conventional first stage
DEFAULT_FIRST_STAGE = "bm25.porter2.terrier"

#: option → smallest allowed value, checked before any work (:func:`check_arguments`)
MINIMUM = {"trials": 1, "train": 1, "valid": 0, "depth": 1, "threads": 1, "jobs": 1, "seed": 0,
           "folds": 3, "repeats": 1, "workers": 1}

#: the random-split protocol's defaults (Yue et al. 2007 §5: 50 trials, 10 training, 5 validation)
RANDOM_DEFAULTS = {"trials": 50, "train": 10, "valid": 5}


def check_arguments(args: argparse.Namespace) -> None:
    """Raise ValueError (one line) for an impossible option value (e.g. ``--threads 0``: PISA would retrieve
    nothing) or for an option of the other protocol or executor; then fill in the defaults. A collection folder
    with ``split.train`` and ``split.test`` is evaluated on that split (``args.split``) unless an option of the
    other protocols is given."""
    for option, minimum in MINIMUM.items():
        value = getattr(args, option)
        if value is not None and value < minimum:
            raise ValueError(f"--{option} must be at least {minimum}, got {value}")
    from pyterrier_svmmap.experiments.reproduce.base_runs import base_names
    if args.first_stage.strip().lower() == "none":
        args.first_stage = None
    elif args.first_stage not in base_names():
        raise ValueError(f"--first-stage {args.first_stage} is not a base function; give one of "
                         f"{', '.join(base_names())} or none")
    random = [f"--{o}" for o in RANDOM_DEFAULTS if getattr(args, o) is not None]
    args.split = bool(args.collection) and args.folds is None and args.repeats is None and not random \
        and all((Path(args.collection) / f"split.{role}").exists() for role in ("train", "test"))
    if args.folds is not None:
        if random:
            raise ValueError(f"{', '.join(random)} belong{'s' if len(random) == 1 else ''} to random splits; "
                             "with --folds every split tests one fold, validates on the next and trains on "
                             "the others")
        args.repeats = args.repeats or 1
    elif not args.split:
        if args.repeats is not None:
            raise ValueError("--repeats needs --folds (it repeats the K-fold partition)")
        vars(args).update({o: default for o, default in RANDOM_DEFAULTS.items() if getattr(args, o) is None})
    dask = args.workers is not None or args.scheduler
    if dask and args.jobs is not None:
        raise ValueError("--jobs runs the trials in forked processes; with --workers or --scheduler the "
                         "Dask cluster runs them: give one of them")
    if dask:
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            from pyterrier_svmmap.scale.client import DASK_HINT
            raise ValueError(DASK_HINT) from None
    if args.jobs is None:
        args.jobs = min(2, os.cpu_count() or 1)


def interrupted(args: argparse.Namespace) -> str:
    """What ``svmmap reproduce`` says after Ctrl-C: the finished trials kept for the same command to resume."""
    try:
        finished = args.progress.finished()
    except Exception:                   # noqa: BLE001 - before the run started, or only the count failed
        finished = 0
    return f"{finished} finished trials are kept in {args.out}, re-run the same command to resume"


def run(args: argparse.Namespace) -> int:
    """The options checked, the reproduction run (``args.progress`` learns its checkpoint store, for
    :func:`interrupted`), its tables printed."""
    from pyterrier_svmmap.experiments.reproduce.experiment import ExperimentOptions, ExperimentProgress, run_experiment
    from pyterrier_svmmap.experiments.reproduce.evaluation import format_learner_table, format_loss_table, format_table
    args.progress = ExperimentProgress()
    check_arguments(args)
    options = ExperimentOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ExperimentOptions)
                                   if f.name not in ("out", "progress_bars")},
                                out=Path(args.out), progress_bars=not args.no_progress and sys.stderr.isatty())
    report = run_experiment(options, args.progress)
    summary, reference, title = report.summary, report.reference, report.title
    if (summary["kind"] == "learned").any():
        print(format_learner_table(summary, reference, title), format_loss_table(summary), sep="\n\n", end="\n\n")
    print(format_table(summary, reference, title))
    logger.info("wrote %s (index %.1fs, runs %.1fs, trials %.1fs)", report.out / "results.json",
                report.timings["index_seconds"], report.timings["runs_seconds"], report.timings["trials_seconds"])
    return 0
