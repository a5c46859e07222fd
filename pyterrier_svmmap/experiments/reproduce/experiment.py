"""One run of ``svmmap reproduce``: the collection's base runs, the candidates, every system fitted and evaluated
over the splits, the results and pictures written to the output folder (:func:`run_experiment`). The command
line (:mod:`pyterrier_svmmap.cli.reproduce`) checks the options and prints the tables."""
from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

logger = logging.getLogger(__name__)


@dataclass
class ExperimentOptions:
    """What a reproduction runs (``svmmap reproduce``'s options, checked and with their defaults filled in).

    Attributes
    ----------
    out : str or Path
        The output folder (caches, checkpoints, results).
    systems : str
        ``--systems``: names, ``default`` or ``all`` (:func:`~pyterrier_svmmap.experiments.systems.parse_names`).
    collection, dataset : str or None
        A TREC-format folder, or an ir_datasets id (one of them).
    trials, train, valid : int or None
        Random splits: their number and the training / validation queries per split (None with ``folds``).
    folds, repeats : int or None
        K-fold cross-validation over all judged queries, repeated ``repeats`` times, instead of random splits.
    seed, threads, depth, jobs : int
        The splits' seed, PISA's retrieval threads, the base runs' depth, the trials run at once.
    split : bool
        The collection's own split (``split.train`` / ``split.test``) instead of random splits or folds.
    first_stage : str or None
        The base function that is the first stage (``RunFeatures(runs, first=...)``): what ``SVMMap()`` starts
        from and falls back to, and the row every system is compared with (``vs_first``); None: none.
    workers, scheduler : int or str or None
        A Dask cluster that runs the trials instead of ``jobs``.
    progress_bars : bool
        Show the trials' progress bar.
    """
    out: Path
    systems: str = "default"
    collection: Optional[str] = None
    dataset: Optional[str] = None
    trials: Optional[int] = None
    train: Optional[int] = None
    valid: Optional[int] = None
    folds: Optional[int] = None
    repeats: Optional[int] = None
    split: bool = False
    first_stage: Optional[str] = None
    seed: int = 0
    threads: int = 1
    depth: int = 1000
    jobs: int = 1
    workers: Optional[int] = None
    scheduler: Optional[str] = None
    progress_bars: bool = False


@dataclass
class ExperimentReport:
    """What :func:`run_experiment` found: the summary table (one row per system), the reference system of the
    W/L and p-value columns, the experiment's title and its timings (seconds)."""
    summary: pd.DataFrame
    reference: Optional[str]
    title: str
    out: Path
    timings: dict = field(default_factory=dict)


class ExperimentProgress:
    """What an interrupted run needs to say how many finished trials it keeps: filled in by
    :func:`run_experiment` as soon as the checkpoint store, the splits and the systems are known."""

    def __init__(self):
        self.store = self.splits = self.systems = None

    def finished(self) -> int:
        if self.store is None:
            return 0
        return self.store.finished(self.splits, self.systems)


def run_experiment(options: ExperimentOptions, progress: Optional[ExperimentProgress] = None) -> ExperimentReport:
    """Run the reproduction of ``options`` and write ``results.json``, ``per_trial.csv``, ``splits.json``,
    ``tables.md`` and the pictures into ``options.out``; ``progress`` learns the checkpoint store, splits and
    systems. From its first write on, the folder is locked against a second run into it
    (:func:`~pyterrier_svmmap.experiments.reproduce.base_runs.folder_lock`); finished trials are kept, so that
    the same options resume an interrupted run."""
    with contextlib.ExitStack() as held:
        return _run_holding(options, progress, held)


