"""The compiled svmlight parser gives the line-by-line reader's values bit for bit, and refuses (to that reader)
every chunk it does not read exactly: random lines of every number form, with the fallback forced and not."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_svmmap._jit import load
from pyterrier_svmmap.io.svmlight import BadLine, _parse_lines, parse_chunk


def kernel_status(data: bytes, limit: int = 100_000) -> int:
    k = load("io._svmlight_kernels")
    return int(k.parse_lines(np.frombuffer(data, dtype=np.uint8), limit, k._POW10)[0])


def outcome(reader, data: bytes, limit: int = 100_000):
    """The reader's result, or the line it refused (and the index when the index is its only fault)."""
    try:
        return reader(data, limit)
    except BadLine as e:
        return ("BadLine", e.line, e.index)


def same(a, b) -> bool:
    """Whether two outcomes are equal: the same exception, or the same arrays (floats bit for bit)."""
    if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 7):
        return a == b
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
            continue
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if not (np.array_equal(x.view(np.uint64), y.view(np.uint64)) if x.dtype.kind == "f" else (x == y).all()):
            return False
    return True


def random_number(rng) -> str:
    """A number in one of the forms float() and C strtod read (and a few they do not)."""
    kind = rng.integers(12)
    if kind == 0:
        return str(int(rng.integers(-10 ** 6, 10 ** 6)))
    if kind == 1:
        return f"{rng.standard_normal():.{int(rng.integers(1, 18))}f}"
    if kind == 2:
        return f"{rng.standard_normal() * 10.0 ** rng.integers(-30, 30):.{int(rng.integers(1, 17))}e}"
    if kind == 3:
        return f"{rng.random():.{int(rng.integers(1, 25))}g}".upper()
    if kind == 4:
        return repr(float(rng.standard_normal()))                 # 17 significant digits
    if kind == 5:
        return rng.choice([".5", "-.25", "+3", "1.", "-0", "0.0", "+0.e1", "1e22", "1e23", "1e-22", "1e-23",
                           "9007199254740993", "9007199254740992", "123456789012345678901234", "0.000001e-17"])
    if kind == 6:
        return "0." + "0" * int(rng.integers(0, 25)) + str(int(rng.integers(1, 999)))
    if kind == 7:
        return rng.choice(["inf", "nan", "1e400", "1x", "--1", "1e", "e5", ".", "1_0", "0x10"])
    return f"{rng.random():.4f}"


def random_lines(rng, n: int, clean: bool) -> bytes:
    lines = []
    for i in range(n):
        shape = rng.integers(20) if not clean else 0
        label = str(int(rng.integers(0, 3))) if clean else random_number(rng)
        qid = str(int(rng.integers(1, 5))) if rng.random() < 0.9 else rng.choice(["1.0", "2e0", "1.5"])
        idx = np.sort(rng.choice(np.arange(1, 12), size=int(rng.integers(0, 6)), replace=False))
        pairs = " ".join(f"{i}:{f'{rng.random():.4f}' if clean else random_number(rng)}" for i in idx)
        line = f"{label} qid:{qid} {pairs}"
        if rng.random() < 0.3:
            line += rng.choice([" #docid = d%d" % i, "#x", " # a:b qid:3"])
        if shape == 1:
            line = line.replace("qid:", "")
        elif shape == 2 and len(idx) > 1:
            line = line.replace(f" {idx[0]}:", f" {idx[-1] + 1}:", 1)      # indices not increasing
        elif shape == 8 and len(idx):
            line += f" {idx[-1]}:1"                                  # an index twice
        elif shape == 3:
            line = line.replace(" ", "\t")
        elif shape == 4:
            line += "\r"
        elif shape == 5:
            line = "   "
        elif shape == 6:
            line = "# only a comment"
        elif shape == 7:
            line += " 99999999:1"                                    # above the limit
        lines.append(line)
    return ("\n".join(lines) + ("\n" if rng.random() < 0.5 else "")).encode()


@pytest.mark.parametrize("seed", range(60))
def test_compiled_and_line_readers_agree_on_random_lines(seed):
    rng = np.random.default_rng(seed)
    data = random_lines(rng, int(rng.integers(1, 40)), clean=seed % 3 == 0)
    compiled = outcome(parse_chunk, data, 1000)
    lines = outcome(_parse_lines, data, 1000)
    assert same(compiled, lines), data


