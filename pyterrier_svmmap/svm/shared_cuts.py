"""Cutting planes shared between problems over the same queries: the folds of a cross-validation and its final fit.

A query's most violated ranking depends on w and that query alone, so the per-fold sums of one pass over every
fold give each problem over a union of folds its exact 1-slack constraints at that w (Joachims, Finley & Yu,
MLJ 2009, OP 4). :func:`~.cutting_plane.train_path` starts from them (``seeds``) and still stops only when the
problem's own oracle certifies its duality gap."""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.svm.cutting_plane import DataOracle, many_shard_sums, reduce_shard_sums
from pyterrier_svmmap.svm.losses.base import Loss


class PartsOracle(DataOracle):
    """A :class:`~.cutting_plane.DataOracle` over parts (the folds of a cross-validation) that passes over every
    part but sums the ``active`` ones only, keeping each call's per-part sums (:attr:`points`) for the problems
    over other unions of the same parts (:func:`restrict_points`)."""

    def __init__(self, parts: Sequence[tuple], losses: Sequence[Loss], active: Sequence[int]):
        super().__init__(None, None, None, losses, shards=parts)
        self.active = [int(i) for i in active]
        self.n_queries = sum(len(self.shards[i][2]) - 1 for i in self.active)
        if self.n_queries < 1:
            raise ValueError("no training queries in the active parts")
        self.points: List[Tuple[np.ndarray, list]] = []

    def __call__(self, w: np.ndarray) -> List[Tuple[np.ndarray, float]]:
        sums = many_shard_sums(self.shards, w, self.losses)
        self.points.append((np.array(w, dtype=float), sums))
        return reduce_shard_sums([sums[i] for i in self.active], self.n_queries)

    def take_points(self) -> list:
        """The points evaluated since the last call."""
        points, self.points = self.points, []
        return points


def restrict_points(points: Sequence[Tuple[np.ndarray, list]], parts: Sequence[int], n_queries: int
                    ) -> List[Tuple[np.ndarray, List[Tuple[np.ndarray, float]]]]:
    """(w, constraints) at each of a :class:`PartsOracle`'s ``points`` of the problem over ``parts`` (its
    ``n_queries`` queries): the parts' sums, reduced as that problem's own oracle reduces them."""
    return [(w, reduce_shard_sums([sums[i] for i in parts], n_queries)) for w, sums in points]
