"""Δ_map = 1 − AP with the pairwise joint feature map: SVM-map (Yue et al., SIGIR 2007).

Ψ(x, y) = 1/(|P|·|N|) Σ_{i∈P} Σ_{j∈N} y_ij (φ(x, d_i) − φ(x, d_j))            (§3, the combined
feature function), so the coefficient of a relevant document is (|N| − 2·a_i)/(|P||N|), a_i being the
number of non-relevant documents ranked above it, and that of a non-relevant document is
−(2·b_j − |P|)/(|P||N|), b_j being the number of relevant documents above it.

The most violated constraint is found by Algorithm 2: sort P and N by score (Observation 1), then give
every non-relevant document j the slot opt_j = argmax_k δ_j(k, |P|+1) (Eq. 5, 6, 13); Theorem 2 shows the
slots are non-decreasing in j, so the independent choices form a valid ranking.

Two implementations of the slot search:

* :func:`map_slots_reference` — the paper's Algorithm 2 as written, O(|P|·|N|) per query;
* :func:`map_slots_batch` (used by the loss) — exact, O((|P| + |N|) log |N|) per query, vectorised
  across queries. Two facts make it fast. (i) The AP part of δ_j(k, |P|+1) has a closed form with
  harmonic numbers H_n = Σ_{m≤n} 1/m: Σ_{i=k}^{|P|} [j/(j+i) − (j−1)/(j+i−1)]
  = j/(j+|P|) − j/(j+k−1) + H_{j+|P|−1} − H_{j+k−2}, and the score part is a suffix sum, so any single
  gain costs O(1). (ii) Every step δ_j(i, i+1) is non-increasing in j (both i/((j+i)(j+i−1)) and
  s_j decrease as j grows), so gain differences δ_j(k) − δ_j(k') (k < k') are non-increasing in j: the
  *first* maximiser of each row is non-decreasing (Theorem 2, made exact for ties). Divide and conquer
  over non-relevant documents then finds the middle row's first maximiser over its admissible range and
  recurses left / right on the two sub-ranges; the recursion runs level by level, all queries at once.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.measures import rank_within_queries
from pyterrier_svmmap.svm.losses.base import Loss, sort_by_score, split_by_relevance  # noqa: F401  (sort_by_score re-exported)

#: entries of the (non-relevant × relevant) gain table built at once; bounds memory on big queries
_CHUNK_ENTRIES = 1 << 22


def average_precision_of_ranking(ranking: np.ndarray, labels: np.ndarray) -> float:
    """AP of a ranking over the query's candidates (relevant = label > 0), 0 when none is relevant."""
    rel = np.asarray(labels)[ranking] > 0
    n_rel = int(rel.sum())
    if n_rel == 0:
        return 0.0
    hits = np.cumsum(rel)
    ranks = np.arange(1, len(rel) + 1)
    return float((hits[rel] / ranks[rel]).sum() / n_rel)


