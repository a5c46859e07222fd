"""Reading svmlight / LETOR ranking files or index files listing them (docs/cli.md#file-formats), refusing before
allocation a feature index above the width bound and a dense matrix larger than free memory. The parser: numba's
for lines it can prove correctly rounded, else Python's line by line, which judges validity (:class:`BadLine`); the
same bits either way."""
from __future__ import annotations

import contextlib
import math
import re
import sys
import warnings
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Union

import numpy as np

from pyterrier_svmmap._jit import load
from pyterrier_svmmap.queries import Queries


class SvmlightError(ValueError):
    """A file that is not valid svmlight/LETOR ranking data (the message names file:line)."""


class FeatureIndexTooLarge(SvmlightError):
    """A line (``where``) uses a feature ``index`` above the bound ``limit``."""

    def __init__(self, where: str, index: float, limit: int):
        self.where, self.index, self.limit = where, index, limit
        super().__init__(self.message("raise read_svmlight(max_features=...)"))

    def message(self, remedy: Optional[str]) -> str:
        """The error as one line, ending with ``remedy`` (how to raise the bound, if any)."""
        return (f"{self.where}: feature index {_shown(self.index)} is above the limit of {self.limit:,} features "
                "(the learners need a dense lines × features matrix with a column for every index up to the largest); "
                f"renumber the features consecutively from 1{', or ' + remedy if remedy else ''}")


def _shown(index) -> str:
    return str(int(index)) if float(index) < 2 ** 53 else f"{float(index):.6g}"


#: the default largest feature index: about 140 times the widest LETOR collection's
MAX_FEATURES = 100_000


@dataclass(frozen=True)
class Width:
    """The largest feature index a read accepts: a model's width, or the bound."""
    limit: int
    model: bool

    def error(self, where: str, index) -> SvmlightError:
        if not self.model:
            return FeatureIndexTooLarge(where, index, self.limit)
        return SvmlightError(f"{where}: uses feature index {_shown(index)} but the model has {self.limit} features "
                             "(trained on data of another width?)")


@dataclass
class RankingData:
    """The lines of svmlight files in input order: ``features`` (n, F; 0 where omitted), ``labels``, ``qids``,
    ``comments`` and ``docids`` (or None), the ``order``, ``offsets`` and ``query_ids`` grouping them by query,
    and where each line comes from (``sources``, ``source_lines``, ``line_numbers``)."""
    features: np.ndarray
    labels: np.ndarray
    qids: np.ndarray
    comments: Optional[np.ndarray]
    docids: Optional[np.ndarray]
    order: Optional[np.ndarray]
    offsets: np.ndarray
    query_ids: np.ndarray
    sources: List[str]
    source_lines: Optional[List[int]] = None
    line_numbers: Optional[np.ndarray] = None

    def where(self, line: int) -> str:
        """``file:line`` of data line ``line`` (0-based, input order), or ``line N`` when not recorded."""
        if self.source_lines is None or self.line_numbers is None:
            return f"line {line + 1}"
        source = int(np.searchsorted(np.cumsum(self.source_lines), line, side="right"))
        return f"{self.sources[source]}:{int(self.line_numbers[line])}"

    @property
    def n_lines(self) -> int:
        return len(self.labels)

    def queries_per_source(self) -> Optional[np.ndarray]:
        """How many grouped queries each source holds, when every query is in one source; else None."""
        if self.source_lines is None or len(self.source_lines) < 2 or len(self.offsets) < 2:
            return None
        source = self.grouped(np.repeat(np.arange(len(self.source_lines)), self.source_lines))
        first = np.minimum.reduceat(source, self.offsets[:-1])
        if (first != np.maximum.reduceat(source, self.offsets[:-1])).any():
            return None
        return np.bincount(first, minlength=len(self.source_lines))

    @property
    def n_features(self) -> int:
        return self.features.shape[1]

    def grouped(self, values: np.ndarray) -> np.ndarray:
        if values is None or self.order is None:
            return values
        return np.asarray(values)[self.order]

    def queries(self, n_features: Optional[int] = None) -> Queries:
        """The lines as :class:`~pyterrier_svmmap.queries.Queries` grouped by query, ``n_features`` columns at least."""
        q = Queries(self.grouped(self.features), np.asarray(self.grouped(self.labels), dtype=float), self.offsets,
                    self.query_ids.astype(str), None, self.grouped(self.docids))
        return q if n_features is None else q.widened(n_features)

    def ungroup(self, values: np.ndarray) -> np.ndarray:
        if self.order is None:
            return values
        out = np.empty_like(np.asarray(values))
        out[self.order] = values
        return out


