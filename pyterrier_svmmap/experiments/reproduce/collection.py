"""A test collection's documents, topics and qrels: a folder of ``docs.trec`` (``<DOC><DOCNO>n</DOCNO> text
</DOC>``), ``topics.trec`` (``<top><num>n</num><title> query </title></top>``) and ``qrels`` (``qid 0 docno
label``) (:func:`load_directory`), or an ``ir_datasets`` id (:func:`load_irds`). The caches of ``svmmap
reproduce`` are keyed on a collection's content (:meth:`Collection.content_key`: the files' sizes and SHA-256,
or the ir_datasets id and the topics' and qrels' SHA-256), never on its name.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Union

import pandas as pd

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
