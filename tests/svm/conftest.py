"""Fixtures of the svm room's tests."""
from __future__ import annotations

import itertools

import numpy as np
import pytest


@pytest.fixture(scope="session")
def rankings():
    """``rankings(n)``: all n! rankings of n candidates as one (n!, n) integer matrix, in
    ``itertools.permutations`` order (the identity first), built once per n for the session; the brute-force
    oracles of the losses enumerate it. The matrices are shared between tests: do not write into them."""
    built = {}

    def get(n: int) -> np.ndarray:
        if n not in built:
            built[n] = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
        return built[n]
    return get
