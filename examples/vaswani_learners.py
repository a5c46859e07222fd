"""Several training losses and learners side by side in pt.Experiment — the notebook recipe.

    python examples/vaswani_learners.py [COLLECTION_DIR]

Every learner is a pt.Estimator on the same RunFeatures candidates: StructSVM with different structural
losses (SVM-map, SVM-NDCG without cutoff, SVM-COMBO with separate slacks), ApproxAP, and AdaRank. The
candidates are computed once for fitting; each pipeline ``features >> learner`` then serves
pt.Experiment. COLLECTION_DIR as in examples/vaswani_runs.py (default ../shared/data/vaswani).
"""
import sys

import numpy as np
import pyterrier as pt

from pyterrier_svmmap import AdaRank, ApproxAP, RunFeatures, StructSVM, SVMMap
from vaswani_runs import vaswani_runs

topics, qrels, runs = vaswani_runs(sys.argv[1:])         # BM25, DPH, PL2, QL on a PISA index, top 1000 each
features = RunFeatures(runs, first="bm25")                # BM25 is the first stage SVM-map starts from

rng = np.random.default_rng(0)
order = rng.permutation(len(topics))
train, valid, test = (topics.iloc[order[:10]], topics.iloc[order[10:15]], topics.iloc[order[15:]])
train_res, valid_res = features(train), features(valid)          # the candidates, computed once

C = [0.01, 0.1, 1, 10, 100, 1000]
learners = {
    "SVM-map": SVMMap(C=C),
    "SVM-NDCG-NC": StructSVM(C=C, loss="ndcg"),                 # 1 − nDCG without cutoff
    "SVM-COMBO": StructSVM(C=C, loss="combo", loss_params=dict(losses=["map", "ndcg"], slack="separate")),
    "ApproxAP": ApproxAP(alphas=[20, 100], betas=[10, 50], n_iter=50),
    "AdaRank": AdaRank(),
}
for name, learner in learners.items():
    learner.fit(train_res, qrels, valid_res, qrels)               # hyper-parameters chosen on `valid`

table = pt.Experiment([pt.Transformer.from_df(runs["bm25"])] + [features >> learner for learner in learners.values()],
                      test, qrels, eval_metrics=["map", "ndcg_cut_10", "recip_rank"], names=["BM25"] + list(learners),
                      baseline=0, round=4)
print(table.to_string(index=False))
