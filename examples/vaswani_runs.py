"""The examples' shared start: the Vaswani collection, a PISA index of it in a temporary folder (removed when
done) and four base runs on every judged topic, with PISA's native progress sent to a log in that folder.

    topics, qrels, runs = vaswani_runs(sys.argv[1:])

COLLECTION_DIR (the first argument) holds docs.trec, topics.trec and qrels; default ../shared/data/vaswani
next to the repository. With internet, ir_datasets has the same collection:
    dataset = pt.get_dataset("irds:vaswani"); topics, qrels = dataset.get_topics(), dataset.get_qrels()
"""
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

import pandas as pd
from pyterrier_pisa import PisaIndex

from pyterrier_svmmap.experiments.reproduce.base_runs import load_directory, redirect_native_output

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "vaswani"


def vaswani_runs(argv: List[str]) -> Tuple[pd.DataFrame, pd.DataFrame, Dict[str, pd.DataFrame]]:
    """(judged topics, qrels, {name: run}) of BM25, DPH, PL2 and QL over a porter2-stemmed PISA index, top
    1000 per topic: the base functions, as runs that RunFeatures and pt.Transformer.from_df take."""
    collection = load_directory(argv[0] if argv else DEFAULT)
    topics = collection.judged_topics()
    with tempfile.TemporaryDirectory(prefix="vaswani-pisa-") as tmp:
        with redirect_native_output(Path(tmp) / "pisa.log"):
            index = PisaIndex(str(Path(tmp) / "index"), stemmer="porter2", text_field="text")
            index.index(collection.docs())
            retrievers = {"bm25": index.bm25(), "dph": index.dph(), "pl2": index.pl2(), "qld": index.qld()}
            runs = {name: retriever(topics) for name, retriever in retrievers.items()}
    return topics, collection.qrels, runs
