"""Helpers shared by several test modules: synthetic data and problems that more than one room tests on."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.svm.cutting_plane import TrainingResult


def _docs_text(n_docs: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return "".join(f"<DOC>\n<DOCNO>d{i}</DOCNO>\n{' '.join(f'w{w}' for w in rng.integers(0, 60, 20))}\n</DOC>\n"
                   for i in range(n_docs))


def _synthetic_runs(rng, n_q=12, n_docs=60):
    """Three base runs over random documents; the second is the most informative."""
    runs = {f"f{i}": [] for i in range(3)}
    qrels = []
    for q in range(n_q):
        rel = rng.random(n_docs) < 0.2
        rel[0] = True
        for i, noise in enumerate([2.0, 0.7, 3.0]):
            s = rel * 1.0 + rng.normal(scale=noise, size=n_docs)
            keep = np.argsort(-s)[:40]                      # each run retrieves its own top 40
            runs[f"f{i}"] += [(str(q), f"d{d}", s[d]) for d in keep]
        qrels += [(str(q), f"d{d}", 1) for d in np.flatnonzero(rel)]
    runs = {k: pd.DataFrame(v, columns=["qid", "docno", "score"]) for k, v in runs.items()}
    topics = pd.DataFrame({"qid": [str(q) for q in range(n_q)], "query": "x"})
    return topics, runs, pd.DataFrame(qrels, columns=["qid", "docno", "label"])


def _write_collection(dest: Path, n_docs: int = 300, n_topics: int = 14, seed: int = 0) -> Path:
    """docs.trec, topics.trec and qrels of a synthetic collection in ``dest`` (created)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "docs.trec").write_text(_docs_text(n_docs, seed))
    words = {f"d{i}": set(m.group(1).split())
             for i, m in enumerate(re.finditer(r"</DOCNO>\n(.*?)\n</DOC>", (dest / "docs.trec").read_text()))}
    rng = np.random.default_rng(seed + 1)
    topics, qrels = [], []
    while len(topics) < n_topics:
        query = [f"w{w}" for w in rng.choice(60, 3, replace=False)]
        rel = [d for d, ws in words.items() if len(ws & set(query)) >= 2]
        if rel:
            qid = str(len(topics) + 1)
            topics.append(f"<top>\n<num>{qid}</num><title>\n{' '.join(query)}\n</title>\n</top>\n")
            qrels += [f"{qid} 0 {d} 1\n" for d in rel]
    (dest / "topics.trec").write_text("".join(topics))
    (dest / "qrels").write_text("".join(qrels))
    return dest


def _close(r1: TrainingResult, r2: TrainingResult, budget: float) -> None:
    """Two ε-solutions of one problem: objectives within Σ C_k ε of each other, each above the
    other's dual (weak duality), and — the objective being 1-strongly convex in w — ‖w₁ − w₂‖ ≤
    √(2·gap₁) + √(2·gap₂) (‖w − w*‖² ≤ 2(P(w) − P*) ≤ 2·gap)."""
    assert abs(r1.primal - r2.primal) <= budget + 1e-9
    assert r1.primal >= r2.dual - 1e-9 and r2.primal >= r1.dual - 1e-9
    bound = np.sqrt(2 * max(r1.duality_gap, 0)) + np.sqrt(2 * max(r2.duality_gap, 0)) + 1e-9
    assert np.linalg.norm(r1.w - r2.w) <= bound


def _instance(seed=0, n_q=20, n=40, f=4, bins=5):
    """A fixed ranking problem: 20 queries × 40 candidates, 4 noisy features, 5-bin encoding."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(n_q + 1) * n
    raw = rng.normal(size=(n_q * n, f))
    labels = (raw[:, 0] + 0.5 * raw[:, 1] + rng.normal(size=n_q * n) > 1.2).astype(int)
    X = FeatureEncoder("bins", n_bins=bins).fit(raw, offsets).transform(raw, offsets)
    return X, labels, offsets


EPS = 1e-3


def run(seed, n_queries=8, n_cand=40, n_funcs=4):
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_queries):
        qid = f"{seed}-{q}"
        f = rng.normal(size=(n_cand, n_funcs))
        latent = f[:, 0] - f[:, 1] + 0.3 * rng.normal(size=n_cand)
        rel = latent > np.quantile(latent, 0.85)
        f[rng.random(f.shape) < 0.15] = np.nan
        for d in range(n_cand):
            rows.append({"qid": qid, "docno": f"d{d}", "features": f[d]})
            if rel[d]:
                qrels.append({"qid": qid, "docno": f"d{d}", "label": 1})
        qrels.append({"qid": qid, "docno": "unretrieved", "label": 1})
    return pd.DataFrame(rows).sample(frac=1, random_state=seed), pd.DataFrame(qrels)

