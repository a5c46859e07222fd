"""SVM-map after PISA retrievers on Vaswani, compared with pt.Experiment — the notebook recipe.

    python examples/vaswani_svmmap.py [COLLECTION_DIR]

COLLECTION_DIR holds docs.trec, topics.trec and qrels (default: ../shared/data/vaswani next to the
repository). With internet, use the ir_datasets copy instead:
    dataset = pt.get_dataset("irds:vaswani"); topics, qrels = dataset.get_topics(), dataset.get_qrels()
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyterrier as pt
from pyterrier_pisa import PisaIndex

from pyterrier_svmmap import RunFeatures, SVMMap
from pyterrier_svmmap.experiments.reproduce.collection import load_directory

here = Path(__file__).resolve().parent
collection = load_directory(sys.argv[1] if len(sys.argv) > 1 else here.parents[1] / "shared" / "data" / "vaswani")
topics, qrels = collection.judged_topics(), collection.qrels

# 1. a PISA index (porter2 stemming) and four base retrieval functions, top 1000 each
index_dir = Path(tempfile.mkdtemp()) / "vaswani.pisa"
PisaIndex(str(index_dir), stemmer="porter2").index(collection.docs())
index = PisaIndex(str(index_dir))
base = {"bm25": index.bm25(), "dph": index.dph(), "pl2": index.pl2(), "qld": index.qld()}

# 2. the re-ranker: union of the base runs -> SVM-map over binned scores (|K_f| = 50)
# (the paper's configuration, given explicitly: SVMMap() is the package's default model selection)
svmmap = RunFeatures(base) >> SVMMap(C=[0.01, 0.1, 1, 10, 100], features="bins", n_bins=50, prior=None,
                                     selection="validation")

# 3. train on 10 queries, pick C on 5 (the paper's protocol), test on the rest
rng = np.random.default_rng(0)
order = rng.permutation(len(topics))
train, valid, test = (topics.iloc[order[:10]], topics.iloc[order[10:15]], topics.iloc[order[15:]])
svmmap.fit(train, qrels, valid, qrels)

print(pt.Experiment([base["bm25"], base["dph"], svmmap], test, qrels,
                    eval_metrics=["map", "ndcg_cut_10", "recip_rank"],
                    names=["BM25", "DPH", "SVM-map"], baseline=0))
