"""Random train / validation / test splits in which every query plays each role about equally often.

Yue et al. (2007) §5: per trial, ``train`` queries for training, ``valid`` others for choosing C, the
rest for testing, "all queries [...] in the training, validation and test sets the same number of
times".

Scheme (deterministic for a seed):

* The queries not tested in a trial (``train + valid`` of them) are drawn from a *stream* made of
  successive random permutations of all queries: trial t takes the next ``train + valid`` distinct
  queries of the stream (a query that would appear twice because the slice crosses into the next
  permutation is left at the front of the stream for the following trial). Over T trials each query
  is therefore held out of the test set ⌊T·m/N⌋ or ⌈T·m/N⌉ times (m = train + valid, N queries),
  up to one more where a deferral happened, and tested the remaining times.
* Within a trial, the ``valid`` queries with the fewest validation roles so far (ties broken at
  random) validate and the others train, so the validation and training counts are balanced too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

import numpy as np


@dataclass(frozen=True)
class Split:
    trial: int
    train: tuple
    valid: tuple
    test: tuple


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
            q = stream[pos]
            if q in chosen:
                pos += 1              # keep it in the stream for a later trial
                continue
            chosen.append(stream.pop(pos))
        chosen_arr = np.array(chosen)
        # fewest validation roles first, ties at random
        order = np.lexsort((rng.random(m), valid_count[chosen_arr]))
        va = chosen_arr[order[:valid]]
        tr = chosen_arr[order[valid:]]
        valid_count[va] += 1
        held = set(chosen)
        te = [i for i in range(n) if i not in held]
        splits.append(Split(t, tuple(qids[i] for i in sorted(tr)), tuple(qids[i] for i in sorted(va)),
                            tuple(qids[i] for i in te)))
    return splits


def role_counts(splits: Sequence[Split], qids: Sequence[str]) -> dict:
    """{role: {qid: count}} for the roles train, valid and test."""
    out = {r: {q: 0 for q in qids} for r in ("train", "valid", "test")}
    for s in splits:
        for r in out:
            for q in getattr(s, r):
                out[r][q] += 1
    return out
