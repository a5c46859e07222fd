"""The 16 base retrieval functions, ``<function>.<stemmer>.<stopwords>`` (e.g. ``bm25.porter2.terrier``): PISA's
bm25 (k1=0.9, b=0.4), qld (μ=1000), dph and pl2 (c=1) over an index without stemming or with porter2, with no
stopwords or Terrier's removed from the queries, each its top 1000 per query.

Indices (``OUT/indices/<stemmer>``) and runs (``OUT/runs/<name>.pkl``) are cached under OUT, keyed on what they
are made of (documents, stemmer, PISA's encoding and version; topics, model, parameters, stopwords, depth), never
on paths; they are built or written under a temporary name and renamed when complete, and an unreadable or
foreign cache file is recomputed.

A test collection's documents, topics and qrels: a folder of ``docs.trec`` (``<DOC><DOCNO>n</DOCNO> text
</DOC>``), ``topics.trec`` (``<top><num>n</num><title> query </title></top>``) and ``qrels`` (``qid 0 docno
label``) (:func:`load_directory`), or an ``ir_datasets`` id (:func:`load_irds`). The caches are keyed on a
collection's content (:meth:`Collection.content_key`: the files' sizes and SHA-256, or the ir_datasets id and
the topics' and qrels' SHA-256), never on its name.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import pickle
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import pandas as pd

from pyterrier_svmmap.io.atomic import write_atomic

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
    """Send what native code writes on fds 1 and 2 (PISA's progress bars) to ``log_file`` (None: nothing is
    redirected): pyterrier-pisa 0.4.9 offers no way to quieten PISA."""
    if log_file is None:
        yield
        return
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with open(log_file, "ab") as f:
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            for fd in saved:
                os.dup2(f.fileno(), fd)
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)


def digest(*parts: Any) -> str:
    """SHA-256 of ``parts`` written as JSON (non-JSON values by ``str``): a cache key."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (its folder created when missing) whole or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


class FolderInUse(ValueError):
    """Another process holds the output folder's lock."""


