"""Reading svmlight / LETOR ranking files: ``label qid:Q idx:val idx:val ... # comment``.

The format of ``svm_map_learn``, ``svm_rank_learn`` and the LETOR collections:

* ``label`` is a number; a document is relevant when ``label > 0``;
* ``qid:Q`` (an integer) groups the lines of one query; every line must have one;
* ``idx:val`` pairs give features, indices 1-based and strictly increasing within a line;
* a feature absent from a (sparse) line is **0**, as in svmlight — not "missing" (NaN): the
  svmlight format cannot say "this base function did not score the document";
* anything after ``#`` is a comment; ``#docid = X`` (LETOR) or ``# X`` is kept per line as its docid.

The numbers are parsed by scikit-learn's C parser (:func:`sklearn.datasets.load_svmlight_file`), the
comments by one pass over the bytes. When scikit-learn rejects a file, a slow line-by-line check finds
the first bad line and the error names ``file:line`` and what was expected there.

An *index file* (the original programs' convention of a file listing data files, one per line,
relative to the index file's folder; blank lines and ``#`` lines ignored) is read as the concatenation
of the files it lists.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Union

import numpy as np


class SvmlightError(ValueError):
    """A file that is not valid svmlight/LETOR ranking data (message names file:line)."""


@dataclass
class RankingData:
    """The lines of one or more svmlight files, in input order.

    ``features`` (n, F) float, 0 where a line omits a feature; ``labels`` (n,); ``qids`` (n,) int;
    ``comments`` (n,) str ("" without one) and ``docids`` (n,) str (from ``#docid = X``, else the
    comment's first word, else the line number); ``order`` is a stable permutation that groups the lines
    by query (queries in order of first appearance) and ``offsets`` (Q + 1) delimits the queries in that
    grouped order, ``query_ids`` (Q,) their qids. ``sources`` lists the files read.
    """
    features: np.ndarray
    labels: np.ndarray
    qids: np.ndarray
    comments: np.ndarray
    docids: np.ndarray
    order: np.ndarray
    offsets: np.ndarray
    query_ids: np.ndarray
    sources: List[str]

    @property
    def n_lines(self) -> int:
        return len(self.labels)

    @property
    def n_features(self) -> int:
        return self.features.shape[1]

    def grouped(self, values: np.ndarray) -> np.ndarray:
        """``values`` given in input order, re-ordered by query (as ``offsets`` delimits)."""
        return np.asarray(values)[self.order]

    def ungroup(self, values: np.ndarray) -> np.ndarray:
        """``values`` given in grouped order, back in input order."""
        out = np.empty_like(np.asarray(values))
        out[self.order] = values
        return out


_DOCID = re.compile(r"docid\s*=\s*(\S+)")


def _is_data_line(text: str) -> bool:
    tok = text.split("#", 1)[0].split()
    if not tok:
        return True
    try:
        float(tok[0])
        return True
    except ValueError:
        return False


def index_file_members(path: Path) -> Optional[List[Path]]:
    """The data files an index file lists, or None when ``path`` is a data file itself."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"\0" in head:
        raise SvmlightError(f"{path}: a binary file, not svmlight text")
    lines = [ln.strip() for ln in head.decode("utf-8", "replace").splitlines()[:20]]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if not lines or _is_data_line(lines[0]):
        return None
    members = []
    for ln in Path(path).read_text().splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        p = Path(ln) if Path(ln).is_absolute() else Path(path).parent / ln
        if not p.is_file():
            raise SvmlightError(f"{path}: neither svmlight data (line starts with {ln.split()[0]!r}, "
                                f"expected a label) nor an index file (listed file {p} not found)")
        members.append(p)
    return members


def _explain(path: Path, data: bytes) -> str:
    """The first line of ``data`` that is not valid svmlight ranking data, as 'file:line: problem'."""
    for no, line in enumerate(data.split(b"\n"), 1):
        body = line.split(b"#", 1)[0].strip()
        if not body:
            continue
        tok = body.split()
        where = f"{path}:{no}"
        try:
            float(tok[0])
        except ValueError:
            return f"{where}: expected a numeric label first, found {tok[0][:30].decode(errors='replace')!r}"
        if len(tok) < 2 or not tok[1].startswith(b"qid:"):
            return f"{where}: expected 'qid:<integer>' after the label (every line needs its query id)"
        try:
            int(tok[1][4:])
        except ValueError:
            return f"{where}: expected an integer query id, found {tok[1][:30].decode(errors='replace')!r}"
        last = 0
        for t in tok[2:]:
            idx, sep, val = t.partition(b":")
            try:
                i = int(idx)
                v = float(val)
            except ValueError:
                return f"{where}: expected 'index:value' pairs, found {t[:30].decode(errors='replace')!r}"
            if not sep:
                return f"{where}: expected 'index:value' pairs, found {t[:30].decode(errors='replace')!r}"
            if i <= 0:
                return f"{where}: feature index {i}: indices start at 1"
            if i <= last:
                return f"{where}: feature index {i} after {last}: indices must be strictly increasing"
            if not math.isfinite(v):
                return f"{where}: feature {i} is {val.decode()}: values must be finite numbers"
            last = i
        if not math.isfinite(float(tok[0])):
            return f"{where}: label {tok[0].decode()} is not a finite number"
    return f"{path}: not valid svmlight ranking data"


def _comments(data: bytes, n: int) -> np.ndarray:
    """The comment of each data line (blank and comment-only lines skipped, as scikit-learn does)."""
    if b"#" not in data:
        return np.full(n, "", dtype=object)
    out = []
    for line in data.split(b"\n"):
        body, _, comment = line.partition(b"#")
        if body.strip():
            out.append(comment.strip().decode("utf-8", "replace"))
    return np.array(out, dtype=object)


def _read_one(path: Path):
    from sklearn.datasets import load_svmlight_file
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SvmlightError(f"{path} is a directory, not an svmlight file") from None
    try:
        X, y, q = load_svmlight_file(__import__("io").BytesIO(data), query_id=True, zero_based=False,
                                     dtype=np.float64)
    except (ValueError, UnicodeDecodeError):
        raise SvmlightError(_explain(path, data)) from None
    if len(q) != len(y):          # scikit-learn silently skips lines without qid
        raise SvmlightError(_explain(path, data))
    if X.nnz and not np.isfinite(X.data).all() or not np.isfinite(y).all():
        raise SvmlightError(_explain(path, data))
    comments = _comments(data, len(y))
    if len(comments) != len(y):
        raise SvmlightError(f"{path}: could not match comments to lines ({len(comments)} vs {len(y)})")
    return X, y, q, comments


def read_svmlight(paths: Union[str, Path, Sequence[Union[str, Path]]],
                  n_features: Optional[int] = None) -> RankingData:
    """Read one or more svmlight/LETOR ranking files (or index files listing them), in order.

    ``n_features`` fixes the width: lines using a larger index are an error, a file using fewer
    gets zero columns (svmlight: absent = 0). Raises :class:`SvmlightError` (a ValueError) with
    ``file:line`` for bad input, FileNotFoundError for a missing file.
    """
    import scipy.sparse as sp
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files: List[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found")
        members = index_file_members(p) if p.is_file() else None
        files.extend(members if members is not None else [p])
    parts = [_read_one(f) for f in files]
    width = max((X.shape[1] for X, *_ in parts), default=0)
    if n_features is not None:
        if width > n_features:
            f = next(f for f, (X, *_) in zip(files, parts) if X.shape[1] > n_features)
            raise SvmlightError(f"{f}: uses feature index {width} but the model has {n_features} features "
                                "(trained on data of another width?)")
        width = n_features
    Xs = [sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width)) for X, *_ in parts]
    n = sum(X.shape[0] for X in Xs)
    if n == 0:
        raise SvmlightError(f"{', '.join(map(str, files))}: no data lines (empty file?)")
    features = (sp.vstack(Xs, format="csr") if len(Xs) > 1 else Xs[0]).toarray()
    labels = np.concatenate([y for _, y, _, _ in parts])
    qids = np.concatenate([q for _, _, q, _ in parts]).astype(np.int64)
    comments = np.concatenate([c for *_, c in parts])
    docids = np.array([_docid(c, i) for i, c in enumerate(comments, 1)], dtype=object)
    # group by query, queries in order of first appearance, lines within a query in input order
    uniq, first, inverse = np.unique(qids, return_index=True, return_inverse=True)
    rank_of_query = np.empty(len(uniq), dtype=np.int64)
    rank_of_query[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    key = rank_of_query[inverse]
    order = np.argsort(key, kind="stable")
    sizes = np.bincount(key, minlength=len(uniq))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    query_ids = uniq[np.argsort(rank_of_query)]
    return RankingData(features=features, labels=labels, qids=qids, comments=comments, docids=docids,
                       order=order, offsets=offsets, query_ids=query_ids, sources=[str(f) for f in files])


def _docid(comment: str, line_no: int) -> str:
    if comment:
        m = _DOCID.search(comment)
        if m:
            return m.group(1)
        return comment.split()[0]
    return str(line_no)
