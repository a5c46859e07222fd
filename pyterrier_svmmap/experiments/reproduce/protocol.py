"""The protocols of ``svmmap reproduce``: balanced random splits, repeated k-fold splits and a collection's own
split.

Random splits (:func:`make_splits`; Yue et al. 2007 §5: "all queries [...] in the training, validation and test
sets the same number of times"): trial t takes the next ``train + valid`` distinct queries of a stream of
successive random permutations of all queries (a query that would come twice is left at the front of the
stream for the next trial), so that each query is held out of the test set ⌊T·m/N⌋ or ⌈T·m/N⌉ times, up to
one more where a query was deferred; of them, the ``valid`` with the fewest validation roles so far (ties at
random) validate and the others train.

Repeated k-fold splits (:func:`make_folds`): each repeat shuffles the queries into K folds whose sizes differ by
at most one; split (r, k) tests fold k, validates on fold k + 1 (mod K) and trains on the others, so every query
is tested and validated exactly ``repeats`` times (with ``valid_fold=False`` nothing validates).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class Split:
    """One train / validation / test split, numbered from 0 (k-fold splits: ``repeat`` × K + ``fold``)."""
    trial: int
    train: tuple
    valid: tuple
    test: tuple
    repeat: Optional[int] = None
    fold: Optional[int] = None


def make_splits(qids: Sequence[str], trials: int = 50, train: int = 10, valid: int = 5,
                seed: int = 0) -> List[Split]:
    """``trials`` splits of ``qids`` (see the module's docstring for the balancing scheme)."""
    qids = list(qids)
    n, m = len(qids), train + valid
    if len(set(qids)) != n:
        raise ValueError("duplicate query ids")
    if train < 1 or valid < 0 or trials < 1:
        raise ValueError("need --train >= 1, --valid >= 0 and --trials >= 1")
    if n <= m:
        raise ValueError(f"{n} queries cannot give {train} training and {valid} validation "
                         "queries and leave any to test")
    rng = np.random.default_rng(seed)
    stream: List[int] = []
    valid_count = np.zeros(n, dtype=int)
    splits = []
    for t in range(trials):
        chosen: List[int] = []
        pos = 0
        while len(chosen) < m:
            if pos >= len(stream):
                stream.extend(rng.permutation(n).tolist())
            if stream[pos] in chosen:
                pos += 1              # keep it in the stream for a later trial
            else:
                chosen.append(stream.pop(pos))
        chosen_arr = np.array(chosen)
        # fewest validation roles first, ties at random
        order = np.lexsort((rng.random(m), valid_count[chosen_arr]))
        va, tr = chosen_arr[order[:valid]], chosen_arr[order[valid:]]
        valid_count[va] += 1
        held = set(chosen)
        splits.append(Split(t, tuple(qids[i] for i in sorted(tr)), tuple(qids[i] for i in sorted(va)),
                            tuple(qids[i] for i in range(n) if i not in held)))
    return splits


def make_folds(qids: Sequence[str], folds: int = 5, repeats: int = 1, seed: int = 0,
               valid_fold: bool = True) -> List[Split]:
    """``repeats`` × ``folds`` k-fold splits of ``qids`` (see the module's docstring), in the order
    repeat 0 fold 0, repeat 0 fold 1, ...; the query ids of each role are sorted."""
    qids = list(qids)
    n = len(qids)
    if len(set(qids)) != n:
        raise ValueError("duplicate query ids")
    least = 3 if valid_fold else 2
    if folds < least:
        raise ValueError(f"--folds must be at least {least} (a test fold, "
                         f"{'a validation fold and ' if valid_fold else ''}at least one training fold), "
                         f"got {folds}")
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    if n < folds:
        raise ValueError(f"{n} queries cannot be split into {folds} folds")
    rng = np.random.default_rng(seed)
    splits = []
    for r in range(repeats):
        parts = [sorted(qids[i] for i in part) for part in np.array_split(rng.permutation(n), folds)]
        for k in range(folds):
            v = (k + 1) % folds if valid_fold else None
            train = sorted(q for j, part in enumerate(parts) if j not in (k, v) for q in part)
            splits.append(Split(r * folds + k, tuple(train), tuple(parts[v]) if valid_fold else (),
                                tuple(parts[k]), repeat=r, fold=k))
    return splits


def file_split(qids: Sequence[str], train: Sequence[str], test: Sequence[str], valid_folds: int = 5,
               seed: int = 0) -> List[Split]:
    """The one split a collection fixes (BEIR's train and test claims): its test queries test; of its
    training queries, a seeded 1/``valid_folds`` validates (as one fold of ``make_folds``) and the rest
    train. Only judged queries (``qids``) are kept in each role; a query in both lists is an error."""
    judged = set(qids)
    train, test = [q for q in train if q in judged], [q for q in test if q in judged]
    both = set(train) & set(test)
    if both:
        raise ValueError(f"{len(both)} queries are in both split.train and split.test, e.g. {sorted(both)[0]!r}")
    if len(train) < valid_folds or not test:
        raise ValueError(f"the split has {len(train)} judged training and {len(test)} judged test queries; it needs "
                         f"at least {valid_folds} training queries and one test query")
    order = np.random.default_rng(seed).permutation(len(train))
    valid = {train[i] for i in order[:len(train) // valid_folds]}
    return [Split(0, tuple(sorted(q for q in train if q not in valid)), tuple(sorted(valid)), tuple(sorted(test)))]


def role_counts(splits: Sequence[Split], qids: Sequence[str]) -> dict:
    """{role: {qid: count}} for the roles train, valid and test."""
    out = {r: dict.fromkeys(qids, 0) for r in ("train", "valid", "test")}
    for s in splits:
        for r in out:
            for q in getattr(s, r):
                out[r][q] += 1
    return out
