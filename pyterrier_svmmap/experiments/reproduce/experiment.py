"""One run of ``svmmap reproduce`` (:func:`run_experiment`): the collection's base runs and candidates, every
system fitted and evaluated over the splits, the results and pictures written to the output folder. The command
line (:mod:`pyterrier_svmmap.cli.reproduce`) checks the options and prints the tables.

The protocols (the splits): random splits (:func:`make_splits`; Yue et al. 2007 §5: "all queries [...] in the
training, validation and test sets the same number of times"): trial t takes the next ``train + valid`` distinct
queries of a stream of successive random permutations of all queries (a query that would come twice is left at
the front of the stream for the next trial), so that each query is held out of the test set ⌊T·m/N⌋ or ⌈T·m/N⌉
times, up to one more where a query was deferred; of them, the ``valid`` with the fewest validation roles so far
(ties at random) validate and the others train. Repeated k-fold splits (:func:`make_folds`): each repeat
shuffles the queries into K folds whose sizes differ by at most one; split (r, k) tests fold k, validates on fold
k + 1 (mod K) and trains on the others, so every query is tested and validated exactly ``repeats`` times (with
``valid_fold=False`` nothing validates). A collection's own split: :func:`file_split`.
"""
from __future__ import annotations

import collections
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np
import pandas as pd

from pyterrier_svmmap.experiments.reproduce import base_runs as br
from pyterrier_svmmap.experiments.reproduce.evaluation import aggregate, results_dict, tables_markdown
from pyterrier_svmmap.experiments.reproduce.trials import TrialStore, run_trials
from pyterrier_svmmap.experiments.systems import parse_names, resolve

logger = logging.getLogger(__name__)


