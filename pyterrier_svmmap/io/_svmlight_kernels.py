"""Compiled (numba) parser of svmlight ranking lines: one pass over the bytes of whole lines.

Loaded lazily by :func:`pyterrier_svmmap.io.svmlight.parse_chunk`. It reads only the strict grammar of
well-formed lines, ``label qid:Q idx:val ... [# comment]``, every number of the form
``[+-]digits[.digits][(e|E)[+-]digits]`` (or ``[+-].digits…``), and converts a number only where the
conversion is provably the correctly rounded one (Clinger's fast path: at most 2⁵³ as the integer of its
digits, and a decimal exponent of at most 22 either way, so that ``m × 10^e`` or ``m / 10^-e`` is a single
IEEE operation on exact operands). Anything else — another token, a number outside that range, a line that
breaks a rule (indices not increasing, an index above the limit, a non-integer qid) — returns a status of 1,
and the caller reads the chunk line by line (``svmlight._parse_lines``, Python's ``float()``), which accepts
it or names its first bad line. So the values are the correctly rounded ones either way, and what is
accepted or refused is what the line-by-line reader decides.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: 10^0 … 10^22, each exact in float64
_POW10 = np.array([10.0 ** k for k in range(23)])
_MAX_EXACT = 2 ** 53


@njit(cache=True, nogil=True, inline="always")
def _is_space(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True, inline="always")
def _ends_token(a, i, n):
    """Whether position ``i`` ends a token: the end of the buffer, a newline, white space or a comment."""
    if i >= n:
        return True
    c = a[i]
    return c == 10 or c == 35 or _is_space(c)


@njit(cache=True, nogil=True)
def _number(a, i, n, pow10):
    """(value, next position, ok) of the number at ``a[i]``; not ok outside the strict grammar or the exact range."""
    neg = False
    if i < n and (a[i] == 43 or a[i] == 45):
        neg = a[i] == 45
        i += 1
    m = np.int64(0)
    digits = 0
    exp = 0
    point = False                       # past the decimal point: each digit lowers the exponent
    while i < n and (48 <= a[i] <= 57 or a[i] == 46 and not point):
        if a[i] == 46:
            point = True
        else:
            m = m * 10 + (a[i] - 48)
            digits += 1
            exp -= point
            if m > _MAX_EXACT:
                return 0.0, i, False
        i += 1
    if digits == 0:
        return 0.0, i, False
    if i < n and (a[i] == 101 or a[i] == 69):
        i += 1
        eneg = False
        if i < n and (a[i] == 43 or a[i] == 45):
            eneg = a[i] == 45
            i += 1
        e = 0
        edigits = 0
        while i < n and 48 <= a[i] <= 57:
            if e < 10000:
                e = e * 10 + (a[i] - 48)
            edigits += 1
            i += 1
        if edigits == 0:
            return 0.0, i, False
        exp += -e if eneg else e
    if m == 0:
        value = 0.0
    elif exp > 22 or exp < -22:
        return 0.0, i, False
    elif exp >= 0:
        value = float(m) * pow10[exp]
    else:
        value = float(m) / pow10[-exp]
    return (-value if neg else value), i, True


@njit(cache=True, nogil=True)
def parse_lines(a, limit, pow10):
    """``(status, labels, qids, n_pairs, idx, val, hash_pos, line_end, line_no)`` of the data lines in the uint8
    buffer ``a``: status 1 (arrays empty) unless every line is of the strict grammar; per line the position of its
    first ``#`` (−1 without), of its newline (or the buffer's end) and its 0-based line number."""
    n = len(a)
    n_lines = 1
    n_colons = 0
    for i in range(n):
        if a[i] == 10:
            n_lines += 1
        elif a[i] == 58:
            n_colons += 1
    labels = np.empty(n_lines, np.float64)
    qids = np.empty(n_lines, np.int64)
    n_pairs = np.empty(n_lines, np.int64)
    hash_pos = np.empty(n_lines, np.int64)
    line_end = np.empty(n_lines, np.int64)
    line_no = np.empty(n_lines, np.int64)
    idx = np.empty(n_colons, np.int64)
    val = np.empty(n_colons, np.float64)
    bad = (0, labels[:0], qids[:0], n_pairs[:0], idx[:0], val[:0], hash_pos[:0], line_end[:0], line_no[:0])
    row = 0
    pair = 0
    line = 0
    i = 0
    while i < n:
        while i < n and _is_space(a[i]):
            i += 1
        if i >= n or a[i] == 10 or a[i] == 35:          # a blank or comment-only line: no data
            while i < n and a[i] != 10:
                i += 1
            i += 1
            line += 1
            continue
        label, i, ok = _number(a, i, n, pow10)
        if not ok or i >= n or not _is_space(a[i]):
            return (1,) + bad[1:]
        while i < n and _is_space(a[i]):
            i += 1
        if i + 4 > n or a[i] != 113 or a[i + 1] != 105 or a[i + 2] != 100 or a[i + 3] != 58:
            return (1,) + bad[1:]
        qid, i, ok = _number(a, i + 4, n, pow10)
        if not ok or not _ends_token(a, i, n) or qid != np.round(qid):
            return (1,) + bad[1:]
        first = pair
        last = 0.0
        hash_pos[row] = -1
        while True:
            while i < n and _is_space(a[i]):
                i += 1
            if i >= n or a[i] == 10:
                break
            if a[i] == 35:
                hash_pos[row] = i
                while i < n and a[i] != 10:
                    i += 1
                break
            index, i, ok = _number(a, i, n, pow10)
            if not ok or i >= n or a[i] != 58 or index != np.round(index) or index < 1 or index <= last \
                    or index > limit:
                return (1,) + bad[1:]
            value, i, ok = _number(a, i + 1, n, pow10)
            if not ok or not _ends_token(a, i, n):
                return (1,) + bad[1:]
            idx[pair] = np.int64(index)
            val[pair] = value
            pair += 1
            last = index
        labels[row] = label
        qids[row] = np.int64(qid)
        n_pairs[row] = pair - first
        line_end[row] = i
        line_no[row] = line
        row += 1
        i += 1
        line += 1
    return (0, labels[:row], qids[:row], n_pairs[:row], idx[:pair], val[:pair], hash_pos[:row], line_end[:row],
            line_no[:row])
