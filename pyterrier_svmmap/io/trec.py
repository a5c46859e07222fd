"""TREC run and qrels files from svmlight/LETOR data, so that trec_eval and ``ir_measures QRELS RUN`` evaluate
``svmmap classify``'s scores: a run line ``qid Q0 docno rank score name`` per candidate, a qrels line
``qid 0 docno label`` per candidate, the qid from ``qid:Q`` and the docno from the line's comment
(``#docid = X``, LETOR's, or the comment's first word).
"""
from __future__ import annotations

from typing import List

import numpy as np

from pyterrier_svmmap.io.svmlight import RankingData, SvmlightError
from pyterrier_svmmap.measures import ranks_within_queries


def check_docids(data: RankingData, option: str) -> None:
    """Refuse data whose lines cannot name their documents in a TREC file: a line without a comment (its
    docid would be its line number), or a docid twice in one query.

    Parameters
    ----------
    data : RankingData
        The lines read.
    option : str
        The option that needs the docids, for the message (e.g. ``"--trec"``).

    Raises
    ------
    SvmlightError
        Naming the first such line (``file:line``).
    """
    missing = np.flatnonzero(data.comments == "")
    if len(missing):
        raise SvmlightError(f"{data.where(int(missing[0]))}: no '#docid = X' comment; {option} names each document "
                            f"by its line's docid: add '#docid = X' to every line ({len(missing)} lines lack it)")
    grouped = data.grouped(data.docids)
    for q in range(len(data.offsets) - 1):
        lo, hi = data.offsets[q], data.offsets[q + 1]
        names, first, counts = np.unique(grouped[lo:hi].astype(str), return_index=True, return_counts=True)
        if (counts > 1).any():
            twice = int(np.flatnonzero(counts > 1)[0])
            line = int(data.order[lo + np.flatnonzero(grouped[lo:hi] == names[twice])[1]])
            raise SvmlightError(f"{data.where(line)}: docid {names[twice]} is in qid {data.query_ids[q]} twice; "
                                f"{option} names each document once per query: make the docids unique")


def run_text(data: RankingData, scores: np.ndarray, name: str) -> str:
    """The TREC run of ``scores`` (one per line of ``data``, in input order): queries in the order they first
    appear, each by decreasing score, ranks from 1.

    Parameters
    ----------
    data : RankingData
        The lines scored, with docids (:func:`check_docids`).
    scores : numpy.ndarray
        (n,) the scores, in input order, without ties (``svmmap classify``'s).
    name : str
        The run's name (the last column).

    Returns
    -------
    str
        The run file's text.
    """
    grouped = data.grouped(np.asarray(scores, dtype=float))
    order, rank = ranks_within_queries(grouped, data.offsets)
    docids = data.grouped(data.docids)
    qids = np.repeat(data.query_ids, np.diff(data.offsets))
    lines: List[str] = [f"{qids[i]} Q0 {docids[i]} {rank[i] + 1} {float(grouped[i])!r} {name}\n" for i in order]
    return "".join(lines)


def qrels_text(data: RankingData) -> str:
    """The TREC qrels of ``data``'s labels: a line ``qid 0 docno label`` per line of ``data``, in input order.

    Parameters
    ----------
    data : RankingData
        The lines, with docids (:func:`check_docids`).

    Returns
    -------
    str
        The qrels file's text.
    """
    return "".join(f"{q} 0 {d} {float(y):g}\n" for q, d, y in zip(data.qids.tolist(), data.docids, data.labels))
