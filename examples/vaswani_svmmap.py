"""SVM-map after PISA retrievers on Vaswani, compared with pt.Experiment — the notebook recipe.

    python examples/vaswani_svmmap.py [COLLECTION_DIR]

COLLECTION_DIR holds docs.trec, topics.trec and qrels (default: ../shared/data/vaswani next to the
repository); examples/vaswani_runs.py builds the index and the base runs.
"""
import sys

import numpy as np
import pyterrier as pt

from pyterrier_svmmap import RunFeatures, SVMMap
from vaswani_runs import vaswani_runs

# 1. four base retrieval functions on a PISA index (porter2 stemming), top 1000 each
topics, qrels, runs = vaswani_runs(sys.argv[1:])

# 2. the re-ranker: union of the base runs -> SVM-map over binned scores (|K_f| = 50)
# (the paper's configuration, given explicitly: SVMMap() is the package's default model selection)
svmmap = RunFeatures(runs) >> SVMMap(C=[0.01, 0.1, 1, 10, 100], features="bins", n_bins=50, prior=None,
                                     selection="validation")

# 3. train on 10 queries, pick C on 5 (the paper's protocol), test on the rest
rng = np.random.default_rng(0)
order = rng.permutation(len(topics))
train, valid, test = (topics.iloc[order[:10]], topics.iloc[order[10:15]], topics.iloc[order[15:]])
svmmap.fit(train, qrels, valid, qrels)

table = pt.Experiment([pt.Transformer.from_df(runs["bm25"]), pt.Transformer.from_df(runs["dph"]), svmmap], test,
                      qrels, eval_metrics=["map", "ndcg_cut_10", "recip_rank"], names=["BM25", "DPH", "SVM-map"],
                      baseline=0, round=4)
print(table.to_string(index=False))
