"""Train a ranking model on an svmlight/LETOR file (like svm_map_learn / svm_rank_learn).

TRAIN holds lines "label qid:Q idx:val ... # comment" (label >= --rel, default 1, is relevant; a feature
absent from a line is 0, as in svmlight), or is an index file listing such files. MODEL is a directory that svmmap classify,
SVMMap.load and pt.Artifact.load read.

The objective is OP 1 of Yue et al. (2007), the 1-slack structural SVM over the n training queries:

    min_w  1/2 |w|^2 + (C/n) sum_i xi_i
    s.t.   for all i and rankings y != y_i:  w.Psi(x_i, y_i) - w.Psi(x_i, y) >= Delta(y_i, y) - xi_i

with Delta in [0, 1] (1 - AP for --loss map). This is SVMstruct's normalisation, the framework svm_map and
svm_rank are built on, so -c means the same thing: C is divided by the number of queries n. It is not
SVMlight's C (unnormalised): C_light = C/n.

Several TRAIN files (or index files, or quoted globs such as "shards/*.txt") are one training set. With
--workers N (a local Dask cluster) or --scheduler ADDRESS (an existing one) every file is a shard that a worker
reads and keeps: the driver never holds the training set, and the model is the one a single process trains (a
query's lines must all be in one file). With --selection auto the files are read into the driver and the
rule's cross-validation fits run on the workers; otherwise a grid of C on a cluster needs --valid.

-c takes one value or a comma-separated grid (e.g. -c 0.01,0.1,1,10,100,1000): every C is trained, and the
one with the best MAP on --valid FILE is kept, or, without --valid, the best mean held-out MAP of --cv-fold
cross-validation over the training queries. The model file keeps every C's weights and score.

Features: the svmlight features are the base scores. --raw (default) uses them as they are, the linear
model svm_map_learn trains (LETOR features are already normalised per query). --bins N learns the paper's
step functions: N thresholds per feature at quantiles of the training values (section 4.2; N*F weights).
--features auto trains bins, raw and bins+raw and keeps the best with C.

Queries without a relevant (or without a non-relevant) document cannot form constraints: they are skipped
with a warning.

svm_struct options accepted for compatibility: -# N (= --max-iter), -v N and -y N (verbosity); -w, -m, -k, -f
and -l are accepted and ignored (one warning names them: training is always the 1-slack dual cutting-plane
algorithm, svm_struct's -w 3, with margin rescaling, -o 2, and L1 slacks, -p 1; the loss is --loss); -o 1
(slack rescaling) and -p 2 (squared slacks) are not implemented and are refused.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import tempfile
import time
import warnings
from typing import List, Optional, Union

from pyterrier_svmmap.cli import UsageError, integer, jobs

log = logging.getLogger(__name__)

#: svm_struct options that are accepted and ignored (option → what we do instead)
IGNORED = {"w": "training is always the 1-slack dual cutting-plane algorithm",
           "m": "no kernel cache is needed (linear model)",
           "k": "all queries' most violated constraints are added at once",
           "f": "no constraint cache beyond the working set",
           "l": "the loss is given by --loss"}


def _grid(text: str) -> Union[List[float], str]:
    if text.strip() == "auto":
        return "auto"
    try:
        grid = [float(c) for c in text.split(",") if c.strip()]
    except ValueError:
        grid = []
    if not grid:
        raise argparse.ArgumentTypeError(f"expected a number, comma-separated numbers or auto (e.g. -c 1, -c 0.1,1,10 "
                                         f"or -c auto), got {text!r}")
    return grid


#: the default of --max-features (io.svmlight.MAX_FEATURES, not imported: `svmmap learn --help` loads no numpy)
MAX_FEATURES = 100_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", dest="C", type=_grid, default=[1.0], metavar="C[,C...]",
                        help="C of 1/2|w|^2 + C/n sum xi_i, n = number of training queries (svm_struct's convention); "
                             "a comma-separated grid is chosen on --valid or by --cv; auto: the grid 1e-4 ... 1000 "
                             "divided by the features' mean squared within-query spread. Default 1.0")
    parser.add_argument("-e", dest="epsilon", type=float, default=1e-3, metavar="EPSILON",
                        help="cutting-plane tolerance: stop when no constraint is violated by more (default 0.001)")
    parser.add_argument("--loss", default="map",
                        help="structural loss: map (SVM-map, default), roc, ndcg@10, ndcg, mrr@10, acc, acc2 (with @k "
                             "for a cut-off)")
    grp = parser.add_mutually_exclusive_group()
    grp.add_argument("--bins", type=int, metavar="N", help="N quantile thresholds per feature (the paper's phi)")
    grp.add_argument("--raw", action="store_true", help="a weight per feature (default), on the scale --normalise sets")
    grp.add_argument("--features", metavar="SPEC",
                     help="feature blocks: bins, raw, minmax, combinations like bins+raw, or auto (chosen with C)")
    parser.add_argument("--normalise", choices=("query", "none"), default="query",
                        help="query (default): each feature standardised within queries, so that its units change "
                             "nothing; none: the values as they are (svm_map_learn's model)")
    parser.add_argument("--rel", type=float, default=None, metavar="R",
                        help="relevance threshold: label >= R is relevant (default 1, as ir_measures' AP(rel=1))")
    parser.add_argument("--n-bins", type=int, default=50, metavar="N",
                        help="thresholds per feature for bins (default 50)")
    parser.add_argument("--valid", metavar="FILE",
                        help="svmlight/LETOR validation file that chooses C (and --features auto)")
    parser.add_argument("--cv", type=int, default=5, metavar="K",
                        help="without --valid, folds of the cross-validation that chooses a grid's C (default 5)")
    parser.add_argument("--prior", choices=("none", "best", "auto"), default="none",
                        help="regularise towards 0 (none, svm_map_learn's), towards the base feature with the best "
                             "training MAP (best: 1/2|w - w0|^2), or choose (auto; needs --selection auto)")
    parser.add_argument("--selection", choices=("validation", "auto"), default="validation",
                        help="validation (default, svm_map_learn's protocol): the best validation MAP, or K-fold "
                             "CV over TRAIN without --valid; auto: the package's rule (pyterrier_svmmap.selection: "
                             "held-out per-query AP of --cv-fold CV over train+valid, unless --valid has at least "
                             "--min-valid-queries queries, and the best base feature kept unless learning beats it)")
    parser.add_argument("--fallback-alpha", type=float, default=None, metavar="ALPHA",
                        help="with --selection auto: the level of the sign-flip max-gain test that the learned "
                             "model's gain over the best base feature must pass (default 0.5)")
    parser.add_argument("--min-valid-queries", type=int, default=None, metavar="N",
                        help="with --selection auto: validation queries from which --valid alone is the evidence")
    parser.add_argument("--max-iter", "-#", dest="max_iter", type=int, default=1000, metavar="N",
                        help="cutting-plane iterations per C (default 1000)")
    parser.add_argument("-v", "-y", dest="verbosity", type=int, default=None, metavar="N",
                        help="verbosity: 0 warnings only, 1 progress (default), 2+ debug")
    for opt in IGNORED:
        parser.add_argument(f"-{opt}", dest=f"ignored_{opt}", metavar="X", default=None, help=argparse.SUPPRESS)
    parser.add_argument("-o", dest="rescaling", type=int, default=2, choices=(1, 2), help=argparse.SUPPRESS)
    parser.add_argument("-p", dest="slack_norm", type=int, default=1, choices=(1, 2), help=argparse.SUPPRESS)
    parser.add_argument("-j", "--jobs", dest="n_jobs", type=jobs, default=None, metavar="N",
                        help="threads of this process (default: every core; -1 all, -2 all but one); the model is "
                             "the same for every N")
    dist = parser.add_mutually_exclusive_group()
    dist.add_argument("--workers", type=int, metavar="N",
                      help="train on a local Dask cluster of N worker processes (pip install 'pyterrier-svmmap[dask]')")
    dist.add_argument("--scheduler", metavar="ADDRESS",
                      help="train on the Dask cluster at ADDRESS (e.g. tcp://head:8786; with dask-jobqueue on SLURM)")
    parser.add_argument("train", metavar="TRAIN", nargs="+",
                        help="svmlight/LETOR training file(s), index files listing files, or quoted glob patterns; "
                             "with --workers/--scheduler each file is one shard, read by a worker")
    parser.add_argument("--max-features", type=lambda text: integer(text, lambda n: n >= 1, "a positive integer"),
                        default=MAX_FEATURES, metavar="N",
                        help=f"the largest feature index read (default {MAX_FEATURES:,}): every index up to the "
                             "largest is a column of a dense matrix")
    parser.add_argument("--scratch", metavar="DIR",
                        help="read TRAIN into memory-mapped files in a temporary folder in DIR, removed "
                             "after training: for data larger than memory (done in the system's temporary folder "
                             "without this option when the data would take more than half the available memory)")
    parser.add_argument("--force", action="store_true",
                        help="write MODEL into an existing directory that holds other files (refused otherwise)")
    parser.add_argument("model", metavar="MODEL", help="model directory to write (new, empty, or a model to replace)")


def ranker_params(args: argparse.Namespace) -> dict:
    """The :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker` parameters ``args`` ask for (unchecked); what an
    option leaves unset keeps svm_map's default or the ranker's."""
    features, n_bins = ("bins", args.bins) if args.bins is not None else (args.features or "raw", args.n_bins)
    params = dict(C=args.C if isinstance(args.C, str) or len(args.C) > 1 else args.C[0], loss=args.loss,
                  features=features, normalise=None if args.normalise == "none" else args.normalise,
                  n_bins=n_bins, epsilon=args.epsilon, max_iter=args.max_iter, cv=args.cv,
                  rel=1.0 if args.rel is None else args.rel, n_jobs=args.n_jobs,
                  prior=None if args.prior == "none" else args.prior, selection=args.selection)
    return dict(params, **{k: getattr(args, k) for k in ("fallback_alpha", "min_valid_queries")
                           if getattr(args, k) is not None})


def interrupted(args: argparse.Namespace) -> str:
    """What ``svmmap learn`` says after Ctrl-C."""
    return f"no model written; {args.model} is as it was"


def run(args: argparse.Namespace) -> int:
    from pyterrier_svmmap.io.atomic import check_creatable
    from pyterrier_svmmap.io.model_files import FILE_NAME_OF, check_writable
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    from pyterrier_svmmap.io.svmlight import FeatureIndexTooLarge

    if args.verbosity is not None:
        logging.getLogger("pyterrier_svmmap").setLevel(
            logging.WARNING if args.verbosity <= 0 else logging.INFO if args.verbosity == 1 else logging.DEBUG)
    if args.rescaling == 1:
        raise UsageError("-o 1 (slack rescaling) is not implemented: svmmap learn uses margin rescaling (-o 2)")
    if args.slack_norm == 2:
        raise UsageError("-p 2 (squared slacks) is not implemented: svmmap learn uses L1 slacks (-p 1)")
    ignored = [f"-{o} {getattr(args, f'ignored_{o}')} ({why})" for o, why in IGNORED.items()
               if getattr(args, f"ignored_{o}") is not None]
    if ignored:
        log.warning("ignored svm_struct options: %s", "; ".join(ignored))
    ranker = StructSVMRanker(**ranker_params(args))      # every parameter checked before any data is read
    ranker.check_params()
    check_writable(args.model, force=args.force, remedy="--force")
    check_creatable(args.model, "MODEL")       # a path that cannot be written fails now, not after training
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    if args.scratch is not None:
        if args.workers is not None or args.scheduler:
            raise UsageError("--scratch reads TRAIN in this process; with --workers/--scheduler each file is a shard "
                             "that a worker reads: leave out --scratch, or split TRAIN into more files")
        if not os.path.isdir(args.scratch):
            raise UsageError(f"--scratch {args.scratch}: not a directory; give an existing folder with room for the "
                             "data (8 bytes a line and feature)")
    files = training_files(args.train)
    executor = None
    if args.workers is not None or args.scheduler:
        from pyterrier_svmmap.scale.client import dask_client
        executor, _ = dask_client(args.scheduler or "local", workers=args.workers)
        if not ranker.selects_auto() and args.valid is None and \
                (isinstance(args.C, str) or len(args.C) > 1 or ranker.features == "auto"):
            raise UsageError("on a cluster C (and --features auto) is chosen on --valid FILE: give it, or a single -c")
    with contextlib.ExitStack() as scratch:
        t = time.perf_counter()
        data = valid = None
        if executor is None:                    # bad files raise SvmlightError (file:line) before any training
            try:
                data, valid = read_training_data(files, args, scratch)
            except FeatureIndexTooLarge as e:
                raise UsageError(e.message("give --max-features N with N at least the largest index")) from None
            log.info("read %d lines, %d queries, %d features from %s (%.1fs)", data.n_lines, len(data.query_ids),
                     data.n_features, ", ".join(data.sources), time.perf_counter() - t)
            for d in filter(None, (data, valid)):
                warn_unusual_labels(d, args.rel)
        caught = fit(ranker, data, valid, files, args, executor)
    for w in caught:
        log.warning("%s", w.message)
    save_ranker(ranker, args.model, FILE_NAME_OF["SVMMap" if args.loss == "map" else "StructSVM"], overwrite=args.force)
    chosen = {"validation": "chosen on --valid", "cv": f"chosen by {args.cv}-fold cross-validation"}
    log.info("C=%g%s%s; %d iterations (%s); model written to %s", ranker.C_,
             f", features={ranker.features_}" if ranker.features == "auto" else "",
             f" {chosen[ranker.selection_]}" if ranker.selection_ in chosen else "", ranker.n_iter_,
             "converged" if ranker.converged_ else "NOT converged: raise --max-iter or -e", args.model)
    return 0


def read_training_data(files: List[str], args: argparse.Namespace, scratch: contextlib.ExitStack) -> tuple:
    """(training data, validation data or None) as :class:`~pyterrier_svmmap.io.svmlight.RankingData`: the
    training data into memory maps in a temporary folder (removed when ``scratch`` closes) with ``--scratch``
    or when they would take more than half the available memory, else into memory."""
    from pyterrier_svmmap.io.svmlight import available_memory, estimated_read_bytes, read_svmlight
    needed, available = (None, None) if args.scratch is not None else (estimated_read_bytes(files), available_memory())
    if args.scratch is None and (needed is None or available is None or needed <= available / 2):
        data = read_svmlight(files, max_features=args.max_features, parser="compiled")     # the fit loads numba
    else:
        from pyterrier_svmmap.io.svmlight_mapped import read_svmlight_mapped
        folder = scratch.enter_context(tempfile.TemporaryDirectory(prefix="svmmap-learn-", dir=args.scratch))
        if args.scratch is None:
            log.info("TRAIN would take about %.1f GB of the %.1f GB of memory available: reading it into memory maps "
                     "in %s (--scratch DIR to choose the folder)", needed / 1e9, available / 1e9, folder)
        try:
            data = read_svmlight_mapped(files, folder, max_features=args.max_features)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            raise UsageError(f"no space left in {os.path.dirname(folder)} for the memory maps of TRAIN (8 bytes a "
                             "line and feature): give --scratch DIR on a disk with room") from None
    # in memory with its docids, which break ties in the validation MAP
    return data, read_svmlight(args.valid, n_features=data.n_features, parser="compiled") if args.valid else None


def fit(ranker, data, valid, files: List[str], args: argparse.Namespace, executor) -> list:
    """Fit ``ranker`` on the data read or, with an ``executor``, on the files as shards of its cluster; the
    warnings the fit raised. A ValueError becomes a UsageError naming the training files."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if executor is None:
                fit_ranking_data(ranker, data, valid)
            else:
                fit_on_cluster(ranker, files, args.valid, executor)
        except ValueError as e:
            where = "" if str(e).startswith(str(files[0])) else f"{', '.join(files)}: "
            raise UsageError(f"{where}{e}") from None
        finally:
            if executor is not None:
                from pyterrier_svmmap.scale.client import close_client
                close_client(executor)
    return caught


def training_files(specs: List[str]) -> List[str]:
    """TRAIN arguments as data files: index files expanded to their members, quoted globs to their sorted matches."""
    import glob
    from pyterrier_svmmap.io.svmlight import data_files
    files: List[str] = []
    for spec in specs:
        matches = sorted(glob.glob(spec)) if glob.has_magic(spec) else [spec]
        if not matches:
            raise FileNotFoundError(f"no file matches {spec!r}")
        files.extend(map(str, data_files(matches)))
    return files


def fit_on_cluster(ranker, files: List[str], valid_file, client):
    """Fit with every training file a shard on the cluster's workers; the validation file is read here."""
    from pyterrier_svmmap.features.layout import default_base_names
    from pyterrier_svmmap.scale.dask import executor_for
    ranker.executor = executor_for(client)
    ranker.fit_shards(files, valid=valid_file)
    ranker.executor = None                                 # the model does not keep the client
    names = dict(zip(ranker.base_names_, default_base_names(ranker.n_functions_, start=1)))
    if getattr(ranker, "prior_function_", None) is not None:
        ranker.prior_function_ = names[ranker.prior_function_]
    ranker.base_names_ = list(names.values())
    ranker.layout_.base_names = list(ranker.base_names_)
    ranker.feature_names_ = ranker.layout_.names()
    ranker.training_summary_["source"] = ", ".join(files)
    return ranker


def fit_ranking_data(ranker, data, valid=None):
    """Fit an array-level ranker on a RankingData (features named ``f1, f2, ...``); ``valid``: another or None."""
    from pyterrier_svmmap.features.layout import default_base_names
    train = data.queries()
    ranker.fit(train.raw, train.labels, train.offsets, valid=None if valid is None else valid.queries(),
               base_names=default_base_names(data.n_features, start=1),
               shard_queries=data.queries_per_source())        # one shard a file, as on a cluster
    ranker.training_summary_["source"] = ", ".join(data.sources)
    return ranker


def save_ranker(ranker, path, estimator: str, overwrite: bool = False):
    """Write a fitted StructSVMRanker as the model of PyTerrier estimator ``estimator`` (``module:class``), so that
    ``SVMMap.load`` reads it too, without importing PyTerrier; ``overwrite``: into a folder of other files."""
    from pyterrier_svmmap.io.model_files import class_path, save_model
    params = dict({k: getattr(ranker, k) for k in ranker.MODEL_PARAMS}, verbose=False)
    return save_model(path, estimator, params, ranker.get_state(), ranker=class_path(type(ranker)),
                      overwrite=overwrite, implied=ranker.PARAMS.implied)


def warn_unusual_labels(data, rel: Optional[float]) -> None:
    """Log a warning for negative labels of ``data`` (a RankingData), and one for fractional labels unless ``--rel``
    was given, each naming the first such line."""
    labels = data.labels
    negative = (labels < 0).nonzero()[0]
    if len(negative):
        log.warning("%d lines have negative labels (e.g. %g at %s); they count as 0: non-relevant, as trec_eval "
                    "counts them", len(negative), labels[negative[0]], data.where(int(negative[0])))
    fractional = (labels != labels.round()).nonzero()[0]
    if len(fractional) and rel is None:
        x = float(labels[fractional[0]])
        log.warning("%d lines have fractional labels (e.g. %g at %s); labels are relevance grades 0, 1, 2, ...: a "
                    "label >= --rel (default 1) counts as relevant, so %g counts as %s; give --rel to set the "
                    "threshold", len(fractional), x, data.where(int(fractional[0])), x,
                    "relevant" if x >= 1 else "non-relevant")
