"""Several training losses and learners side by side in pt.Experiment — the notebook recipe.

    python examples/vaswani_learners.py [COLLECTION_DIR]

Every learner is a pt.Estimator on the same RunFeatures candidates: StructSVM with different structural
losses (SVM-map, SVM-NDCG without cutoff, SVM-COMBO with separate slacks), ApproxAP, and AdaRank. The
candidates are computed once for fitting; each pipeline ``features >> learner`` then serves
pt.Experiment. COLLECTION_DIR as in examples/vaswani_svmmap.py (default ../shared/data/vaswani).
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyterrier as pt
from pyterrier_pisa import PisaIndex

from pyterrier_svmmap import AdaRank, ApproxAP, RunFeatures, StructSVM, SVMMap
from pyterrier_svmmap.experiments.reproduce.collection import load_directory

here = Path(__file__).resolve().parent
collection = load_directory(sys.argv[1] if len(sys.argv) > 1 else here.parents[1] / "shared" / "data" / "vaswani")
topics, qrels = collection.judged_topics(), collection.qrels

index_dir = Path(tempfile.mkdtemp()) / "vaswani.pisa"
PisaIndex(str(index_dir), stemmer="porter2").index(collection.docs())
index = PisaIndex(str(index_dir))
base = {"bm25": index.bm25(), "dph": index.dph(), "pl2": index.pl2(), "qld": index.qld()}
features = RunFeatures(base)

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

print(pt.Experiment([base["bm25"]] + [features >> learner for learner in learners.values()], test, qrels,
                    eval_metrics=["map", "ndcg_cut_10", "recip_rank"],
                    names=["BM25"] + list(learners), baseline=0))
