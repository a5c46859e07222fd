"""TREC run and qrels files from svmlight/LETOR data (for trec_eval and ir_measures)."""
from __future__ import annotations

import numpy as np

from pyterrier_svmmap.io.svmlight import RankingData, SvmlightError
from pyterrier_svmmap.measures import ranks_within_queries


def check_docids(data: RankingData, option: str) -> None:
    """:class:`SvmlightError` naming the first line without a docid, or with one twice in its query."""
    missing = np.flatnonzero(data.comments == "")
    if len(missing):
        raise SvmlightError(f"{data.where(int(missing[0]))}: no '#docid = X' comment; {option} names each document "
                            f"by its line's docid: add '#docid = X' to every line ({len(missing)} lines lack it)")
    grouped = data.grouped(data.docids)
    for q in range(len(data.offsets) - 1):
        lo, hi = data.offsets[q], data.offsets[q + 1]
        names, counts = np.unique(grouped[lo:hi].astype(str), return_counts=True)
        if (counts > 1).any():
            twice = int(np.flatnonzero(counts > 1)[0])
            line = int(data.order[lo + np.flatnonzero(grouped[lo:hi] == names[twice])[1]])
            raise SvmlightError(f"{data.where(line)}: docid {names[twice]} is in qid {data.query_ids[q]} twice; "
                                f"{option} names each document once per query: make the docids unique")


def run_text(data: RankingData, scores: np.ndarray, name: str) -> str:
    """The TREC run of ``scores`` (input order, no ties), queries by first appearance, ranks from 1."""
    grouped = data.grouped(np.asarray(scores, dtype=float))
    order, rank = ranks_within_queries(grouped, data.offsets)
    docids = data.grouped(data.docids)
    qids = np.repeat(data.query_ids, np.diff(data.offsets))
    return "".join(f"{qids[i]} Q0 {docids[i]} {rank[i] + 1} {float(grouped[i])!r} {name}\n" for i in order)


def qrels_text(data: RankingData) -> str:
    """The TREC qrels of ``data``'s labels, a line per data line."""
    return "".join(f"{q} 0 {d} {float(y):g}\n" for q, d, y in zip(data.qids.tolist(), data.docids, data.labels))
