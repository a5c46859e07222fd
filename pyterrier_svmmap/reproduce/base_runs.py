"""The 16 base retrieval functions: PISA indices × stopwords × weighting models, cached under OUT.

A base function is named ``<function>.<stemmer>.<stopwords>``, e.g. ``bm25.porter2.terrier``:
``function`` ∈ bm25 (k1=0.9, b=0.4), qld (Dirichlet μ=1000), dph, pl2 (c=1) — PISA's defaults —,
``stemmer`` ∈ none, porter2 (one index each, ``OUT/indices/<stemmer>``), ``stopwords`` ∈ none,
terrier (applied to the queries at retrieval time). Each returns its top 1000 per query.

Indices and runs are cached: ``OUT/indices/<stemmer>`` is reused when built, ``OUT/runs/<name>.pkl``
when present and made for the same collection and topics (``OUT/runs/fingerprint.txt``).
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import pandas as pd

logger = logging.getLogger(__name__)

FUNCTIONS = ("bm25", "qld", "dph", "pl2")
STEMMERS = ("none", "porter2")
STOPWORDS = ("none", "terrier")
#: PISA's own defaults (those of PisaIndex.bm25/qld/pl2), spelled as PisaRetrieve arguments
PARAMS = {"bm25": {"bm25_k1": 0.9, "bm25_b": 0.4}, "qld": {"qld_mu": 1000.0},
          "dph": {}, "pl2": {"pl2_c": 1.0}}


def base_names(functions=FUNCTIONS, stemmers=STEMMERS, stopwords=STOPWORDS) -> List[str]:
    return [f"{f}.{s}.{w}" for s in stemmers for w in stopwords for f in functions]


def _require_pisa():
    try:
        import pyterrier_pisa  # noqa: F401
    except ImportError as e:
        raise ValueError("the base runs need pyterrier-pisa (pip install 'pyterrier-svmmap[pisa]')") from e
    return pyterrier_pisa


@contextlib.contextmanager
def redirect_native_output(log_file: Optional[Path]):
    """Send what native code writes on fds 1 and 2 (PISA's progress bars) to ``log_file``.

    pyterrier-pisa 0.4.9 offers no way to quieten PISA; with ``log_file=None`` nothing is redirected.
    """
    if log_file is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log_file, "ab") as f:
        try:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def build_indices(docs_factory, out: Path, stemmers=STEMMERS, threads: int = 1) -> Dict[str, object]:
    """One PISA index per stemmer under ``out/indices``; built once, reused afterwards."""
    pisa = _require_pisa()
    indices = {}
    for stemmer in stemmers:
        path = Path(out) / "indices" / stemmer
        index = pisa.PisaIndex(str(path), text_field="text", stemmer=stemmer, threads=threads)
        if index.built():
            logger.info("reusing PISA index %s", path)
        else:
            t = time.perf_counter()
            path.parent.mkdir(parents=True, exist_ok=True)
            with redirect_native_output(_native_log(out)):
                index.index(docs_factory())
            logger.info("built PISA index %s (%d docs) in %.1fs", path, index.num_docs(),
                        time.perf_counter() - t)
        indices[stemmer] = index
    return indices


def retriever(index, function: str, stopwords: str, num_results: int = 1000, threads: int = 1):
    """A PISA retriever for one base function over ``index``."""
    pisa = _require_pisa()
    return pisa.PisaRetrieve(index, scorer=function, num_results=num_results, threads=threads,
                             stops=stopwords, **PARAMS[function])


def _native_log(out: Path) -> Optional[Path]:
    """Where PISA's own output goes: ``OUT/pisa.log``, or the terminal with debug logging."""
    return None if logger.isEnabledFor(logging.DEBUG) else Path(out) / "pisa.log"


def _fingerprint(collection_name: str, topics: pd.DataFrame, extra: str = "") -> str:
    h = hashlib.sha1()
    h.update(collection_name.encode())
    h.update(extra.encode())
    h.update(pd.util.hash_pandas_object(topics[["qid", "query"]], index=False).values.tobytes())
    return h.hexdigest()


def base_runs(collection, out: Path, topics: Optional[pd.DataFrame] = None,
              names: Optional[Iterable[str]] = None, num_results: int = 1000,
              threads: int = 1, fingerprint_extra: str = "") -> Tuple[Dict[str, pd.DataFrame], dict]:
    """Runs (qid, docno, score, rank) of the base functions on ``topics`` (default: all topics).

    Returns ``(runs, timings)``; ``timings`` has ``index_seconds`` and ``runs_seconds`` (0 when
    everything came from the cache).
    """
    out = Path(out)
    topics = collection.topics if topics is None else topics
    names = list(names) if names is not None else base_names()
    stemmers = sorted({n.split(".")[1] for n in names}, key=STEMMERS.index)
    run_dir = out / "runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    fp = _fingerprint(collection.name, topics, f"{fingerprint_extra}|{num_results}")
    fp_file = run_dir / "fingerprint.txt"
    if fp_file.exists() and fp_file.read_text().strip() != fp:
        logger.info("cached runs in %s are for other topics or another collection: recomputing", run_dir)
        for f in run_dir.glob("*.pkl"):
            f.unlink()
    fp_file.write_text(fp)
    index_fp = _fingerprint(collection.name, topics.iloc[:0], fingerprint_extra)
    index_fp_file = out / "indices" / "fingerprint.txt"
    if index_fp_file.exists() and index_fp_file.read_text().strip() != index_fp:
        logger.info("cached indices in %s are for another collection: rebuilding", out / "indices")
        shutil.rmtree(out / "indices")
    index_fp_file.parent.mkdir(parents=True, exist_ok=True)
    index_fp_file.write_text(index_fp)

    runs, todo = {}, []
    for name in names:
        f = run_dir / f"{name}.pkl"
        if f.exists():
            runs[name] = pd.read_pickle(f)
        else:
            todo.append(name)
    timings = {"index_seconds": 0.0, "runs_seconds": 0.0}
    if todo:
        t = time.perf_counter()
        indices = build_indices(collection.docs, out, stemmers=[s for s in stemmers
                                                               if any(n.split(".")[1] == s for n in todo)],
                                threads=threads)
        timings["index_seconds"] = time.perf_counter() - t
        t = time.perf_counter()
        for name in todo:
            function, stemmer, stopwords = name.split(".")
            with redirect_native_output(_native_log(out)):
                run = retriever(indices[stemmer], function, stopwords, num_results, threads)(topics)
            run = run[["qid", "docno", "score", "rank"]].astype({"qid": str, "docno": str})
            run["score"] = run["score"].astype(float)
            run.to_pickle(run_dir / f"{name}.pkl")
            runs[name] = run
        timings["runs_seconds"] = time.perf_counter() - t
        logger.info("computed %d base runs in %.1fs", len(todo), timings["runs_seconds"])
    else:
        logger.info("reusing %d cached base runs from %s", len(runs), run_dir)
    return {n: runs[n] for n in names}, timings