def pairwise_psi_coef(ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Coefficients of the normalised pairwise map Ψ (shared by the MAP, ROC and NDCG losses)."""
    labels = np.asarray(labels)
    rel_in_order = labels[ranking] > 0
    n_pos = int(rel_in_order.sum())
    n_neg = len(ranking) - n_pos
    coef = np.zeros(len(ranking))
    if n_pos == 0 or n_neg == 0:
        return coef
    neg_above = np.cumsum(~rel_in_order) - (~rel_in_order)
    pos_above = np.cumsum(rel_in_order) - rel_in_order
    in_order = np.where(rel_in_order, n_neg - 2.0 * neg_above, -(2.0 * pos_above - n_pos))
    coef[ranking] = in_order / (n_pos * n_neg)
    return coef


def interleave(pos_sorted: np.ndarray, neg_sorted: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Ranking from sorted relevant / non-relevant index lists and slots.

    ``slots[j]`` (0-based, in 0..|P|) is the number of relevant documents ranked above the j-th
    non-relevant one; ``slots`` must be non-decreasing.
    """
    n_pos = len(pos_sorted)
    key = np.concatenate([np.arange(n_pos, dtype=float), slots - 0.5])
    order = np.argsort(key, kind="stable")
    return np.concatenate([pos_sorted, neg_sorted])[order]


def map_slots_reference(pos_scores: np.ndarray, neg_scores: np.ndarray) -> np.ndarray:
    """Algorithm 2, lines 5–7: for sorted (descending) scores, the optimal slot of each non-relevant doc.

    Returns 0-based slots (number of relevant documents ranked above), non-decreasing.
    O(|P|·|N|) time, computed in chunks of non-relevant documents. The reference for
    :func:`map_slots` (tests and ``benchmarks/bench.py`` check they give rankings of equal H).
    """
    n_pos, n_neg = len(pos_scores), len(neg_scores)
    slots = np.empty(n_neg, dtype=np.int64)
    i = np.arange(1, n_pos + 1, dtype=float)[None, :]             # relevant index k (1-based)
    chunk = max(1, _CHUNK_ENTRIES // max(n_pos, 1))
    for start in range(0, n_neg, chunk):
        j = np.arange(start + 1, min(start + chunk, n_neg) + 1, dtype=float)[:, None]
        s_neg = neg_scores[start:start + chunk, None]
        # δ_j(k, k+1), Eq. (5)
        step = (j / (j + i) - (j - 1) / (j + i - 1)) / n_pos - 2.0 * (pos_scores[None, :] - s_neg) / (n_pos * n_neg)
        # δ_j(k, |P|+1) = Σ_{i=k}^{|P|} δ_j(i, i+1), Eq. (6); column |P| is the "stay below all" slot (0)
        gains = np.zeros((step.shape[0], n_pos + 1))
        gains[:, :n_pos] = np.cumsum(step[:, ::-1], axis=1)[:, ::-1]
        slots[start:start + chunk] = np.argmax(gains, axis=1)     # first maximum: keeps Theorem 2's order
    # Theorem 2 guarantees monotone slots; rounding in near-ties must not break the interleaving.
    return np.maximum.accumulate(slots) if n_neg else slots


#: harmonic numbers H_0..H_n (H_0 = 0), grown on demand
_HARMONIC = np.zeros(1)


def harmonic(n: int) -> np.ndarray:
    """Table of H_0..H_m for some m ≥ n (shared, read-only)."""
    global _HARMONIC
    if len(_HARMONIC) <= n:
        m = max(n + 1, 2 * len(_HARMONIC), 1024)
        table = np.zeros(m)
        np.cumsum(1.0 / np.arange(1, m), out=table[1:])
        _HARMONIC = table
    return _HARMONIC


#: a task whose (rows × slots) block has at most this many entries is solved in one go
_LEAF_ENTRIES = 8


def map_slots_batch(pos_scores: np.ndarray, pos_offsets: np.ndarray,
                    neg_scores: np.ndarray, neg_offsets: np.ndarray) -> np.ndarray:
    """Optimal slots of the non-relevant documents of many queries at once (exact, see module doc).

    ``pos_scores[pos_offsets[q]:pos_offsets[q+1]]`` are query q's relevant scores sorted descending,
    likewise ``neg_scores`` / ``neg_offsets``; every query needs ≥ 1 relevant and ≥ 1 non-relevant
    document. Returns, per non-relevant document (concatenated like ``neg_scores``), its 0-based slot:
    the number of relevant documents above it, the first (highest) maximiser of δ_j(·, |P|+1).
    """
    pos_scores = np.asarray(pos_scores, dtype=float)
    neg_scores = np.asarray(neg_scores, dtype=float)
    pos_offsets = np.asarray(pos_offsets, dtype=np.int64)
    neg_offsets = np.asarray(neg_offsets, dtype=np.int64)
    n_q = len(pos_offsets) - 1
    P = np.diff(pos_offsets)
    N = np.diff(neg_offsets)
    slots = np.empty(len(neg_scores), dtype=np.int64)
    if n_q == 0 or len(neg_scores) == 0:
        return slots
    H = harmonic(int((P + N).max()) + 1)
    # relevant scores centred per query, so that one global cumsum keeps per-query precision:
    # suffix(t) = Σ_{i ≥ t} (s_i − m_q) = cs[end_q] − cs[start_q + t]
    mean = np.add.reduceat(pos_scores, pos_offsets[:-1]) / P
    centred = pos_scores - np.repeat(mean, P)
    cs = np.zeros(len(pos_scores) + 1)
    np.cumsum(centred, out=cs[1:])
    inv_p = 1.0 / P
    score_coef = 2.0 / (P * N)                     # 2/(|P||N|)
    # tasks: query, rows [jlo, jhi) (0-based non-relevant index), admissible slots [klo, khi]
    tq = np.arange(n_q)
    jlo = np.zeros(n_q, dtype=np.int64)
    jhi = N.copy()
    klo = np.zeros(n_q, dtype=np.int64)
    khi = P.copy()
    fill_start, fill_len, fill_val = [], [], []
    while len(tq):
        rows = jhi - jlo
        width = khi - klo + 1
        fixed = width == 1                          # only one admissible slot: the whole range takes it
        if fixed.any():
            fill_start.append(neg_offsets[tq[fixed]] + jlo[fixed])
            fill_len.append(rows[fixed])
            fill_val.append(klo[fixed])
            keep = ~fixed
            tq, jlo, jhi, klo, khi, rows, width = (a[keep] for a in (tq, jlo, jhi, klo, khi, rows, width))
            if not len(tq):
                break
        leaf = rows * width <= _LEAF_ENTRIES * (rows + width)
        # rows evaluated at this level: every row of a leaf task, the middle row of the others
        mid = (jlo + jhi) // 2
        r_count = np.where(leaf, rows, 1)
        r_first = np.where(leaf, jlo, mid)
        n_rows = int(r_count.sum())
        task_of_row = np.repeat(np.arange(len(tq)), r_count)
        row_start = np.cumsum(r_count) - r_count
        j0 = r_first[task_of_row] + (np.arange(n_rows) - row_start[task_of_row])   # 0-based row
        q_row = tq[task_of_row]
        w_row = width[task_of_row]
        # entries (row, slot t) for t in [klo, khi]
        total = int(w_row.sum())
        row_of = np.repeat(np.arange(n_rows), w_row)
        ent_start = np.cumsum(w_row) - w_row
        t = klo[task_of_row][row_of] + (np.arange(total) - ent_start[row_of])
        j = (j0 + 1)[row_of]                          # 1-based j
        q = q_row[row_of]
        s_j = neg_scores[neg_offsets[q_row] + j0] - mean[q_row]
        # δ_j(t+1, |P|+1) up to a row constant:
        #   −(j/(j+t) + H_{j+t−1})/|P| − 2/(|P||N|)·(Σ_{i≥t}(s_i − m) + t·(s_j − m))
        jt = j + t
        gain = -(j / jt + H[jt - 1]) * inv_p[q] \
            - score_coef[q] * ((cs[pos_offsets[q + 1]] - cs[pos_offsets[q] + t]) + t * s_j[row_of])
        best = np.maximum.reduceat(gain, ent_start)
        idx = np.where(gain >= best[row_of], np.arange(total), total)
        first = np.minimum.reduceat(idx, ent_start)
        opt = t[first]
        slots[neg_offsets[q_row] + j0] = opt
        # split the non-leaf tasks around their middle row's slot
        inner = ~leaf
        opt_task = np.zeros(len(tq), dtype=np.int64)
        opt_task[task_of_row] = opt                 # for non-leaf tasks, their single row
        left = inner & (jlo < mid)
        right = inner & (mid + 1 < jhi)
        tq = np.concatenate([tq[left], tq[right]])
        jlo, jhi, klo, khi = (np.concatenate([jlo[left], mid[right] + 1]),
                              np.concatenate([mid[left], jhi[right]]),
                              np.concatenate([klo[left], opt_task[right]]),
                              np.concatenate([opt_task[left], khi[right]]))
    if fill_start:
        start = np.concatenate(fill_start)
        length = np.concatenate(fill_len)
        val = np.concatenate(fill_val)
        total = int(length.sum())
        if total:
            seg = np.repeat(np.arange(len(start)), length)
            offs = np.arange(total) - (np.cumsum(length) - length)[seg]
            slots[start[seg] + offs] = val[seg]
    return slots


def map_slots(pos_scores: np.ndarray, neg_scores: np.ndarray) -> np.ndarray:
    """The optimal slots of one query (fast exact path); same contract as :func:`map_slots_reference`."""
    pos_scores = np.asarray(pos_scores, dtype=float)
    neg_scores = np.asarray(neg_scores, dtype=float)
    if len(pos_scores) == 0 or len(neg_scores) == 0:
        return np.zeros(len(neg_scores), dtype=np.int64)
    jit = _jit()
    if jit:
        slots = np.empty(len(neg_scores), dtype=np.int64)
        jit.slots_one(np.ascontiguousarray(pos_scores), np.ascontiguousarray(neg_scores),
                      harmonic(len(pos_scores) + len(neg_scores) + 1), slots)
        return slots
    return map_slots_batch(pos_scores, np.array([0, len(pos_scores)]),
                           neg_scores, np.array([0, len(neg_scores)]))


class MAPLoss(Loss):
    """Δ = 1 − AP(y) over the query's candidates; SVM-map's loss (Yue et al. 2007, §2 and §3.2)."""

    name = "map"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - average_precision_of_ranking(ranking, labels)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return pairwise_psi_coef(ranking, labels)

    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Algorithm 2 for one query: compiled (:func:`._rank_kernels.map_ranking`, the slot search of the
        batch kernel) with numba, else :meth:`argmax_reference`."""
        call = self.ranking_call(len(scores))
        if call is None:
            return self.argmax_reference(scores, labels)
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        labels = np.asarray(labels)
        if scores.ndim != 1 or labels.shape != scores.shape:
            raise ValueError(f"scores and labels must be 1-d arrays of one length, got shapes {scores.shape} and "
                             f"{labels.shape}")
        n = len(scores)
        out = np.empty(n, dtype=np.int64)
        if n:
            order = np.ascontiguousarray(query_score_order(scores, np.array([0, n])), dtype=np.int64)
            call[0](scores, np.ascontiguousarray(labels > 0), order, 0, n, *call[1], out)
        return out

    def ranking_call(self, n: int):
        """The compiled single-query argmax (:func:`._rank_kernels.map_ranking`) for a query of ``n``
        candidates and its parameters, or None without numba."""
        import pyterrier_svmmap._jit as loader
        rank = loader.load("svm.losses._rank_kernels", "the MAP argmax runs in numpy")
        return None if rank is None or _jit() is None else (rank.map_ranking, (harmonic(n + 2),))

    def argmax_reference(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Algorithm 2 in numpy (stable sorts, :func:`map_slots`, :func:`interleave`): the reference of
        :meth:`argmax`."""
        scores, pos, neg = split_by_relevance(scores, labels)
        if len(pos) == 0 or len(neg) == 0:
            return np.concatenate([pos, neg])
        return interleave(pos, neg, map_slots(scores[pos], scores[neg]))

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        """Δ(ŷ) and c(y*) − c(ŷ) straight from the slots: 2a_i/(|P||N|) for relevant document i
        (a_i non-relevant above it), −2·(relevant below j)/(|P||N|) for non-relevant document j."""
        scores = np.asarray(scores, dtype=float)
        deltas, coef = self.batch_violation(scores, labels, np.array([0, len(scores)]))
        return float(deltas[0]), coef

    def batch_violation(self, scores: np.ndarray, labels: np.ndarray,
                        offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`violation` for all queries at once: compiled (blocks of queries on
        :func:`~pyterrier_svmmap.threads.current` threads, the same numbers for any number) with numba,
        else vectorised numpy (:func:`map_batch_violation_numpy`)."""
        jit = _jit()
        if not jit:
            return map_batch_violation_numpy(scores, labels, offsets)
        scores = np.ascontiguousarray(scores, dtype=float)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        n_q = len(offsets) - 1
        deltas = np.zeros(n_q)
        coef = np.zeros(len(scores))
        if n_q == 0 or len(scores) == 0:
            return deltas, coef
        rel = np.ascontiguousarray(np.asarray(labels) > 0)
        order = query_score_order(scores, offsets)
        H = harmonic(int(np.diff(offsets).max()) + 2)
        threads.run_query_blocks(lambda lo, hi: jit.batch_violation_serial(scores, rel, order, offsets[lo:hi + 1],
                                                                           H, deltas[lo:hi], coef), offsets)
        return deltas, coef


def query_score_order(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Candidates (global indices) by query, then by decreasing score (ties in any fixed order).

    Queries are padded into one (queries × longest) matrix sorted row-wise by numpy's SIMD quicksort
    when padding at most doubles the work; otherwise :func:`~pyterrier_svmmap.measures.rank_within_queries`
    (stable, ties by position). The rows are sorted in blocks of queries on
    :func:`~pyterrier_svmmap.threads.current` threads; a row's order does not depend on its block.
    """
    sizes = np.diff(offsets)
    n_q, n = len(sizes), len(scores)
    longest = int(sizes.max())
    if n_q * longest > 2 * n + 4096:
        return rank_within_queries(scores, offsets)      # stable, compiled when numba is there
    out = np.empty(n, dtype=np.intp)

    def block(lo: int, hi: int) -> None:
        a, b = int(offsets[lo]), int(offsets[hi])
        if a == b:
            return
        if (hi - lo) * longest == b - a:
            local = np.argsort(-scores[a:b].reshape(hi - lo, longest), axis=1)
            local += offsets[lo:hi, None]
            out[a:b] = local.ravel()
            return
        pad = np.full((hi - lo, longest), np.inf)
        cell = np.arange(b - a) + np.repeat(np.arange(hi - lo) * longest - (offsets[lo:hi] - a), sizes[lo:hi])
        pad.ravel()[cell] = -scores[a:b]
        local = np.argsort(pad, axis=1)
        keep = local < sizes[lo:hi, None]
        local += offsets[lo:hi, None]
        out[a:b] = local[keep]

    if threads.pieces(n) == 1:
        block(0, n_q)
    else:
        threads.run_query_blocks(block, offsets)
    return out


def query_class_order(scores: np.ndarray, labels: np.ndarray,
                      offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Candidate order by query, then relevant before non-relevant, then decreasing score; and the
    number of relevant candidates per query.

    One (SIMD) quicksort of all scores, then a stable radix sort of the small integer key
    2·query + non-relevant (the stable pass keeps the score order within each group); lexsort when
    there are too many queries for a 16-bit key.
    """
    rel = np.asarray(labels) > 0
    n_q = len(offsets) - 1
    qid = query_ids(offsets)
    n_pos = np.bincount(qid, weights=rel, minlength=n_q).astype(np.int64)
    if 2 * n_q <= np.iinfo(np.uint16).max:
        by_score = np.argsort(-scores)
        key = (2 * qid + ~rel).astype(np.uint16)[by_score]
        order = by_score[np.argsort(key, kind="stable")]
    else:
        order = np.lexsort((-scores, ~rel, qid))
    return order, n_pos


# ---------------------------------------------------------------------------------------------
# batch path: all queries at once (numba kernels when available, else vectorised numpy)
# ---------------------------------------------------------------------------------------------
def _jit():
    """The compiled MAP kernels (:mod:`._map_kernels`), or None when numba is missing or disabled."""
    import pyterrier_svmmap._jit as loader
    return loader.load("svm.losses._map_kernels", "the MAP argmax runs in numpy")


def map_batch_violation_numpy(scores: np.ndarray, labels: np.ndarray,
                              offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """:meth:`MAPLoss.batch_violation` in vectorised numpy: one sort, one slot search for all queries."""
    scores = np.asarray(scores, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    rel = np.asarray(labels) > 0
    n_q = len(offsets) - 1
    sizes = np.diff(offsets)
    qid = query_ids(offsets)
    deltas = np.zeros(n_q)
    coef = np.zeros(len(scores))
    P = np.bincount(qid, weights=rel, minlength=n_q).astype(np.int64)
    N = sizes - P
    ok = (P > 0) & (N > 0)
    if not ok.any():
        return deltas, coef
    order, _ = query_class_order(scores, labels, offsets)
    use = ok[qid[order]]
    order = order[use]
    qo = qid[order]
    ro = rel[order]
    pos, neg = order[ro], order[~ro]
    Pk, Nk = P[ok], N[ok]
    pos_off = np.concatenate([[0], np.cumsum(Pk)])
    neg_off = np.concatenate([[0], np.cumsum(Nk)])
    slots = map_slots_batch(scores[pos], pos_off, scores[neg], neg_off)
    qk = np.repeat(np.arange(len(Pk)), Nk)
    # non-relevant at or above slot t, per query: histogram of slots, cumulated within the query
    cnt = np.bincount(pos_off[qk] + qk + slots, minlength=int(pos_off[-1] + len(Pk)))
    cum = np.cumsum(cnt)
    starts = pos_off[:-1] + np.arange(len(Pk))                         # query k's cells: starts[k] + t
    base = np.concatenate([[0], cum])[starts]                          # count before the query's cells
    qp = np.repeat(np.arange(len(Pk)), Pk)
    i = np.arange(len(pos)) - pos_off[qp]                              # 0-based index among relevant
    above = cum[starts[qp] + i] - base[qp]
    norm = 2.0 / (Pk * Nk)
    coef[pos] = norm[qp] * above
    coef[neg] = -norm[qk] * (Pk[qk] - slots)
    ap = np.bincount(qp, weights=(i + 1.0) / (i + 1.0 + above), minlength=len(Pk)) / Pk
    deltas[ok] = 1.0 - ap
    del qo
    return deltas, coef