_DOCID = re.compile(r"docid\s*=\s*(\S+)")
#: a token only svmlight data has: ``qid:<id>`` or ``<index>:<value>`` (a path never starts with a digit and a colon)
_DATA_TOKEN = re.compile(r"^(qid:|\d+:)")

#: the UTF-8 byte-order mark some editors write at the start of a text file; read as if absent
BOM = b"\xef\xbb\xbf"


def _is_data_line(text: str) -> bool:
    """Whether a line (neither blank nor a comment) is svmlight data rather than an index file's path."""
    tok = text.split("#", 1)[0].split()
    try:
        float(tok[0])
        return True
    except ValueError:
        return any(_DATA_TOKEN.match(t) for t in tok[1:])


def _listed(text: bytes, n_lines: Optional[int] = None) -> List[str]:
    """The first ``n_lines`` lines of ``text`` stripped, less blank and comment lines."""
    lines = [ln.strip() for ln in text.removeprefix(BOM).decode("utf-8", "replace").splitlines()[:n_lines]]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def index_file_members(path: Path) -> Optional[List[Path]]:
    """The data files an index file lists, or None when ``path`` is a data file itself."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"\0" in head:
        raise SvmlightError(f"{path}: a binary file, not svmlight text")
    lines = _listed(head, 20)
    if not lines or _is_data_line(lines[0]):
        return None
    members = []
    for ln in _listed(Path(path).read_bytes()):
        p = Path(path).parent / ln                       # an absolute ln as it is
        if not p.is_file():
            raise SvmlightError(f"{path}: neither svmlight data (line starts with {ln.split()[0]!r}, "
                                f"expected a label) nor an index file (listed file {p} not found)")
        members.append(p)
    return members


def _number(token: bytes, kind=float):
    """``kind(token)`` without Python's digit-group underscores."""
    if b"_" in token:
        raise ValueError(token)
    return kind(token)


def _line_problem(path: Path, line: bytes, where: str, width: Width) -> Union[str, SvmlightError]:
    """A data line's first fault, token by token."""
    tok = line.split(b"#", 1)[0].split()
    try:
        _number(tok[0])
    except ValueError:
        return f"{where}: expected a numeric label first, found {tok[0][:30].decode(errors='replace')!r}"
    if len(tok) < 2 or not tok[1].startswith(b"qid:"):
        groups = [g for g in (Path(f"{path}.query"), Path(path).with_suffix(".query")) if g.is_file()]
        hint = (f"; {groups[0]} looks like a LightGBM-style group file, which is not read: put the query id "
                "on each line as 'qid:<id>'") if groups else ""
        return f"{where}: expected 'qid:<integer>' after the label (every line needs its query id){hint}"
    try:
        _number(tok[1][4:], int)
    except ValueError:
        return f"{where}: expected an integer query id, found {tok[1][:30].decode(errors='replace')!r}"
    last = 0
    for t in tok[2:]:
        idx, sep, val = t.partition(b":")
        try:
            i, v = _number(idx, int), _number(val)
        except ValueError:
            sep = b""
        if not sep:
            return f"{where}: expected 'index:value' pairs, found {t[:30].decode(errors='replace')!r}"
        if i <= 0:
            return f"{where}: feature index {i}: indices start at 1"
        if i <= last:
            return f"{where}: feature index {i} after {last}: indices must be strictly increasing"
        if i > width.limit:
            return width.error(where, i)
        if not math.isfinite(v):
            return f"{where}: feature {i} is {val.decode()}: values must be finite numbers"
        last = i
    if not math.isfinite(float(tok[0])):
        return f"{where}: label {tok[0].decode()} is not a finite number"
    return f"{where}: not valid svmlight ranking data"


class BadLine(Exception):
    """A refused line (0-based in the chunk) and, when its only fault is a feature index above the limit, ``index``."""

    def __init__(self, line: int, index: Optional[float] = None):
        super().__init__(line, index)
        self.line, self.index = line, index


