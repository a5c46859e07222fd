"""``svmmap classify --trec --qrels``: a TREC run and qrels that ir_measures evaluates to the package's own AP."""
from __future__ import annotations

import ir_measures
import numpy as np
import pytest

from pyterrier_svmmap.cli import main
from pyterrier_svmmap.io.svmlight import read_svmlight
from pyterrier_svmmap.measures import letor_average_precision


@pytest.fixture(params=["examples", "mq2008"])
def train_test(request):
    """(train, test): the examples' two files, or MQ2008's Fold1 (skipped when the shared folds are absent)."""
    if request.param == "examples":
        return request.getfixturevalue("letor_example_files")
    fold = request.getfixturevalue("mq2008_fold1")
    return fold / "train.txt", fold / "test.txt"


def test_trec_run_evaluates_with_ir_measures_to_the_package_map(tmp_path, train_test):
    train, test = train_test
    model, run, qrels, plain = tmp_path / "m", tmp_path / "out" / "run", tmp_path / "out" / "qrels", tmp_path / "p"
    assert main(["learn", "-c", "1", str(train), str(model)]) == 0
    assert main(["classify", "--trec", "--run-name", "mine", "--qrels", str(qrels), str(test), str(model), str(run)]) == 0
    assert main(["classify", str(test), str(model), str(plain)]) == 0
    data = read_svmlight(test)
    scores = data.grouped(np.loadtxt(plain))                 # the plain predictions, by query
    lines = [ln.split() for ln in run.read_text().splitlines()]
    assert len(lines) == data.n_lines and {ln[1] for ln in lines} == {"Q0"} and {ln[5] for ln in lines} == {"mine"}
    by_query = {}
    for qid, _, docno, rank, score, _ in lines:
        by_query.setdefault(qid, []).append((int(rank), float(score), docno))
    assert list(by_query) == [str(q) for q in data.query_ids]         # queries in the file's order
    for q, rows in by_query.items():
        assert [r for r, _, _ in rows] == list(range(1, len(rows) + 1))
        assert all(a[1] > b[1] for a, b in zip(rows, rows[1:]))       # by decreasing score, no ties
    ap = letor_average_precision(scores, data.grouped(data.labels), data.offsets)
    measured = ir_measures.calc_aggregate([ir_measures.AP(rel=1)], ir_measures.read_trec_qrels(str(qrels)),
                                          ir_measures.read_trec_run(str(run)))[ir_measures.AP(rel=1)]
    assert measured == pytest.approx(ap.mean(), abs=1e-12)      # LETOR's MAP: a query without a relevant is 0
    assert qrels.read_text().splitlines()[0] == f"{data.qids[0]} 0 {data.docids[0]} {data.labels[0]:g}"
