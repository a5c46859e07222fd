"""The svmlight reader's width bound: a huge feature index (``1000000000:0.3``) is rejected with file:line
before the dense matrix is allocated, never by exhausting memory; indices up to the bound, the model's
``n_features`` padding and the format's old rules (absent = 0, increasing indices) are unchanged."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyterrier_svmmap.io.svmlight as svmlight
from pyterrier_svmmap.io.svmlight import MAX_FEATURES, SvmlightError, read_svmlight

HUGE = "1 qid:1 1:0.5 2:1\n# a comment line\n\n0 qid:1 2:1 1000000000:0.3\n1 qid:2 1:1\n"


def write(tmp_path, text, name="f.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture
def no_big_alloc(monkeypatch):
    """Fail (instead of allocating) on any numpy array of more than 10 M elements made by zeros/empty/full."""
    def guard(real):
        def alloc(shape, *args, **kwargs):
            assert np.prod(shape, dtype=float) <= 1e7, f"allocated an array of shape {shape}"
            return real(shape, *args, **kwargs)
        return alloc
    for name in ("zeros", "empty", "full"):
        monkeypatch.setattr(np, name, guard(getattr(np, name)))


# ---------------------------------------------------------------- the huge index
def test_huge_index_rejected_with_file_line_before_allocating(tmp_path, no_big_alloc):
    p = write(tmp_path, HUGE)
    with pytest.raises(SvmlightError) as e:
        read_svmlight(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:4: feature index 1000000000 is above the limit of 100,000 features")
    assert "renumber the features" in msg and "\n" not in msg


def test_huge_index_rejected_under_a_memory_cap(tmp_path):
    """In a subprocess whose address space is capped ~0.5 GB above what it uses: the old reader's
    3 × 10⁹ dense matrix (24 GB) cannot be allocated there, the error must come first."""
    p = write(tmp_path, HUGE)
    code = textwrap.dedent(f"""
        import resource
        from pyterrier_svmmap.io.svmlight import SvmlightError, read_svmlight
        used = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (used + 2**29, resource.getrlimit(resource.RLIMIT_AS)[1]))
        try:
            read_svmlight({str(p)!r})
        except SvmlightError as e:
            print("REJECTED", e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith(f"REJECTED {p}:4: feature index 1000000000 is above the limit")


def test_index_beyond_int64_is_named_not_wrapped(tmp_path, no_big_alloc):
    p = write(tmp_path, "1 qid:1 1:1\n1 qid:1 1:1 100000000000000000000000000000:2\n")
    with pytest.raises(SvmlightError, match=r":2: feature index 1e\+29 is above the limit"):
        read_svmlight(p)


def test_bound_is_inclusive(tmp_path):
    d = read_svmlight(write(tmp_path, f"1 qid:1 1:0.5\n0 qid:1 {MAX_FEATURES}:0.3\n"))
    assert d.features.shape == (2, MAX_FEATURES)
    assert d.features[1, MAX_FEATURES - 1] == 0.3 and d.features[1, :-1].sum() == 0
    with pytest.raises(SvmlightError, match=f":2: feature index {MAX_FEATURES + 1} is above"):
        read_svmlight(write(tmp_path, f"1 qid:1 1:0.5\n0 qid:1 {MAX_FEATURES + 1}:0.3\n", "g.txt"))


def test_max_features_moves_the_bound(tmp_path):
    p = write(tmp_path, "1 qid:1 1:0.5\n0 qid:1 11:0.3\n")
    assert read_svmlight(p, max_features=11).features.shape == (2, 11)
    with pytest.raises(SvmlightError, match=":2: feature index 11 is above the limit of 10 features"):
        read_svmlight(p, max_features=10)


@pytest.mark.parametrize("bad", [-1, 2.5, "10", True])
def test_bound_arguments_are_checked(tmp_path, bad):
    p = write(tmp_path, "1 qid:1 1:0.5\n")
    for kw in ("n_features", "max_features"):
        with pytest.raises(ValueError, match=f"{kw} must be a non-negative integer"):
            read_svmlight(p, **{kw: bad})


def test_line_number_across_chunks_and_files(tmp_path, monkeypatch, no_big_alloc):
    """The fast parser reads 64 MB chunks; the line number must count the lines of earlier chunks."""
    monkeypatch.setattr(svmlight, "_CHUNK", 64)
    good = write(tmp_path, "".join(f"1 qid:{i // 5} 1:0.5 2:{i}\n" for i in range(30)), "good.txt")
    bad = write(tmp_path, "# head\n" + "".join(f"1 qid:1 1:{i}\n" for i in range(40)) + "0 qid:1 3:1 777777:1\n",
                "bad.txt")
    with pytest.raises(SvmlightError) as e:
        read_svmlight([good, bad])
    assert str(e.value).startswith(f"{bad}:42: feature index 777777 is above")


def test_first_bad_line_wins_when_another_line_is_malformed(tmp_path, no_big_alloc):
    """The slow line-by-line check (run when a line is malformed) applies the bound too, in line order."""
    p = write(tmp_path, "1 qid:1 1:0.5\n0 qid:1 1000000000:0.3\nx qid:1 1:2\n")
    with pytest.raises(SvmlightError, match=r"f\.txt:2: feature index 1000000000 is above the limit"):
        read_svmlight(p)
    p = write(tmp_path, "1 qid:1 1:0.5\nx qid:1 1:2\n0 qid:1 1000000000:0.3\n")
    with pytest.raises(SvmlightError, match=r"f\.txt:2: expected a numeric label"):
        read_svmlight(p)
    p = write(tmp_path, "0 qid:1 5:1 3:1 1000000000:0.3\n")
    with pytest.raises(SvmlightError, match=r"f\.txt:1: feature index 3 after 5"):
        read_svmlight(p)


# ---------------------------------------------------------------- memory
def test_matrix_larger_thanavailable_memory_is_refused(tmp_path, monkeypatch):
    p = write(tmp_path, "1 qid:1 1:0.5\n1 qid:1 2:0.5\n0 qid:1 100:0.3\n0 qid:1 100:0.4\n")
    monkeypatch.setattr(svmlight, "available_memory", lambda: 8 * 4 * 100 - 1)
    with pytest.raises(SvmlightError) as e:
        read_svmlight(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:3: feature index 100 makes the dense features matrix 4 lines × 100 features")
    assert "memory available" in msg and "renumber the features" in msg
    monkeypatch.setattr(svmlight, "available_memory", lambda: 8 * 4 * 100)      # exactly fits
    assert read_svmlight(p).features.shape == (4, 100)
    monkeypatch.setattr(svmlight, "available_memory", lambda: None)             # unknown: no check
    assert read_svmlight(p).features.shape == (4, 100)


def test_model_width_counts_for_memory(tmp_path, monkeypatch):
    p = write(tmp_path, "1 qid:1 1:0.5\n")
    monkeypatch.setattr(svmlight, "available_memory", lambda: 8 * 50)
    assert read_svmlight(p, n_features=50).features.shape == (1, 50)
    with pytest.raises(SvmlightError, match=r"the model's 51 features make the dense features matrix 1 lines"):
        read_svmlight(p, n_features=51)


def testavailable_memory_is_a_positive_byte_count():
    avail = svmlight.available_memory()
    assert avail is None or (isinstance(avail, int) and avail > 0)


# ---------------------------------------------------------------- a model's width (classify)
def test_n_features_pads_and_rejects_with_file_line(tmp_path, no_big_alloc):
    p = write(tmp_path, "1 qid:1 1:0.5\n0 qid:1 2:1 4:2\n")
    d = read_svmlight(p, n_features=6)
    assert d.features.tolist() == [[0.5, 0, 0, 0, 0, 0], [0, 1, 0, 2, 0, 0]]
    assert read_svmlight(p, n_features=4).features.shape == (2, 4)
    with pytest.raises(SvmlightError) as e:
        read_svmlight(p, n_features=3)
    assert str(e.value) == f"{p}:2: uses feature index 4 but the model has 3 features (trained on data of another width?)"
    # the model's width, not the default bound, is the limit (a huge index included)
    with pytest.raises(SvmlightError, match=":4: uses feature index 1000000000 but the model has 3 features"):
        read_svmlight(write(tmp_path, HUGE, "h.txt"), n_features=3)
    big = write(tmp_path, f"1 qid:1 {MAX_FEATURES + 5}:1\n", "big.txt")
    assert read_svmlight(big, n_features=MAX_FEATURES + 5).features.shape == (1, MAX_FEATURES + 5)


# ---------------------------------------------------------------- the old rules
def test_absent_features_are_zero_and_lines_keep_their_order(tmp_path):
    d = read_svmlight(write(tmp_path, "2 qid:7 3:1.5 # docid = a\n0 qid:3 1:-2\n1 qid:7\n"))
    assert d.features.tolist() == [[0, 0, 1.5], [-2, 0, 0], [0, 0, 0]]
    assert d.labels.tolist() == [2, 0, 1] and d.qids.tolist() == [7, 3, 7]
    assert d.docids.tolist() == ["a", "2", "3"] and d.offsets.tolist() == [0, 2, 3]


def test_values_are_correctly_rounded(tmp_path):
    """Every value is read as Python's float() of its text (correctly rounded), whatever its digits: 17
    significant digits, halfway cases between two doubles, subnormals and exponents."""
    rng = np.random.default_rng(3)
    values = [repr(float(v)) for v in rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)]
    values += ["0.1", "2.675", "9007199254740993", "4.9e-324", "2.2250738585072011e-308",
               "1.00000000000000011102230246251565404236316680908203125",   # halfway: rounds to even
               "1.7976931348623157e308", "-0.0", "+3", ".5", "5."]
    lines = "".join(f"{i % 2} qid:{i // 10} 1:{v} 2:{v}\n" for i, v in enumerate(values))
    d = read_svmlight(write(tmp_path, lines))
    assert d.order.tolist() == list(range(len(values)))
    got, expected = d.features, np.array([float(v) for v in values])
    assert got[:, 0].tobytes() == expected.tobytes() and got[:, 1].tobytes() == expected.tobytes()


def test_a_qid_in_two_files_is_refused_and_apart_in_one_file_grouped(tmp_path):
    from pyterrier_svmmap.io.svmlight import SvmlightError, read_svmlight
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("1 qid:1 1:1\n0 qid:2 1:0\n")
    b.write_text("1 qid:3 1:1\n0 qid:2 1:0\n")
    with pytest.raises(SvmlightError, match=rf"qid 2 is in {a} \(line 2\) and in {b} \(line 2\); 1 qids are in both"):
        read_svmlight([a, b])
    b.write_text("1 qid:3 1:1\n0 qid:4 1:0\n1 qid:3 1:0.5\n")      # qid 3 apart within b: one query
    d = read_svmlight([a, b])
    assert d.query_ids.tolist() == [1, 2, 3, 4] and d.offsets.tolist() == [0, 1, 2, 4, 5]
    assert d.where(4) == f"{b}:3"


def test_a_feature_index_above_the_bound_names_the_python_remedy(tmp_path):
    from pyterrier_svmmap.io.svmlight import FeatureIndexTooLarge, read_svmlight
    p = tmp_path / "f.txt"
    p.write_text("1 qid:1 1:1 7:1\n")
    with pytest.raises(FeatureIndexTooLarge, match=rf"{p}:1: feature index 7 is above the limit of 5 features .* "
                                                   r"or raise read_svmlight\(max_features=...\)"):
        read_svmlight(p, max_features=5)