def parse_chunk(data: bytes, limit: int, comments: bool = True, compiled: bool = True):
    """The numbers of the data lines of ``data`` and their 0-based line numbers; None without data lines."""
    if not compiled:
        return _parse_lines(data, limit, comments)
    k = load("io._svmlight_kernels")
    status, labels, qids, n_pairs, idx, val, hash_pos, line_end, line_no = \
        k.parse_lines(np.frombuffer(data, dtype=np.uint8), limit, k._POW10)
    if status:
        return _parse_lines(data, limit, comments)
    if len(labels) == 0:
        return None
    text = None
    if comments:
        rows = np.flatnonzero(hash_pos >= 0)
        text = np.full(len(labels), "", dtype=object)
        for r, p, e in zip(rows.tolist(), hash_pos[rows].tolist(), line_end[rows].tolist()):
            text[r] = data[p + 1:e].strip().decode("utf-8", "replace")
    return labels, qids, n_pairs, idx, val, text, line_no


def _parse_lines(data: bytes, limit: int, comments: bool = True):
    """:func:`parse_chunk` line by line with ``float()``, the judge of what is valid: finite numbers, integer qids and
    indices, indices from 1, increasing and ≤ ``limit``."""
    rows, counts, flat, text, bad = [], [], array("d"), [], None
    for no, line in enumerate(data.split(b"\n")):
        body, _, comment = line.partition(b"#")
        tok = body.split()
        if not tok:
            continue
        numbers = body.replace(b"qid:", b" ", 1).replace(b":", b" ").split()
        try:
            if not (len(tok) > 1 and tok[1][:4] == b"qid:" and body.count(b"qid:") == 1 and b"_" not in body
                    and body.count(b":") == len(tok) - 1 and len(numbers) == 2 * len(tok) - 2):
                raise ValueError(no)
            flat.extend(map(float, numbers))
        except ValueError:
            bad = no
            break
        rows.append(no)
        counts.append(len(tok) - 2)
        if comments:
            text.append(comment.strip().decode("utf-8", "replace"))
    if not rows:
        if bad is None:
            return None
        raise BadLine(bad)
    n_pairs = np.array(counts, dtype=np.int64)
    starts = np.cumsum(2 + 2 * n_pairs) - (2 + 2 * n_pairs)
    values = np.frombuffer(flat)[:starts[-1] + 2 + 2 * n_pairs[-1]]      # a line that failed may have added some
    labels, qids = values[starts], values[starts + 1]
    pair = np.ones(len(values), dtype=bool)
    pair[starts] = pair[starts + 1] = False
    pairs = values[pair]
    idx, val = pairs[0::2], pairs[1::2]
    row = np.repeat(np.arange(len(rows)), n_pairs)
    wrong = ~np.isfinite(labels) | ~np.isfinite(qids) | (qids != np.round(qids))
    wrong_pair = (idx != np.round(idx)) | (idx < 1) | ~np.isfinite(val)
    wrong_pair[1:] |= (np.diff(idx) <= 0) & (row[1:] == row[:-1])
    wrong[row[wrong_pair]] = True
    over = idx > limit          # an index may be +inf
    faulty = np.flatnonzero(wrong | np.isin(np.arange(len(rows)), row[over]))
    if len(faulty):
        r = faulty[0]
        raise BadLine(rows[r], None if wrong[r] else float(idx[over & (row == r)][0]))
    if bad is not None:
        raise BadLine(bad)
    return (labels, qids.astype(np.int64), n_pairs, idx.astype(np.int64), val,
            np.array(text, dtype=object) if comments else None, np.array(rows, dtype=np.int64))


_CHUNK = 1 << 26     # parse 64 MB at a time (bounded memory)


def file_chunks(path: Path, chunk_bytes: int = _CHUNK):
    """``(bytes, line)`` pieces of about ``chunk_bytes`` of whole lines, ``line`` the first one's number."""
    try:
        f = open(path, "rb")
    except IsADirectoryError:
        raise SvmlightError(f"{path} is a directory, not an svmlight file") from None
    with f:
        rest, line, piece = b"", 1, f.read(chunk_bytes).removeprefix(BOM)
        while piece:
            data = rest + piece
            cut = data.rfind(b"\n") + 1
            if cut:
                yield data[:cut], line
                line += data.count(b"\n", 0, cut)
            rest, piece = data[cut:], f.read(chunk_bytes)
        if rest:
            yield rest, line


