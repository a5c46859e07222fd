"""Reading a TREC-format test collection (documents, topics, qrels) into PyTerrier frames.

A collection folder holds ``docs.trec`` (``<DOC><DOCNO>n</DOCNO> text </DOC>``), ``topics.trec``
(``<top><num>n</num><title> query </title></top>``) and ``qrels`` (``qid 0 docno label``).
``load_irds`` gets the same three things from an ``ir_datasets`` id through PyTerrier (needs
internet access and the ``ir_datasets`` package).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Dict, Optional, Union, Callable

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
    text = Path(source).read_text(encoding="utf-8", errors="replace") \
        if _is_path(source) else str(source)
    for m in _DOC_RE.finditer(text):
        body = m.group(1)
        d = _DOCNO_RE.search(body)
        if d is None:
            raise ValueError(f"<DOC> without <DOCNO> near: {body[:80]!r}")
        rest = body[:d.start()] + " " + body[d.end():]
        rest = _TAG_RE.sub(" ", rest)
        yield {"docno": d.group(1).strip(), "text": " ".join(rest.split())}


def read_trec_topics(source: Union[str, Path]) -> pd.DataFrame:
    """Topics as a query frame (str ``qid``, cleaned ``query``) from a path or a string."""
    text = Path(source).read_text(encoding="utf-8", errors="replace") \
        if _is_path(source) else str(source)
    rows = []
    for m in _TOP_RE.finditer(text):
        body = m.group(1)
        num, title = _NUM_RE.search(body), _TITLE_RE.search(body)
        if num is None or title is None:
            raise ValueError(f"<top> without <num> or <title> near: {body[:80]!r}")
        rows.append({"qid": num.group(1).strip(), "query": clean_query(title.group(1))})
    return pd.DataFrame(rows, columns=["qid", "query"])


def read_trec_qrels(source: Union[str, Path]) -> pd.DataFrame:
    """qrels (``qid iter docno label``) as a frame with str ``qid``/``docno`` and int ``label``."""
    text = Path(source).read_text(encoding="utf-8", errors="replace") \
        if _is_path(source) else str(source)
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise ValueError(f"qrels line {n}: expected 'qid iter docno label', got {line!r}")
        rows.append((parts[0], parts[2], int(parts[3])))
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


def _is_path(source) -> bool:
    if isinstance(source, Path):
        return True
    return "\n" not in source and "<" not in source and len(source) < 4096


@dataclass
class Collection:
    """A test collection: a name, a document iterator factory, topics and qrels."""
    name: str
    docs: Callable[[], Iterator[Dict[str, str]]]
    topics: pd.DataFrame
    qrels: pd.DataFrame

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
        for i, d in enumerate(iter_trec_docs(path / "docs.trec")):
            if max_docs is not None and i >= max_docs:
                break
            yield d
    return Collection(str(path), docs, read_trec_topics(path / "topics.trec"),
                      read_trec_qrels(path / "qrels"))


def load_irds(dataset_id: str) -> Collection:
    """A collection from ``ir_datasets`` through PyTerrier, e.g. ``irds:vaswani`` (needs internet)."""
    try:
        import ir_datasets  # noqa: F401
    except ImportError as e:
        raise ValueError(f"--dataset {dataset_id} needs the ir_datasets package "
                         "(pip install ir_datasets) and internet access; or give --collection DIR "
                         "with docs.trec, topics.trec and qrels") from e
    import pyterrier as pt
    ds = pt.get_dataset(dataset_id if dataset_id.startswith("irds:") else "irds:" + dataset_id)
    topics = ds.get_topics()
    if "query" not in topics.columns:          # multi-field topics: use the title
        field = "title" if "title" in topics.columns else [c for c in topics.columns if c != "qid"][0]
        topics = topics.rename(columns={field: "query"})
    topics = pd.DataFrame({"qid": topics["qid"].astype(str),
                           "query": topics["query"].astype(str).map(clean_query)})
    qrels = ds.get_qrels()[["qid", "docno", "label"]].astype({"qid": str, "docno": str})

    def docs():
        for d in ds.get_corpus_iter(verbose=False):
            text = d.get("text") or " ".join(str(v) for k, v in d.items() if k != "docno")
            yield {"docno": str(d["docno"]), "text": text}
    return Collection(dataset_id, docs, topics, qrels)