def _run_holding(options: ExperimentOptions, progress: Optional[ExperimentProgress],
                 held: contextlib.ExitStack) -> ExperimentReport:
    import pyterrier_svmmap.experiments.reproduce.base_runs as br
    from pyterrier_svmmap.run_features import RunFeatures
    from pyterrier_svmmap.experiments.reproduce.collection import load_directory, load_irds
    from pyterrier_svmmap.experiments.reproduce.checkpoints import TrialStore
    from pyterrier_svmmap.experiments.reproduce.evaluation import aggregate
    from pyterrier_svmmap.experiments.reproduce.runner import run_trials
    from pyterrier_svmmap.scale.client import close_client, dask_client
    from pyterrier_svmmap.experiments.reproduce.protocol import file_split, make_folds, make_splits, role_counts
    from pyterrier_svmmap.experiments.reproduce.report import results_dict, tables_markdown, write_results
    from pyterrier_svmmap.experiments.systems import parse_names, resolve

    progress = progress if progress is not None else ExperimentProgress()
    t_start = time.perf_counter()
    names = parse_names(options.systems)
    systems = resolve(names)
    reference = "svm-map" if "svm-map" in systems else (next(iter(systems)) if systems else None)
    if reference != "svm-map":
        logger.warning("svm-map is not among the systems run: W/L and p-values are against %s",
                       reference or "nothing")

    coll = load_directory(options.collection) if options.collection else load_irds(options.dataset)
    topics = coll.judged_topics()
    dropped = len(coll.topics) - len(topics)
    if dropped:
        logger.info("leaving out %d of %d queries without any relevant document in the qrels",
                    dropped, len(coll.topics))
    folds = options.folds
    if options.split:
        if not coll.split:
            raise ValueError(f"{coll.name} has no split.train and split.test to evaluate on")
        splits = file_split(list(topics["qid"]), coll.split["train"], coll.split["test"], seed=options.seed)
        protocol = {"protocol": "split"}
        title = (f"{coll.name}: its split ({len(splits[0].train)} train, {len(splits[0].valid)} validation of the "
                 f"training queries, {len(splits[0].test)} test queries), seed {options.seed}")
    elif folds is not None:
        splits = make_folds(list(topics["qid"]), folds=folds, repeats=options.repeats, seed=options.seed)
        sizes = sorted({len(s.train) for s in splits}), sorted({len(s.test) for s in splits})
        protocol = {"protocol": "folds", "folds": folds, "repeats": options.repeats}
        title = (f"{coll.name}: {options.repeats} × {folds}-fold cross-validation ({len(splits)} splits; test "
                 f"one fold, validate on the next, train on {_span(sizes[0])} queries; {len(topics)} "
                 f"queries, each tested {options.repeats} time{'s' if options.repeats > 1 else ''}), seed {options.seed}")
    else:
        splits = make_splits(list(topics["qid"]), trials=options.trials, train=options.train,
                             valid=options.valid, seed=options.seed)
        protocol = {"protocol": "random"}
        title = (f"{coll.name}: {options.trials} trials, {options.train} train / {options.valid} validation "
                 f"queries, rest test ({len(topics)} queries), seed {options.seed}")
    out = Path(options.out)
    held.enter_context(br.folder_lock(out))                 # creates the folder

    runs, timings = br.base_runs(coll, out, topics=topics, threads=options.threads)
    if options.first_stage is not None and options.first_stage not in runs:
        raise ValueError(f"--first-stage {options.first_stage} is not a base function; give one of {', '.join(runs)}")
    store = TrialStore(out / "trials", br.digest("reproduce-trials", coll.content_key(),
                                                 br.runs_key(coll, topics, runs), options.depth,
                                                 *([] if options.first_stage is None else [options.first_stage])))
    store.remove_temporaries()
    progress.store, progress.splits, progress.systems = store, splits, systems
    reused = store.finished(splits, systems)
    if reused:
        logger.info("resuming: %d of %d trials already finished in %s are reused", reused, len(splits), out)
    t = time.perf_counter()
    candidates = RunFeatures(runs, first=options.first_stage).transform(topics[["qid", "query"]])   # their union
    timings["candidates_seconds"] = time.perf_counter() - t
    logger.info("%d candidates for %d queries (%.1fs)", len(candidates), len(topics),
                timings["candidates_seconds"])

    qrels = coll.qrels[coll.qrels["qid"].isin(set(topics["qid"]))]
    t = time.perf_counter()
    first_models: dict = {}
    chosen: dict = {}
    client = None
    if options.workers is not None or options.scheduler:
        client, _ = dask_client(options.scheduler or "local", workers=options.workers)
        logger.info("running the trials on the Dask cluster %s", client.scheduler_info().get("address", ""))
    try:
        per_trial, fit_seconds = run_trials(candidates, qrels, splits, systems, runs, depth=options.depth,
                                            progress=options.progress_bars, first_models=first_models,
                                            jobs=options.jobs, store=store, client=client, chosen=chosen)
    finally:
        if client is not None:
            close_client(client)
    timings["trials_seconds"] = time.perf_counter() - t
    timings["total_seconds"] = time.perf_counter() - t_start

    summary = aggregate(per_trial, reference, fit_seconds, first_stage=options.first_stage)
    n_splits = len(splits)
    results = results_dict(summary, collection=coll.name, trials=n_splits,
                           train=options.train if folds is None else None,
                           valid=options.valid if folds is None else None, seed=options.seed, reference=reference,
                           extra={**protocol, "first_stage": options.first_stage,
                                  "n_queries": len(topics), "queries_left_out": dropped,
                                  "depth": options.depth, "chosen_bases": _chosen_counts(chosen),
                                  "timings": timings})
    write_results(out / "results.json", results)
    br.atomic_write_bytes(out / "per_trial.csv", per_trial.to_csv(index=False).encode())
    counts = role_counts(splits, list(topics["qid"]))
    br.atomic_write_bytes(out / "splits.json", (json.dumps(
        {"splits": [{"trial": s.trial, **({"repeat": s.repeat, "fold": s.fold} if s.fold is not None else {}),
                     "train": s.train, "valid": s.valid, "chosen_base": chosen.get(s.trial)} for s in splits],
         "role_counts": counts}, indent=1) + "\n").encode())

    br.atomic_write_bytes(out / "tables.md", tables_markdown(summary, reference, title).encode())
    _save_pictures(out, first_models)
    return ExperimentReport(summary, reference, title, out, timings)


def _save_pictures(out: Path, first_models: dict) -> None:
    """systems.png (MAP per system, W/L against svm-map) and, for SVM-map's model of the first trial,
    the learned contribution of each base function (the paper's Figure 2); skipped without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        logger.warning("matplotlib is not installed: no pictures (pip install 'pyterrier-svmmap[plot]')")
        return
    from pyterrier_svmmap.plot import plot_systems
    plot_systems(out / "results.json", out / "systems.png")
    model = first_models.get("svm-map")
    if hasattr(model, "plot"):
        model.plot(path=out / "svm-map-contributions.png")
    logger.info("wrote pictures to %s", out)


def _span(values) -> str:
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}–{values[-1]}"


def _chosen_counts(chosen: dict) -> dict:
    """{base function: how many splits chose it}, most chosen first."""
    counts: dict = {}
    for name in chosen.values():
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