def estimated_read_bytes(files: Sequence[Path], sample_bytes: int = 1 << 18) -> Optional[int]:
    """About the memory :func:`read_svmlight` takes for ``files``, from samples; None for a malformed sample."""
    lines = pairs = width = 0.0
    for path in files:
        chunk, _ = next(file_chunks(path, sample_bytes), (b"", 1))
        try:
            parsed = parse_chunk(chunk, MAX_FEATURES, comments=False, compiled=use_compiled_parser(len(chunk)))
        except BadLine:
            return None
        if parsed is None:
            continue
        scale = Path(path).stat().st_size / len(chunk)
        lines += len(parsed[0]) * scale
        pairs += len(parsed[3]) * scale
        width = max(width, float(parsed[3].max()) if len(parsed[3]) else 0.0)
    return int(8 * lines * width + 32 * pairs + 250 * lines)


#: data from which a read loads numba for the compiled parser (~1 s, what the line-by-line reader takes for 10 MB)
COMPILED_FROM_BYTES = 1 << 25


def use_compiled_parser(n_bytes: int) -> bool:
    """Whether to parse ``n_bytes`` with numba's parser (loaded already, or enough data to pay its start-up)."""
    return "numba" in sys.modules or n_bytes >= COMPILED_FROM_BYTES


def parsed_chunks(path: Path, width: Width, chunk_bytes: int = _CHUNK, comments: bool = True,
                  compiled: bool = True):
    """:func:`parse_chunk`'s results for a data file's chunks, line numbers from 1 in the file; SvmlightError names
    file:line."""
    for chunk, first_line in file_chunks(path, chunk_bytes):
        try:
            r = parse_chunk(chunk, width.limit, comments, compiled)
        except BadLine as e:
            where = f"{path}:{first_line + e.line}"
            problem = width.error(where, e.index) if e.index is not None else \
                _line_problem(path, chunk.split(b"\n")[e.line], where, width)
            raise (problem if isinstance(problem, SvmlightError) else SvmlightError(problem)) from None
        if r is not None:
            yield r[:6] + (r[6] + first_line,)


def available_memory() -> Optional[int]:
    """Bytes this process can still allocate, or None."""
    avail = None
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as f:
        avail = next((int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable:")), None)
    with contextlib.suppress(ImportError, OSError, ValueError, StopIteration):
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/status") as f:
                used = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))
            avail = soft - used if avail is None else min(avail, soft - used)
    return avail


def _check_memory(files: List[Path], source_lines: List[int], lines: np.ndarray, n_pairs: np.ndarray,
                  idx: np.ndarray, n_features: Optional[int]) -> int:
    """F, the dense matrix's width; refused when larger than the memory available, naming the first line using F."""
    width = int(idx.max()) if len(idx) else 0
    F, n = width if n_features is None else max(width, n_features), len(lines)
    need = 8 * n * F
    avail = available_memory()
    if avail is None or need <= avail:
        return F
    if F == width and width > 0:
        row = int(np.searchsorted(np.cumsum(n_pairs), np.flatnonzero(idx == width)[0], side="right"))
        file = int(np.searchsorted(np.cumsum(source_lines), row, side="right"))
        where, why = f"{files[file]}:{int(lines[row])}", f"feature index {width} makes"
    else:
        where, why = ", ".join(map(str, files)), f"the model's {F} features make"
    raise SvmlightError(f"{where}: {why} the dense features matrix {n:,} lines × {F:,} features = "
                        f"{need / 2**30:.3g} GiB, more than the {max(avail, 0) / 2**30:.3g} GiB of memory available; "
                        "renumber the features consecutively from 1 if the indices are sparse, or read fewer lines")


#: the values of read_svmlight's ``parser`` (and ``"numpy"``, the deprecated name of ``"python"``)
PARSERS = ("auto", "compiled", "python")


