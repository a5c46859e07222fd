"""read_svmlight_mapped reads what read_svmlight reads — the same rows grouped by query, the same labels, qids,
line numbers, offsets, query ids and errors — with the features in a memory map, whatever the chunk size."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap.io.svmlight import SvmlightError, read_svmlight
from pyterrier_svmmap.io.svmlight_mapped import read_svmlight_mapped


def write_lines(path, rng, n_queries=6, per_query=7, width=5, grouped=True, sparse=False, start_qid=1):
    lines = []
    for q in range(n_queries):
        for d in range(per_query):
            cols = np.arange(1, width + 1)
            if sparse:
                cols = np.sort(rng.choice(cols, size=int(rng.integers(0, width + 1)), replace=False))
            pairs = " ".join(f"{c}:{rng.standard_normal():.5g}" for c in cols)
            lines.append(f"{int(rng.random() < 0.3)} qid:{start_qid + q} {pairs} #docid = d{q}-{d}\n")
    if not grouped:
        lines = [lines[i] for i in rng.permutation(len(lines))]
    path.write_text("".join(lines))
    return path


def assert_same_as_in_memory(files, folder, **kw):
    a = read_svmlight(files, **{k: v for k, v in kw.items() if k != "chunk_bytes"})
    b = read_svmlight_mapped(files, folder, **kw)
    assert b.order is None and b.comments is None and b.docids is None
    assert b.features.dtype == np.float64 and b.features.shape == a.features.shape
    assert np.array_equal(a.grouped(a.features), b.features)
    for name in ("labels", "qids", "line_numbers"):
        assert np.array_equal(a.grouped(getattr(a, name)), getattr(b, name)), name
    assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.query_ids, b.query_ids)
    assert a.sources == b.sources and a.source_lines == b.source_lines
    assert [b.where(i) for i in range(b.n_lines)] == [a.where(int(i)) for i in a.grouped(np.arange(a.n_lines))]
    return b


@pytest.mark.parametrize("chunk_bytes", [1, 97, 1 << 26])
@pytest.mark.parametrize("grouped", [True, False])
def test_the_same_data_as_in_memory(tmp_path, chunk_bytes, grouped):
    rng = np.random.default_rng(chunk_bytes)
    f = write_lines(tmp_path / "a.txt", rng, grouped=grouped, sparse=True)
    (tmp_path / "m").mkdir()
    b = assert_same_as_in_memory([f], tmp_path / "m", chunk_bytes=chunk_bytes)
    assert isinstance(b.features, np.memmap)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == \
        ["features.f8" if grouped else "grouped.f8", "labels.f8", "lines.i8", "qids.i8"]


def test_several_files_an_index_file_and_a_growing_width(tmp_path):
    """The width grows in a later chunk and a later file (the map is rewritten wider); a query's lines run
    across chunk boundaries; an index file lists the files."""
    rng = np.random.default_rng(3)
    a = write_lines(tmp_path / "a.txt", rng, width=2)
    b = write_lines(tmp_path / "b.txt", rng, width=9, start_qid=100, grouped=False)
    index = tmp_path / "train.idx"
    index.write_text("a.txt\nb.txt\n")
    for chunk in (50, 300, 1 << 20):
        folder = tmp_path / f"m{chunk}"
        folder.mkdir()
        got = assert_same_as_in_memory([index], folder, chunk_bytes=chunk)
        assert got.n_features == 9 and got.queries_per_source().tolist() == [6, 6]


def test_a_byte_order_mark_is_read_as_if_absent(tmp_path):
    f = write_lines(tmp_path / "a.txt", np.random.default_rng(4))
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    (tmp_path / "m").mkdir()
    assert_same_as_in_memory([f], tmp_path / "m", chunk_bytes=64)


def test_a_models_width_pads_with_zero_columns(tmp_path):
    f = write_lines(tmp_path / "a.txt", np.random.default_rng(0), width=3)
    (tmp_path / "m").mkdir()
    got = assert_same_as_in_memory([f], tmp_path / "m", n_features=8)
    assert got.features.shape[1] == 8 and not got.features[:, 3:].any()


def test_the_same_errors_as_in_memory(tmp_path):
    rng = np.random.default_rng(1)
    good = write_lines(tmp_path / "good.txt", rng, n_queries=30)
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text() + "1 qid:1 1:0.5 2:zz\n")
    dup = write_lines(tmp_path / "dup.txt", rng, start_qid=20)
    wide = tmp_path / "wide.txt"
    wide.write_text(good.read_text() + "1 qid:1 7:1\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    cases = [([bad], {}), ([good, dup], {}), ([empty], {}), ([wide], {"max_features": 6}),
             ([wide], {"n_features": 5}), ([tmp_path], {})]
    for i, (files, kw) in enumerate(cases):
        with pytest.raises(SvmlightError) as expected:
            read_svmlight(files, **kw)
        (tmp_path / f"m{i}").mkdir()
        with pytest.raises(SvmlightError) as got:
            read_svmlight_mapped(files, tmp_path / f"m{i}", chunk_bytes=64, **kw)
        assert str(got.value) == str(expected.value)


def test_a_bad_line_in_a_later_chunk_is_named_by_its_file_line(tmp_path):
    rng = np.random.default_rng(2)
    good = write_lines(tmp_path / "good.txt", rng, n_queries=30)
    n = len(good.read_text().splitlines())
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text() + "1 qid:1 1:0.5 2:zz\n")
    (tmp_path / "m").mkdir()
    with pytest.raises(SvmlightError, match=f"^{bad}:{n + 1}: expected 'index:value' pairs"):
        read_svmlight_mapped([bad], tmp_path / "m", chunk_bytes=100)
