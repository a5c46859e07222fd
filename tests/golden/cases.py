"""The golden cases: configurations whose predictions must not change, computed from public entry points only.

``generate.py`` writes ``reference.json`` (and the saved models) with the code of one commit;
``test_golden.py`` recomputes every case with the code under test and compares bit for bit. Every case
returns a dict of float64 score arrays (and, where rows are reordered, the row keys), which
:func:`digest` turns into sha256 hashes plus a few numbers for diagnostics.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2] / "shared" / "data"
MQ2008 = SHARED / "letor" / "MQ2008" / "Fold1"
VASWANI = SHARED / "vaswani"
#: models saved by an earlier version, which this version must load and score as that version did
SAVED_MODELS = HERE / "saved_models"


# -- MQ2008 Fold1: arrays read by scikit-learn's reader (independent of the package) --------------------
def read_letor(path: Path):
    from sklearn.datasets import load_svmlight_file
    X, y, qid = load_svmlight_file(str(path), query_id=True, n_features=46)
    X = np.asarray(X.todense(), dtype=float)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    offsets = np.r_[starts, len(qid)].astype(np.int64)
    return X, np.asarray(y, dtype=float), offsets


def mq2008():
    return {part: read_letor(MQ2008 / f"{part}.txt") for part in ("train", "vali", "test")}


#: (name, StructSVMRanker parameters, whether validation data is given)
MQ_RANKER_CASES = [
    ("mq-raw-c1", dict(C=1.0, features="raw"), False),
    ("mq-bins-grid-valid", dict(C=[0.1, 1.0, 10.0]), True),
    ("mq-roc-raw", dict(C=1.0, loss="roc", features="raw"), False),
    ("mq-prior-best-bins", dict(C=[0.01, 1.0], prior="best", n_bins=20), True),
    ("mq-raw-grid-cv", dict(C=[0.1, 10.0], features="raw", cv=3), False),
    ("mq-auto-valid", dict(C=[1.0, 10.0], features="auto", n_bins=10), True),
    ("mq-ndcg10-minmax", dict(C=10.0, loss="ndcg@10", features="minmax"), False),
    ("mq-raw-unnormalised-c1", dict(C=1.0, features="raw", normalise=None), False),
    ("mq-default", dict(C="auto", features="auto", prior="best", selection="auto"), True),   # SVMMap()'s rule
]


def mq_ranker_case(data, params, with_valid):
    from pyterrier_svmmap import StructSVMRanker
    X, y, off = data["train"]
    valid = data["vali"] if with_valid else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = StructSVMRanker(**params).fit(X, y, off, valid=valid)
    Xt, yt, offt = data["test"]
    return dict(scores=model.decision_function(Xt, offt),
                ranking=model.ranking_scores(Xt, offt), coef=np.asarray(model.coef_, dtype=float)), \
        dict(C_=float(model.C_), features_=str(model.features_), selection_=str(model.selection_))


def svmmap_cli(*args, cwd=None) -> None:
    """``svmmap ARGS`` in a fresh interpreter (the console script's module, as installed)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    code = "import sys; from pyterrier_svmmap.cli import main; sys.exit(main(sys.argv[1:]))"
    subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, cwd=cwd, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def cli_case(tmp: Path, model_dir: Path):
    """``svmmap learn`` (a C grid chosen on vali, 20 bins) then ``svmmap classify`` of test."""
    svmmap_cli("learn", "-c", "0.1,1,10", "--bins", "20", "--valid", MQ2008 / "vali.txt", MQ2008 / "train.txt",
               model_dir)
    svmmap_cli("classify", MQ2008 / "test.txt", model_dir, tmp / "pred.txt")
    return (tmp / "pred.txt").read_bytes()


# -- Vaswani: PISA base runs, RunFeatures, the estimators -------------------------------------------------
def _iter_docs(path: Path):
    import re
    text = path.read_text(encoding="utf-8", errors="replace")
    for m in re.finditer(r"<DOC>\s*<DOCNO>\s*(.*?)\s*</DOCNO>(.*?)</DOC>", text, flags=re.S):
        yield {"docno": m.group(1), "text": " ".join(m.group(2).split())}


def _topics(path: Path):
    import re
    import pandas as pd
    text = path.read_text(encoding="utf-8")
    rows = [(m.group(1).strip(), " ".join(re.sub(r"[^A-Za-z0-9 ]", " ", m.group(2)).split()).lower())
            for m in re.finditer(r"<num>(.*?)</num>\s*<title>(.*?)</title>", text, flags=re.S)]
    return pd.DataFrame(rows, columns=["qid", "query"])


def _qrels(path: Path):
    import pandas as pd
    q = pd.read_csv(path, sep=r"\s+", header=None, names=["qid", "iter", "docno", "label"], dtype=str)
    q["label"] = q["label"].astype(int)
    return q[["qid", "docno", "label"]]


def vaswani(tmp: Path):
    """(features of train / valid / test topics, qrels): 10 training, 5 validation and 20 test queries,
    four PISA functions' top 100 each, unioned by RunFeatures."""
    import pyterrier as pt  # noqa: F401
    from pyterrier_pisa import PisaIndex
    from pyterrier_svmmap import RunFeatures
    PisaIndex(str(tmp / "vaswani.pisa"), stemmer="porter2", threads=1).index(_iter_docs(VASWANI / "docs.trec"))
    index = PisaIndex(str(tmp / "vaswani.pisa"), threads=1)
    base = {name: getattr(index, name)(num_results=100) for name in ("bm25", "dph", "pl2", "qld")}
    qrels = _qrels(VASWANI / "qrels")
    topics = _topics(VASWANI / "topics.trec")
    topics = topics[topics.qid.isin(set(qrels.qid))].reset_index(drop=True)
    order = np.random.default_rng(0).permutation(len(topics))
    parts = {"train": order[:10], "valid": order[10:15], "test": order[15:35]}
    rf = RunFeatures(base)
    return {k: rf.transform(topics.iloc[idx].reset_index(drop=True)) for k, idx in parts.items()}, qrels


def vaswani_estimators():
    """(name, factory) of the Vaswani cases, fitted with validation data."""
    from pyterrier_svmmap import AdaRank, ApproxAP, StructSVM, SVMMap
    # the reference code's defaults, given explicitly since the estimators' default became selection="auto"
    # (raw, prior="best"): these cases pin the paper's protocol
    paper = dict(features="bins", prior=None, selection="validation")
    return [
        ("va-svmmap-bins-grid", lambda: SVMMap(C=[0.1, 1.0, 10.0, 100.0], n_bins=20, **paper)),
        ("va-svmmap-raw-c1", lambda: SVMMap(C=1.0, **dict(paper, features="raw"))),
        ("va-roc-bins", lambda: StructSVM(loss="roc", C=[1.0, 10.0], n_bins=20, **paper)),
        ("va-prior-best-raw", lambda: SVMMap(C=[0.01, 1.0], **dict(paper, features="raw", prior="best"))),
        ("va-approx-ap", lambda: ApproxAP(n_iter=30, alphas=[10.0, 100.0], betas=[10.0])),
        ("va-adarank", lambda: AdaRank()),
        ("va-svmmap-default", lambda: SVMMap()),
    ]


def frame_arrays(frame):
    """A transform's output as arrays: scores in row order and the (qid, docno, rank) keys' hash input."""
    keys = "\n".join(f"{q}\t{d}\t{r}" for q, d, r in zip(frame.qid, frame.docno, frame["rank"])).encode()
    return np.asarray(frame["score"], dtype=float), keys


def ap_mean(frame, qrels) -> float:
    import ir_measures
    from ir_measures import AP
    run = frame[["qid", "docno", "score"]].rename(columns={"qid": "query_id", "docno": "doc_id"})
    q = qrels[qrels.qid.isin(set(frame.qid))]                     # AP averaged over the run's queries
    q = q.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return float(ir_measures.calc_aggregate([AP(rel=1)], q, run)[AP(rel=1)])


def digest(values) -> dict:
    """sha256 of the float64 bytes (or of bytes as they are), with the first values and length."""
    if isinstance(values, (bytes, bytearray)):
        return dict(sha256=hashlib.sha256(values).hexdigest(), n=len(values))
    a = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
    return dict(sha256=hashlib.sha256(a.tobytes()).hexdigest(), n=int(a.size),
                head=[float(x) for x in a.ravel()[:4]])


#: keys of a saved model's JSON that hold timings or versions, not the model
VOLATILE = ("seconds", "version", "created", "time")


def stable_json(value):
    """A model.json without its timings and versions (what must not change between two runs)."""
    if isinstance(value, dict):
        return {k: stable_json(v) for k, v in value.items() if not any(t in k for t in VOLATILE)}
    if isinstance(value, list):
        return [stable_json(v) for v in value]
    return value


def json_differences(expected, actual, where: str = "") -> list:
    """Where two model.json trees differ (``/state/path[1]/C: expected 1.0, got 10.0``), exactly."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{where}/{k}: missing" for k in expected if k not in actual]
        out += [f"{where}/{k}: unexpected" for k in actual if k not in expected]
        for k in expected.keys() & actual.keys():
            out += json_differences(expected[k], actual[k], f"{where}/{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in json_differences(e, a, f"{where}[{i}]")]
    return [] if type(expected) is type(actual) and expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]


def model_json(path: Path) -> dict:
    """A model directory's JSON without its timings and versions, its training file named from the shared
    data's folder on (``letor/MQ2008/Fold1/train.txt``: where that folder is differs between machines)."""
    import json
    meta = stable_json(json.loads((path / "model.json").read_text()))
    training = meta.get("state", {}).get("training", {})
    if isinstance(training.get("source"), str):
        training["source"] = training["source"].replace("\\", "/").rpartition("/shared/data/")[2]
    return meta


def model_dir_digest(path: Path) -> dict:
    """Hashes of a model directory's arrays (weights.npz); its JSON is compared by ``json_differences``."""
    out = {}
    with np.load(path / "weights.npz", allow_pickle=False) as z:
        for k in sorted(z.files):
            out[f"npz:{k}"] = digest(z[k])["sha256"]
    return out


def compute(tmp: Path, vaswani_data=None) -> dict:
    """Every case's digests (and the model.json that ``svmmap learn`` writes, as ``mq-cli``'s ``model_json``);
    ``vaswani_data``: :func:`vaswani`'s (frames, qrels) when already built."""
    out = {}
    data = mq2008()
    for name, params, with_valid in MQ_RANKER_CASES:
        arrays, info = mq_ranker_case(data, params, with_valid)
        out[name] = dict(info, **{k: digest(v) for k, v in arrays.items()})
    cli_model = tmp / "mq-cli"
    pred = cli_case(tmp, cli_model)
    out["mq-cli"] = dict(predictions=digest(pred), model=model_dir_digest(cli_model),
                         head=pred.decode().splitlines()[:3], model_json=model_json(cli_model))
    frames, qrels = vaswani_data if vaswani_data is not None else vaswani(tmp)
    out["va-features"] = {k: digest(np.stack(f["features"].to_numpy()).ravel()) for k, f in frames.items()}
    for name, factory in vaswani_estimators():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = factory().fit(frames["train"], qrels, frames["valid"], qrels)
        res = model.transform(frames["test"])
        scores, keys = frame_arrays(res)
        out[name] = dict(transform=digest(scores), rows=digest(keys), map=ap_mean(res, qrels))
        if hasattr(model, "coef_"):
            out[name]["coef"] = digest(model.coef_)
    return out


def reloaded(tmp: Path, vaswani_data=None) -> dict:
    """The models the reference code saved, loaded and scored by the code under test: ``vaswani-svmmap``
    (by ``SVMMap.load`` and ``pt.Artifact.load``) on the Vaswani test frame, ``mq-cli`` by ``svmmap classify``
    (``saved_models/``, written by the commit that ``saved_models/expected.json`` names)."""
    import pyterrier as pt
    from pyterrier_svmmap import SVMMap
    frames, _ = vaswani_data if vaswani_data is not None else vaswani(tmp)
    out = {}
    for how, model in (("load", SVMMap.load(SAVED_MODELS / "vaswani-svmmap")),
                       ("artifact", pt.Artifact.load(str(SAVED_MODELS / "vaswani-svmmap")))):
        out[how] = dict(type=type(model).__name__, transform=digest(frame_arrays(model.transform(frames["test"]))[0]))
    svmmap_cli("classify", MQ2008 / "test.txt", SAVED_MODELS / "mq-cli", tmp / "pred.txt")
    out["classify"] = digest((tmp / "pred.txt").read_bytes())
    return out


#: numpy's OpenBLAS picks its kernels by CPU (DYNAMIC_ARCH) and cuts its matrix products by thread; each
#: kernel and each cut rounds in its own order, which moves a fitted model's last bits. The golden cases run
#: with the kernel and the thread count the reference was computed with (``OPENBLAS_CORETYPE`` is honoured
#: on x86-64); the other thread settings a parent process may carry (Dask's nannies write
#: ``OMP_NUM_THREADS=1`` and others into ``os.environ``) are left out.
REFERENCE_BLAS_CORE = "Haswell"
REFERENCE_BLAS_THREADS = "2"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")


def compute_in_fresh_interpreter(tmp: Path) -> dict:
    """``compute`` and ``reloaded`` in a child interpreter with the reference's BLAS kernel and threads."""
    import json
    out = tmp / "computed.json"
    code = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import cases; "
            "tmp = Path(sys.argv[2]); (tmp / 'a').mkdir(); va = cases.vaswani(tmp); "
            "out = cases.compute(tmp / 'a', va); out['reloaded'] = cases.reloaded(tmp, va); "
            "Path(sys.argv[3]).write_text(json.dumps(out))")
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(OPENBLAS_CORETYPE=REFERENCE_BLAS_CORE, OPENBLAS_NUM_THREADS=REFERENCE_BLAS_THREADS, PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-c", code, str(HERE), str(tmp), str(out)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        raise RuntimeError(f"the golden cases failed to compute:\n{done.stdout[-4000:]}")
    return json.loads(out.read_text())