def read_svmlight(paths: Union[str, Path, Sequence[Union[str, Path]]],
                  n_features: Optional[int] = None, max_features: int = MAX_FEATURES,
                  parser: str = "auto") -> RankingData:
    """Read svmlight/LETOR ranking files (or index files listing them), in order: ``n_features`` fixes the width,
    else ``max_features`` bounds it; ``parser`` is ``"compiled"``, ``"python"`` or ``"auto"`` (the same values)."""
    if parser == "numpy":
        warnings.warn('read_svmlight(parser="numpy") is deprecated: the numba-free reader is parser="python"',
                      DeprecationWarning, stacklevel=2)
        parser = "python"
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {', '.join(PARSERS)}, got {parser!r}")
    width_rule = check_width_arguments(n_features, max_features)
    files = data_files(paths)
    compiled = parser == "compiled" or parser == "auto" and use_compiled_parser(sum(f.stat().st_size for f in files))
    per_file = [list(parsed_chunks(f, width_rule, compiled=compiled)) for f in files]   # no index above the limit
    chunks = [c for parsed in per_file for c in parsed]
    source_lines = [sum(len(c[0]) for c in parsed) for parsed in per_file]
    if not chunks:
        raise SvmlightError(f"{', '.join(map(str, files))}: no data lines (empty file?)")
    labels, qids, n_pairs, idx, val, comments, lines = (np.concatenate([c[i] for c in chunks]) for i in range(7))
    # the first line of every run of equal qids (a file's end ends a run)
    ends = np.cumsum(source_lines, dtype=np.int64)
    starts = np.union1d(np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]), ends[:-1][ends[:-1] < len(qids)])
    check_queries_in_one_file(files, qids[starts], np.searchsorted(ends, starts, side="right"), lines[starts])
    n = len(labels)
    features = np.zeros((n, _check_memory(files, source_lines, lines, n_pairs, idx, n_features)))
    features[np.repeat(np.arange(n), n_pairs), idx - 1] = val
    docids = np.array([_docid(c, i) for i, c in enumerate(comments, 1)], dtype=object)
    order, offsets, query_ids = group_by_query(qids)
    return RankingData(features=features, labels=labels, qids=qids, comments=comments, docids=docids,
                       order=order, offsets=offsets, query_ids=query_ids, sources=[str(f) for f in files],
                       source_lines=source_lines, line_numbers=lines)


def data_files(paths: Union[str, Path, Sequence[Union[str, Path]]]) -> List[Path]:
    """The data files ``paths`` name, index files replaced by the files they list."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files: List[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found")
        members = index_file_members(p) if p.is_file() else None
        files.extend(members if members is not None else [p])
    return files


def check_width_arguments(n_features, max_features) -> Width:
    """The width rule of a read, a model's ``n_features`` or the ``max_features`` bound."""
    for name, value in (("n_features", n_features), ("max_features", max_features)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0):
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return Width(int(n_features), True) if n_features is not None else Width(int(max_features), False)


def check_queries_in_one_file(files: List[Path], qid: np.ndarray, file: np.ndarray, line: np.ndarray) -> None:
    """Refuse a qid in two of the files read together (they would merge), given the runs of equal qids."""
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    earlier = first[inverse]                                # the first run of each run's qid
    again = np.flatnonzero(file != file[earlier])
    if len(again) == 0:
        return
    k, e = int(again[0]), int(earlier[again[0]])
    i, j = int(file[k]), int(file[e])
    shared = len(np.intersect1d(qid[file == j], qid[file == i]))
    raise SvmlightError(
        f"qid {int(qid[k])} is in {files[j]} (line {int(line[e])}) and in {files[i]} (line {int(line[k])}); "
        f"{shared} qids are in both: files read together are one set of queries, and a query's lines must all be "
        "in one file (else the two would be merged into one query with the candidates of both): make the qids "
        "unique across the files, and give each query once (two folds' training files share queries)")


def group_by_query(qids: np.ndarray, lengths: Optional[np.ndarray] = None):
    """(order, offsets, query_ids) grouping lines by query, queries in order of first appearance."""
    uniq, first, inverse = np.unique(qids, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    key = rank[inverse] if lengths is None else np.repeat(rank[inverse], lengths)
    sizes = np.bincount(key, minlength=len(uniq))
    return np.argsort(key, kind="stable"), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), \
        uniq[np.argsort(rank)]


def _docid(comment: str, line_no: int) -> str:
    m = _DOCID.search(comment)
    return m.group(1) if m else comment.split()[0] if comment else str(line_no)
