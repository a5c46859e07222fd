"""A small result frame and its qrels, for the tests of two rooms (frames and user_warnings)."""
from __future__ import annotations

from typing import Tuple

import numpy as np
import pandas as pd


def small_frames(n_q: int = 6, n_d: int = 10, seed: int = 0) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """``n_q`` queries (qids "0", "1", ...) of ``n_d`` candidates ("d0", "d1", ...) with two features, and their
    qrels: the first two candidates of each query are relevant and score higher on the first feature."""
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_q):
        for d in range(n_d):
            rel = d < 2
            rows.append(dict(qid=str(q), docno=f"d{d}", query="x",
                             features=np.array([rel + rng.random(), rng.random()])))
            if rel:
                qrels.append(dict(qid=str(q), docno=f"d{d}", label=1))
    return pd.DataFrame(rows), pd.DataFrame(qrels)