@pytest.mark.parametrize("seed", range(30))
def test_every_single_number_reads_as_float_reads_it(seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(50):
        x = random_number(rng)
        data = f"{x} qid:1 1:{x} 2:-{x.lstrip('+-')}\n".encode()
        assert same(outcome(parse_chunk, data), outcome(_parse_lines, data)), x


def test_the_compiled_parser_reads_plain_lines_itself():
    """Well-formed lines of plain numbers are the compiled parser's (status 0), so the fast path is the one
    tested above, not only the fallback."""
    assert kernel_status(b"1 qid:3 1:0.5 2:-1.25e-3 4:7 # docid = x\n0 qid:3\n\n# c\n") == 0
    assert kernel_status(b"1 qid:1 1:0.5") == 0                        # no final newline
    assert kernel_status(b"1\tqid:1 1:0.5\t2:1e-3 \r\n0 qid:1 1:.5\r\n") == 0      # tabs, Windows line ends
    for hard in (b"1 qid:1 1:123456789012345678901", b"1 qid:1 1:1e23", b"1 qid:1 1:inf", b"1 qid:1 1:0x1",
                 b"1 qid:1 2:1 1:1", b"1 qid:1 1:1 1:2", b"1 qid:1.5 1:1", b"1 qid:1 0:1", b"1 1:1",
                 b"1 qid:1 1:1:2 3"):
        assert kernel_status(hard) == 1, hard
    assert kernel_status(b"1 qid:1 100001:1") == 1                     # above the limit: the line reader raises


def test_numbers_at_the_edge_of_the_exact_range_are_correctly_rounded():
    for text in ("9007199254740992", "9007199254740993", "0.1", "0.3", "1e22", "1e-22", "4.35", "2.675",
                 "0.1234567890123456", "123456789012345.6"):
        data = f"0 qid:1 1:{text}\n".encode()
        assert parse_chunk(data, 10)[4][0] == float(text), text


def test_comments_and_line_numbers_are_the_line_readers():
    data = b"\n1 qid:1 1:0.5 #docid = GX1 inc = 1\r\n# c\n0 qid:2 #  spaced \n"
    fast, slow = parse_chunk(data, 10), _parse_lines(data, 10)
    assert list(fast[5]) == list(slow[5]) == ["docid = GX1 inc = 1", "spaced"]
    assert list(fast[6]) == list(slow[6]) == [1, 3]
    assert parse_chunk(data, 10, comments=False)[5] is None


def test_read_svmlight_gives_the_same_data_with_either_parser(letor_example_files, tmp_path):
    from pyterrier_svmmap.io.svmlight import read_svmlight
    odd = tmp_path / "odd.txt"          # a chunk the compiled parser hands to the line reader (a 20-digit value)
    odd.write_text(letor_example_files.train.read_text() + "0 qid:999 1:0.12345678901234567890\n")
    for path in (letor_example_files.train, odd):
        a, b = read_svmlight(path, parser="python"), read_svmlight(path, parser="compiled")
        for name in ("features", "labels", "qids", "order", "offsets", "query_ids", "line_numbers"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert list(a.comments) == list(b.comments) and list(a.docids) == list(b.docids)
    with pytest.raises(ValueError, match="parser must be one of auto, compiled, python"):
        read_svmlight(odd, parser="fast")
    with pytest.warns(DeprecationWarning, match=r'parser="numpy"\) is deprecated'):      # the earlier name
        assert np.array_equal(read_svmlight(odd, parser="numpy").features, a.features)


@pytest.mark.parametrize("text, read", [
    (b"1 qid:1.0 2.0:3 1e1:4\n", ([1.0], [1], [2, 10], [3.0, 4.0])),      # integers written as floats
    (b"-0 qid:+2 1:-0 2:1e-400 3:4.9e-324\n", ([-0.0], [2], [1, 2, 3], [-0.0, 0.0, 5e-324])),
    (b"1 qid:1 1:1e400\n", ("BadLine", 0, None)), (b"1 qid:1 1:inf\n", ("BadLine", 0, None)),
    (b"nan qid:1 1:1\n", ("BadLine", 0, None)), (b"1 qid:1 1:0x10\n", ("BadLine", 0, None)),
    (b"1 qid:1 1:1_0\n", ("BadLine", 0, None)), (b"1 qid:1.5 1:1\n", ("BadLine", 0, None)),
    (b"1 qid:1 1:1\n1 qid:1 inf:1\n", ("BadLine", 1, float("inf"))),   # an index above any limit
    (b"1 qid:1 1:1\n1 qid:1 1:2 3\nx\n1 qid:1 20:1\n", ("BadLine", 1, None)),   # the first bad line wins
])
def test_the_line_reader_reads_numbers_as_float_and_names_the_first_bad_line(text, read):
    got = outcome(_parse_lines, text, 10)
    if read[0] == "BadLine":
        assert got == read
    else:
        labels, qids, idx, val = read
        assert np.array_equal(got[0], labels) and got[1].tolist() == qids and got[3].tolist() == idx
        assert got[4].tobytes() == np.array(val).tobytes() and got[0].tobytes() == np.array(labels).tobytes()
