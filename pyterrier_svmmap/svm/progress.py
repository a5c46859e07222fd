"""What a structural SVM's fit reports of its trainings."""
from __future__ import annotations

import sys
from typing import List, Optional, Tuple

import pyterrier_svmmap.svm.cutting_plane as solver
from pyterrier_svmmap.user_warnings import warn


class Progress:
    """A progress bar and a line per trained C with ``verbose``; one warning at the end for unconverged trainings."""

    def __init__(self, verbose: bool, total: int, name: str, epsilon: float, max_iter: int):
        self.bar = None
        self.epsilon, self.max_iter = epsilon, max_iter
        self.trained = 0
        #: (where, reason) of every training that stopped before converging
        self.unconverged: List[Tuple[str, str]] = []
        if verbose:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, desc=name, unit="fit", file=sys.stderr, leave=False)

    def reporter(self, features: str, fold: Optional[int]):
        """The ``on_result`` callback of one path of C."""
        where = f"cv fold {fold}, " if fold is not None else ""

        def report(result) -> None:
            self.trained += 1
            if not result.converged:
                self.unconverged.append((f"{where}features={features}",
                                         solver.not_converged_reason(result, self.epsilon, self.max_iter)))
            if self.bar is not None:
                self.bar.update(1)
                self.bar.write(f"{where}features={features} C={result.C:g}: {result.n_iter} iterations, duality "
                               f"gap {result.duality_gap:.3g}, {result.seconds:.2f}s"
                               f"{'' if result.converged else ' (NOT converged)'}", file=sys.stderr)
        return report

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.unconverged:
            where, first = self.unconverged[0]
            warn(f"{len(self.unconverged)} of {self.trained} trainings stopped before their duality gap reached "
                 f"sum(C)*epsilon (their models are the last iterates), e.g. {where}: {first}")