@contextlib.contextmanager
def folder_lock(folder: Path):
    """Hold ``folder/.lock`` (``flock``, released with the process) while the block runs, so that two ``svmmap
    reproduce`` never write into one folder at once (two PISA index builds into one folder crash natively): a
    second run stops at once with :class:`FolderInUse` naming the holder's pid."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".lock"
    with open(path, "a+") as handle:
        try:
            import fcntl
        except ImportError:                      # pragma: no cover - Windows: no flock, no lock
            yield
            return
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise FolderInUse(f"{folder} is in use by another svmmap reproduce (pid {holder}); wait for it to "
                              "finish, or give another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_pickle(path: Path, obj: Any) -> None:
    """Pickle ``obj`` to ``path`` atomically (:func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def read_keyed(path: Path, key: str) -> Optional[dict]:
    """The dict pickled at ``path`` if it is there, readable and made for ``key``; else ``None`` (an unreadable
    file is warned about, so that the caller recomputes and overwrites it)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        obj = pickle.loads(path.read_bytes())
    except Exception as e:               # UnpicklingError, EOFError, AttributeError, ...
        logger.warning("cache file %s is unreadable (%s: %s): recomputing it", path, type(e).__name__, e)
        return None
    if not isinstance(obj, dict) or obj.get("key") != key:
        logger.info("cache file %s was made from other inputs: recomputing it", path)
        return None
    return obj


def _pisa_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("pyterrier-pisa")
    except PackageNotFoundError:         # pragma: no cover - installed without metadata
        return "unknown"


def index_key(collection, stemmer: str) -> str:
    """Cache key of the PISA index of ``collection``'s documents with ``stemmer``."""
    pisa = _require_pisa()
    return digest("pisa-index", collection.docs_key(), stemmer, "text",
                  pisa.PISA_INDEX_DEFAULTS["index_encoding"].value, _pisa_version())


def run_key(collection, topics: pd.DataFrame, name: str, num_results: int) -> str:
    """Cache key of the base run ``name`` of ``collection`` on ``topics`` at depth ``num_results``."""
    function, stemmer, stopwords = name.split(".")
    pisa = _require_pisa()
    topics_digest = digest([[str(q), str(t)] for q, t in zip(topics["qid"], topics["query"])])
    return digest("pisa-run", index_key(collection, stemmer), topics_digest, function,
                  PARAMS[function], stopwords, int(num_results),
                  pisa.PISA_INDEX_DEFAULTS["query_algorithm"].value)


def runs_key(collection, topics: pd.DataFrame, names: Optional[Iterable[str]] = None,
             num_results: int = 1000) -> str:
    """One key for all the base runs ``names`` (what the candidates and the trials depend on)."""
    names = list(names) if names is not None else base_names()
    return digest("pisa-runs", [[n, run_key(collection, topics, n, num_results)] for n in names])


_KEY_FILE = "svmmap-key.txt"


def _first_doc_checked(docs_factory):
    """The documents of ``docs_factory()``, failing with a clear error when there are none."""
    it = iter(docs_factory())
    first = next(it, None)
    if first is None:
        raise ValueError("the collection has no documents (docs.trec holds no <DOC> element); "
                         "check the --collection folder")
    return itertools.chain([first], it)


def build_indices(collection, out: Path, stemmers=STEMMERS, threads: int = 1) -> Dict[str, object]:
    """One PISA index per stemmer under ``out/indices``, reused while its key (:func:`index_key`) matches, else
    built in a temporary folder renamed into place when complete."""
    pisa = _require_pisa()
    indices = {}
    for stemmer in stemmers:
        path = Path(out) / "indices" / stemmer
        key = index_key(collection, stemmer)
        cached = False                              # a finished index made for key (not an old or foreign one)
        with contextlib.suppress(OSError):
            cached = (path / _KEY_FILE).read_text().strip() == key
        if cached:
            logger.info("reusing PISA index %s", path)
        else:
            if path.exists():
                logger.info("PISA index %s was built from other documents or options: rebuilding", path)
            t = time.perf_counter()
            path.parent.mkdir(parents=True, exist_ok=True)
            for stale in path.parent.glob(f".{stemmer}.*.building"):     # a killed build's leftovers
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{stemmer}.", suffix=".building"))
            try:
                shutil.rmtree(tmp)       # PISA wants to create the folder itself
                building = pisa.PisaIndex(str(tmp), text_field="text", stemmer=stemmer, threads=threads)
                with redirect_native_output(_native_log(out)):
                    building.index(_first_doc_checked(collection.docs))
                (tmp / _KEY_FILE).write_text(key + "\n")
                if path.exists():
                    shutil.rmtree(path)
                os.replace(tmp, path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            logger.info("built PISA index %s in %.1fs", path, time.perf_counter() - t)
        indices[stemmer] = pisa.PisaIndex(str(path), text_field="text", stemmer=stemmer, threads=threads)
    return indices


def _native_log(out: Path) -> Optional[Path]:
    """Where PISA's own output goes: ``OUT/pisa.log``, or the terminal with debug logging."""
    return None if logger.isEnabledFor(logging.DEBUG) else Path(out) / "pisa.log"


def _retrieve(index, name: str, topics: pd.DataFrame, num_results: int, threads: int, out: Path) -> pd.DataFrame:
    """The run of base function ``name`` on ``topics``; an error if it retrieved nothing at all."""
    function, _, stopwords = name.split(".")
    with redirect_native_output(_native_log(out)):
        run = _require_pisa().PisaRetrieve(index, scorer=function, num_results=num_results, threads=threads,
                                           stops=stopwords, **PARAMS[function])(topics)
    if run.empty:
        raise ValueError(f"base run {name} retrieved no document for any of the {len(topics)} queries "
                         "(not cached); check that docs.trec and topics.trec belong together")
    run = run[["qid", "docno", "score", "rank"]].astype({"qid": str, "docno": str})
    run["score"] = run["score"].astype(float)
    return run.reset_index(drop=True)


def base_runs(collection, out: Path, topics: Optional[pd.DataFrame] = None,
              names: Optional[Iterable[str]] = None, num_results: int = 1000,
              threads: int = 1) -> Tuple[Dict[str, pd.DataFrame], dict]:
    """``(runs, timings)``: the runs (qid, docno, score, rank) of the base functions on ``topics`` (default all),
    each reused from ``OUT/runs/<name>.pkl`` while its key (:func:`run_key`) matches, and ``index_seconds``,
    ``runs_seconds``."""
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"--threads must be at least 1, got {threads!r} (PISA with 0 threads retrieves nothing)")
    if not isinstance(num_results, int) or num_results < 1:
        raise ValueError(f"the base runs' depth must be at least 1, got {num_results!r}")
    topics = collection.topics if topics is None else topics
    names = list(names) if names is not None else base_names()
    run_dir = Path(out) / "runs"
    run_dir.mkdir(parents=True, exist_ok=True)

    keys = {name: run_key(collection, topics, name, num_results) for name in names}
    runs = {name: (read_keyed(run_dir / f"{name}.pkl", key) or {}).get("run") for name, key in keys.items()}
    runs = {name: run for name, run in runs.items() if isinstance(run, pd.DataFrame) and not run.empty}
    todo = [name for name in names if name not in runs]
    timings = {"index_seconds": 0.0, "runs_seconds": 0.0}
    if todo:
        stemmers = [s for s in STEMMERS if any(n.split(".")[1] == s for n in todo)]
        t = time.perf_counter()
        indices = build_indices(collection, out, stemmers=stemmers, threads=threads)
        timings["index_seconds"] = time.perf_counter() - t
        t = time.perf_counter()
        for name in todo:
            run = _retrieve(indices[name.split(".")[1]], name, topics, num_results, threads, out)
            write_pickle(run_dir / f"{name}.pkl", {"key": keys[name], "run": run})
            runs[name] = run
        timings["runs_seconds"] = time.perf_counter() - t
        logger.info("computed %d base runs in %.1fs", len(todo), timings["runs_seconds"])
    else:
        logger.info("reusing %d cached base runs from %s", len(runs), run_dir)
    return {n: runs[n] for n in names}, timings


_DOC_RE = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO_RE = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
_TOP_RE = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_NUM_RE = re.compile(r"<num>\s*(?:Number:)?\s*(.*?)\s*(?:</num>|<|\n)", re.S | re.I)
_TITLE_RE = re.compile(r"<title>\s*(?:Topic:)?(.*?)(?:</title>|<)", re.S | re.I)
_TAG_RE = re.compile(r"<[^>]*>")
# anything but letters, digits and whitespace: PISA's query parser treats some punctuation
# (':' for weights, quotes, parentheses) specially, and the tokeniser drops the rest anyway.
_QUERY_UNSAFE = re.compile(r"[^\w\s]+", re.U)


def clean_query(text: str) -> str:
    """Lower-cased query with punctuation replaced by spaces and whitespace collapsed."""
    return " ".join(_QUERY_UNSAFE.sub(" ", text).split()).lower()


def iter_trec_docs(source: Union[str, Path]) -> Iterator[Dict[str, str]]:
    """``{"docno", "text"}`` per ``<DOC>`` of a TREC file (path) or of a string holding one."""
    for m in _DOC_RE.finditer(_text(source)):
        body = m.group(1)
        d = _DOCNO_RE.search(body)
        if d is None:
            raise ValueError(f"<DOC> without <DOCNO> near: {body[:80]!r}")
        rest = _TAG_RE.sub(" ", body[:d.start()] + " " + body[d.end():])
        yield {"docno": d.group(1).strip(), "text": " ".join(rest.split())}


def read_trec_topics(source: Union[str, Path]) -> pd.DataFrame:
    """Topics as a query frame (str ``qid``, cleaned ``query``) from a path or a string."""
    rows = []
    for m in _TOP_RE.finditer(_text(source)):
        body = m.group(1)
        num, title = _NUM_RE.search(body), _TITLE_RE.search(body)
        if num is None or title is None:
            raise ValueError(f"<top> without <num> or <title> near: {body[:80]!r}")
        rows.append({"qid": num.group(1).strip(), "query": clean_query(title.group(1))})
    return pd.DataFrame(rows, columns=["qid", "query"])


def read_trec_qrels(source: Union[str, Path]) -> pd.DataFrame:
    """qrels (``qid iter docno label``) as a frame with str ``qid``/``docno`` and int ``label``."""
    rows = []
    for n, line in enumerate(_text(source).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise ValueError(f"qrels line {n}: expected 'qid iter docno label', got {line!r}")
        rows.append((parts[0], parts[2], int(parts[3])))
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


def _text(source: Union[str, Path]) -> str:
    """The text of a path, or ``source`` itself when it is the text (it holds a newline or a tag, or is long)."""
    if isinstance(source, Path) or ("\n" not in source and "<" not in source and len(source) < 4096):
        return Path(source).read_text(encoding="utf-8", errors="replace")
    return str(source)


def file_digest(path: Union[str, Path], block: int = 1 << 20) -> str:
    """``"<size>:<sha256>"`` of a file, read in ``block``-byte pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            h.update(chunk)
        return f"{f.tell()}:{h.hexdigest()}"


def frame_digest(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's columns and values, in order (of its CSV text: one C-level pass)."""
    return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()


@dataclass
class Collection:
    """A test collection: a name, a document iterator factory, topics, qrels, ``content`` (what identifies
    each part's content, ``{"docs": ..., "topics": ..., "qrels": ...}``) and its own split if it has one."""
    name: str
    docs: Callable[[], Iterator[Dict[str, str]]]
    topics: pd.DataFrame
    qrels: pd.DataFrame
    content: Dict[str, str] = field(default_factory=dict)
    split: Optional[Dict[str, List[str]]] = None

    def docs_key(self) -> str:
        """What identifies the documents (the indices are keyed on it)."""
        if "docs" not in self.content:
            raise ValueError(f"collection {self.name} has no content key for its documents: "
                             "build it with load_directory or load_irds")
        return self.content["docs"]

    def content_key(self) -> str:
        """SHA-256 of the documents', topics' and qrels' keys: changes with any of the three."""
        self.docs_key()
        return hashlib.sha256(json.dumps(self.content, sort_keys=True).encode()).hexdigest()

    def judged_topics(self) -> pd.DataFrame:
        """The topics having at least one relevant (label > 0) document in the qrels."""
        rel = set(self.qrels.loc[self.qrels["label"] > 0, "qid"])
        return self.topics[self.topics["qid"].isin(rel)].reset_index(drop=True)


def load_directory(path: Union[str, Path], max_docs: Optional[int] = None) -> Collection:
    """The collection in a folder holding ``docs.trec``, ``topics.trec`` and ``qrels``."""
    path = Path(path)
    for f in ("docs.trec", "topics.trec", "qrels"):
        if not (path / f).exists():
            raise FileNotFoundError(f"{path / f} not found (a collection folder needs "
                                    "docs.trec, topics.trec and qrels)")

    def docs():
        return itertools.islice(iter_trec_docs(path / "docs.trec"), max_docs)
    content = {"docs": f"docs.trec {file_digest(path / 'docs.trec')} max_docs={max_docs}",
               "topics": f"topics.trec {file_digest(path / 'topics.trec')}",
               "qrels": f"qrels {file_digest(path / 'qrels')}"}
    split = None
    if (path / "split.train").exists() and (path / "split.test").exists():
        split = {role: (path / f"split.{role}").read_text().split() for role in ("train", "test")}
        content["split"] = f"split {file_digest(path / 'split.train')} {file_digest(path / 'split.test')}"
    return Collection(str(path), docs, read_trec_topics(path / "topics.trec"),
                      read_trec_qrels(path / "qrels"), content, split)


def load_irds(dataset_id: str) -> Collection:
    """A collection from ``ir_datasets`` through PyTerrier, e.g. ``irds:vaswani`` (needs internet)."""
    try:
        import ir_datasets  # noqa: F401
    except ImportError as e:
        raise ValueError(f"--dataset {dataset_id} needs the ir_datasets package "
                         "(pip install ir_datasets) and internet access; or give --collection DIR "
                         "with docs.trec, topics.trec and qrels") from e
    import pyterrier as pt
    try:
        ds = pt.get_dataset(dataset_id if dataset_id.startswith("irds:") else "irds:" + dataset_id)
        topics = ds.get_topics()
        qrels = ds.get_qrels()
    except Exception as e:         # offline: RuntimeError('All download sources failed', [...]) etc.
        raise ValueError(f"--dataset {dataset_id}: ir_datasets could not provide it ({_one_line(e)}); "
                         "it needs internet access on first use, or give --collection DIR with "
                         "docs.trec, topics.trec and qrels") from e
    if "query" not in topics.columns:          # multi-field topics: use the title
        field = "title" if "title" in topics.columns else [c for c in topics.columns if c != "qid"][0]
        topics = topics.rename(columns={field: "query"})
    topics = pd.DataFrame({"qid": topics["qid"].astype(str),
                           "query": topics["query"].astype(str).map(clean_query)})
    qrels = qrels[["qid", "docno", "label"]].astype({"qid": str, "docno": str})

    def docs():
        for d in ds.get_corpus_iter(verbose=False):
            text = d.get("text") or " ".join(str(v) for k, v in d.items() if k != "docno")
            yield {"docno": str(d["docno"]), "text": text}
    content = {"docs": f"ir_datasets {dataset_id}", "topics": frame_digest(topics),
               "qrels": frame_digest(qrels)}
    return Collection(dataset_id, docs, topics, qrels, content)


def _one_line(e: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message`` of an exception, at most ``limit`` characters."""
    msg = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
    msg = (msg.strip().splitlines() or [""])[0]
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."