@dataclass
class ExperimentOptions:
    """What a reproduction runs: ``svmmap reproduce``'s options, checked and with their defaults filled in.

    ``out`` is the output and cache folder; ``systems`` the ``--systems`` names (``default``, ``all``); one of
    ``collection`` (a TREC folder) and ``dataset`` (an ir_datasets id); the protocol is random splits
    (``trials``, ``train``, ``valid``), ``folds`` × ``repeats`` or the collection's own ``split``;
    ``first_stage`` is the base function every system starts from and is compared with (None: none);
    ``workers`` or ``scheduler`` run the trials on Dask instead of ``jobs`` forked processes.
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
    """How many finished trials an interrupted run keeps: told the checkpoint store, the splits and the systems
    by :func:`run_experiment` as soon as they are known."""

    def __init__(self):
        self.store = self.splits = self.systems = None

    def finished(self) -> int:
        return 0 if self.store is None else self.store.finished(self.splits, self.systems)


@dataclass
class _Plan:
    """The queries a run compares the systems on: the collection, its judged topics (``dropped``: those left
    out), the splits, the protocol's entries of results.json and the tables' title."""
    collection: object
    topics: pd.DataFrame
    dropped: int
    splits: list
    protocol: dict
    title: str


def run_experiment(options: ExperimentOptions, progress: Optional[ExperimentProgress] = None) -> ExperimentReport:
    """Run the reproduction of ``options`` and write ``results.json``, ``per_trial.csv``, ``splits.json``,
    ``tables.md`` and the pictures into ``options.out``; ``progress`` learns the checkpoint store, splits and
    systems. From its first write on, the folder is locked against a second run into it
    (:func:`~pyterrier_svmmap.experiments.reproduce.base_runs.folder_lock`); finished trials are kept, so that
    the same options resume an interrupted run."""
    progress = progress if progress is not None else ExperimentProgress()
    t_start = time.perf_counter()
    systems = resolve(parse_names(options.systems))
    reference = "svm-map" if "svm-map" in systems else next(iter(systems), None)
    if reference != "svm-map":
        logger.warning("svm-map is not among the systems run: W/L and p-values are against %s",
                       reference or "nothing")
    plan = _plan(options)
    out = Path(options.out)
    with br.folder_lock(out):                                  # creates the folder
        runs, timings = br.base_runs(plan.collection, out, topics=plan.topics, threads=options.threads)
        per_trial, fit_seconds, chosen, first_models = _run_trials(options, plan, runs, systems, progress, timings)
        timings["total_seconds"] = time.perf_counter() - t_start
        summary = aggregate(per_trial, reference, fit_seconds, first_stage=options.first_stage)
        _write(out, options, plan, summary, per_trial, reference, chosen, timings)
        _save_pictures(out, first_models)
    return ExperimentReport(summary, reference, plan.title, out, timings)


def _plan(options: ExperimentOptions) -> _Plan:
    """The collection of ``options``, its judged topics and the splits of its protocol."""
    coll = br.load_directory(options.collection) if options.collection else br.load_irds(options.dataset)
    topics = coll.judged_topics()
    dropped = len(coll.topics) - len(topics)
    if dropped:
        logger.info("leaving out %d of %d queries without any relevant document in the qrels",
                    dropped, len(coll.topics))
    qids, seed = list(topics["qid"]), options.seed
    if options.split:
        if not coll.split:
            raise ValueError(f"{coll.name} has no split.train and split.test to evaluate on")
        splits = file_split(qids, coll.split["train"], coll.split["test"], seed=seed)
        protocol = {"protocol": "split"}
        title = (f"its split ({len(splits[0].train)} train, {len(splits[0].valid)} validation of the training "
                 f"queries, {len(splits[0].test)} test queries)")
    elif options.folds is not None:
        folds, repeats = options.folds, options.repeats
        splits = make_folds(qids, folds=folds, repeats=repeats, seed=seed)
        train = sorted({len(s.train) for s in splits})
        train = str(train[0]) if train[0] == train[-1] else f"{train[0]}–{train[-1]}"
        protocol = {"protocol": "folds", "folds": folds, "repeats": repeats}
        title = (f"{repeats} × {folds}-fold cross-validation ({len(splits)} splits; test one fold, validate on the "
                 f"next, train on {train} queries; {len(topics)} queries, each tested {repeats} "
                 f"time{'s' if repeats > 1 else ''})")
    else:
        splits = make_splits(qids, trials=options.trials, train=options.train, valid=options.valid, seed=seed)
        protocol = {"protocol": "random"}
        title = (f"{options.trials} trials, {options.train} train / {options.valid} validation queries, rest test "
                 f"({len(topics)} queries)")
    return _Plan(coll, topics, dropped, splits, protocol, f"{coll.name}: {title}, seed {seed}")


def _run_trials(options: ExperimentOptions, plan: _Plan, runs: dict, systems: dict, progress: ExperimentProgress,
                timings: dict):
    """(per_trial, fit_seconds, {trial: chosen base}, the first split's models) of ``systems`` on the candidates
    of ``runs``, checkpointed under ``options.out/trials``."""
    from pyterrier_svmmap.run_features import RunFeatures
    from pyterrier_svmmap.scale.client import close_client, dask_client
    coll, topics, splits, out = plan.collection, plan.topics, plan.splits, Path(options.out)
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
    logger.info("%d candidates for %d queries (%.1fs)", len(candidates), len(topics), timings["candidates_seconds"])
    qrels = coll.qrels[coll.qrels["qid"].isin(set(topics["qid"]))]
    t = time.perf_counter()
    first_models, chosen = {}, {}
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
    return per_trial, fit_seconds, chosen, first_models


def _write(out: Path, options: ExperimentOptions, plan: _Plan, summary: pd.DataFrame, per_trial: pd.DataFrame,
           reference: Optional[str], chosen: dict, timings: dict) -> None:
    """results.json, per_trial.csv, splits.json and tables.md, each written whole."""
    random = options.folds is None
    counts = collections.Counter(chosen.values())
    results = results_dict(summary, collection=plan.collection.name, trials=len(plan.splits),
                           train=options.train if random else None, valid=options.valid if random else None,
                           seed=options.seed, reference=reference,
                           extra={**plan.protocol, "first_stage": options.first_stage,
                                  "n_queries": len(plan.topics), "queries_left_out": plan.dropped,
                                  "depth": options.depth,
                                  "chosen_bases": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                                  "timings": timings})
    br.atomic_write_bytes(out / "results.json", (json.dumps(results, indent=2) + "\n").encode())
    br.atomic_write_bytes(out / "per_trial.csv", per_trial.to_csv(index=False).encode())
    splits = [{"trial": s.trial, **({"repeat": s.repeat, "fold": s.fold} if s.fold is not None else {}),
               "train": s.train, "valid": s.valid, "chosen_base": chosen.get(s.trial)} for s in plan.splits]
    br.atomic_write_bytes(out / "splits.json", (json.dumps(
        {"splits": splits, "role_counts": role_counts(plan.splits, list(plan.topics["qid"]))}, indent=1)
        + "\n").encode())
    br.atomic_write_bytes(out / "tables.md", tables_markdown(summary, reference, plan.title).encode())


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


@dataclass(frozen=True)
class Split:
    """One train / validation / test split, numbered from 0 (k-fold splits: ``repeat`` × K + ``fold``)."""
    trial: int
    train: tuple
    valid: tuple
    test: tuple
    repeat: Optional[int] = None
    fold: Optional[int] = None


def make_splits(qids: Sequence[str], trials: int = 50, train: int = 10, valid: int = 5,
                seed: int = 0) -> List[Split]:
    """``trials`` splits of ``qids`` (see the module's docstring for the balancing scheme)."""
    qids = list(qids)
    n, m = len(qids), train + valid
    if len(set(qids)) != n:
        raise ValueError("duplicate query ids")
    if train < 1 or valid < 0 or trials < 1:
        raise ValueError("need --train >= 1, --valid >= 0 and --trials >= 1")
    if n <= m:
        raise ValueError(f"{n} queries cannot give {train} training and {valid} validation "
                         "queries and leave any to test")
    rng = np.random.default_rng(seed)
    stream: List[int] = []
    valid_count = np.zeros(n, dtype=int)
    splits = []
    for t in range(trials):
        chosen: List[int] = []
        pos = 0
        while len(chosen) < m:
            if pos >= len(stream):
                stream.extend(rng.permutation(n).tolist())
            if stream[pos] in chosen:
                pos += 1              # keep it in the stream for a later trial
            else:
                chosen.append(stream.pop(pos))
        chosen_arr = np.array(chosen)
        order = np.lexsort((rng.random(m), valid_count[chosen_arr]))    # fewest validation roles first, ties at random
        va, tr = chosen_arr[order[:valid]], chosen_arr[order[valid:]]
        valid_count[va] += 1
        splits.append(Split(t, tuple(qids[i] for i in sorted(tr)), tuple(qids[i] for i in sorted(va)),
                            tuple(qids[i] for i in np.setdiff1d(np.arange(n), chosen_arr))))
    return splits


def make_folds(qids: Sequence[str], folds: int = 5, repeats: int = 1, seed: int = 0,
               valid_fold: bool = True) -> List[Split]:
    """``repeats`` × ``folds`` k-fold splits of ``qids`` (see the module's docstring), in the order
    repeat 0 fold 0, repeat 0 fold 1, ...; the query ids of each role are sorted."""
    qids = list(qids)
    n = len(qids)
    if len(set(qids)) != n:
        raise ValueError("duplicate query ids")
    least = 3 if valid_fold else 2
    if folds < least:
        raise ValueError(f"--folds must be at least {least} (a test fold, "
                         f"{'a validation fold and ' if valid_fold else ''}at least one training fold), "
                         f"got {folds}")
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    if n < folds:
        raise ValueError(f"{n} queries cannot be split into {folds} folds")
    rng = np.random.default_rng(seed)
    splits = []
    for r in range(repeats):
        parts = [sorted(qids[i] for i in part) for part in np.array_split(rng.permutation(n), folds)]
        for k in range(folds):
            v = (k + 1) % folds if valid_fold else None
            train = sorted(q for j, part in enumerate(parts) if j not in (k, v) for q in part)
            splits.append(Split(r * folds + k, tuple(train), tuple(parts[v]) if valid_fold else (),
                                tuple(parts[k]), repeat=r, fold=k))
    return splits


def file_split(qids: Sequence[str], train: Sequence[str], test: Sequence[str], valid_folds: int = 5,
               seed: int = 0) -> List[Split]:
    """The one split a collection fixes (BEIR's train and test claims): its test queries test; of its
    training queries, a seeded 1/``valid_folds`` validates (as one fold of ``make_folds``) and the rest
    train. Only judged queries (``qids``) are kept in each role; a query in both lists is an error."""
    judged = set(qids)
    train, test = [q for q in train if q in judged], [q for q in test if q in judged]
    both = set(train) & set(test)
    if both:
        raise ValueError(f"{len(both)} queries are in both split.train and split.test, e.g. {sorted(both)[0]!r}")
    if len(train) < valid_folds or not test:
        raise ValueError(f"the split has {len(train)} judged training and {len(test)} judged test queries; it needs "
                         f"at least {valid_folds} training queries and one test query")
    order = np.random.default_rng(seed).permutation(len(train))
    valid = {train[i] for i in order[:len(train) // valid_folds]}
    return [Split(0, tuple(sorted(q for q in train if q not in valid)), tuple(sorted(valid)), tuple(sorted(test)))]


def role_counts(splits: Sequence[Split], qids: Sequence[str]) -> dict:
    """{role: {qid: count}} for the roles train, valid and test."""
    return {r: {**dict.fromkeys(qids, 0), **collections.Counter(q for s in splits for q in getattr(s, r))}
            for r in ("train", "valid", "test")}
