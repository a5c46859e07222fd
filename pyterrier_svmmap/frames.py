"""PyTerrier frames ⇄ the numeric core's arrays, checked with messages that say what to do."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import pyterrier as pt

from pyterrier_svmmap.queries import Queries
from pyterrier_svmmap.string_codes import factorised_string_codes
from pyterrier_svmmap.user_warnings import warn


@dataclass
class Candidates(Queries):
    """A result frame as :class:`~pyterrier_svmmap.queries.Queries`, rows by qid then docno, with the rows
    (``frame``) and the docnos' order codes (``docno_codes``)."""
    frame: pd.DataFrame = None
    docno_codes: Optional[np.ndarray] = None
    #: tie_base_order per tie-break function, computed on first use (not copied by dataclasses.replace)
    _tie_orders: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def tie_base_order(self, function: int) -> np.ndarray:
        """:func:`~pyterrier_svmmap.ties.tie_base_order` of these rows with tie-break function ``function``, cached."""
        if function not in self._tie_orders:
            from pyterrier_svmmap.ties import tie_base_order
            docnos = self.frame["docno"].to_numpy() if self.docno_codes is None else None
            self._tie_orders[function] = tie_base_order(self.offsets, self.raw[:, function], docnos,
                                                        self.docno_codes)
        return self._tie_orders[function]

    def subset(self, query_mask: np.ndarray) -> "Candidates":
        rows = np.repeat(np.asarray(query_mask, dtype=bool), np.diff(self.offsets))
        return dataclasses.replace(super().subset(query_mask), frame=self.frame.iloc[np.flatnonzero(rows)],
                                   docno_codes=None if self.docno_codes is None else self.docno_codes[rows])


def align_feature_names(raw: np.ndarray, names: Optional[Sequence[str]], trained: Sequence[str]) -> np.ndarray:
    """The columns of ``raw``, named ``names`` (None: as they are), in the order of the model's ``trained`` names."""
    if names is None or len(raw) == 0:
        return raw
    names, trained = [str(n) for n in names], [str(n) for n in trained]
    if names == trained:
        return raw
    if sorted(names) == sorted(trained) and len(set(names)) == len(names):
        return raw[:, [names.index(n) for n in trained]]
    raise ValueError(f"the input's features are {names} but the model was trained on {trained}; use the same "
                     "base functions (same RunFeatures names) as in training — features are matched by name")


def check_qrels(qrels: pd.DataFrame, rel: Optional[float] = None) -> pd.DataFrame:
    """qrels as qid, docno (str) and label (negatives as 0), one row per pair (the last label, as trec_eval);
    fractional labels are warned of when the relevance threshold ``rel`` is 1 (the default)."""
    if not isinstance(qrels, pd.DataFrame):
        raise TypeError(f"qrels must be a DataFrame with columns qid, docno, label; got {type(qrels).__name__}")
    missing = [c for c in ("qid", "docno", "label") if c not in qrels.columns]
    if missing:
        hint = " (ir_datasets-style names? rename query_id→qid, doc_id→docno, relevance→label)" \
            if {"query_id", "doc_id", "relevance"} & set(qrels.columns) else ""
        raise ValueError(f"qrels lack column(s) {missing}; found {list(qrels.columns)}{hint}")
    labels = pd.to_numeric(qrels["label"], errors="coerce")
    if labels.isna().any():
        bad = qrels["label"][labels.isna()].iloc[0]
        raise ValueError(f"qrels column 'label' must be numeric; found {bad!r}")
    if (labels < 0).any():
        negative = labels[labels < 0]
        warn(f"{len(negative)} qrels have negative labels (e.g. {negative.iloc[0]:g}); they count as 0: "
             "non-relevant, with no gain, as trec_eval counts them")
        labels = labels.clip(lower=0)
    out = pd.DataFrame({"qid": qrels["qid"].astype(str).to_numpy(), "docno": qrels["docno"].astype(str).to_numpy(),
                        "label": labels.to_numpy(dtype=float)})
    dup = out.duplicated(["qid", "docno"], keep=False)
    if dup.any():
        labels_per_pair = out[dup].groupby(["qid", "docno"])["label"].nunique()
        conflicts = labels_per_pair[labels_per_pair > 1]
        if len(conflicts):
            q, d = conflicts.index[0]
            warn(f"{len(conflicts)} (qid, docno) pairs have different labels in the qrels (e.g. qid {q!r} "
                 f"docno {d!r}); the last label of each is used, as trec_eval and ir_measures do")
        out = out.drop_duplicates(["qid", "docno"], keep="last").reset_index(drop=True)
    fractional = out["label"][out["label"] != np.round(out["label"])]
    if len(fractional) and rel == 1:
        x = float(fractional.iloc[0])
        warn(f"{len(fractional)} qrels have fractional labels (e.g. {x:g}); labels are relevance grades 0, 1, 2, "
             f"...: a label >= rel (default 1) counts as relevant, so {x:g} counts as "
             f"{'relevant' if x >= rel else 'non-relevant'}; give rel= to set the threshold")
    return out


def _flat_features(cells: np.ndarray) -> Optional[np.ndarray]:
    """The (n, F) float matrix of a ``features`` column of flat numeric arrays of one length; None for anything else."""
    try:
        lengths = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
        flat = np.concatenate(cells)
    except (TypeError, ValueError):
        return None
    if flat.ndim != 1 or (lengths != lengths[0]).any() or not _numeric(flat):
        return None
    return flat.astype(float).reshape(len(cells), int(lengths[0]))


def _numeric(cell) -> bool:
    """Whether ``cell`` is numbers (text that reads as numbers is not)."""
    a = np.asarray(cell)
    try:
        a.astype(float)
    except (TypeError, ValueError):
        return False
    return a.dtype.kind not in "USV"


def _diagnosed_features(features: pd.Series, qid_str: np.ndarray, docno: pd.Series) -> np.ndarray:
    """The (n, F) matrix of any other ``features`` column; ValueError naming the first row that is wrong."""
    numeric = features.map(_numeric).to_numpy()
    if not numeric.all():
        r = int(np.argmin(numeric))
        shown = repr(features.iloc[r])
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ValueError(f"features of qid={qid_str[r]!r} docno={docno.iloc[r]!r} is {shown}, not "
                         "numbers: the features column must hold numeric arrays, one float per base function "
                         "(e.g. np.array([12.1, 8.3])); convert text with "
                         "res['features'] = res['features'].map(lambda s: np.array(s.split(), dtype=float))")
    ndims = features.map(np.ndim).to_numpy()
    if (ndims > 1).any():
        r = int(np.argmax(ndims > 1))
        raise ValueError(f"features of qid={qid_str[r]!r} docno={docno.iloc[r]!r} has shape "
                         f"{np.shape(features.iloc[r])}; each row needs a flat array with one value per "
                         "base function")
    lengths = features.map(np.size).to_numpy()
    if (lengths != lengths[0]).any():
        raise ValueError(f"rows have features of different lengths ({sorted(set(lengths.tolist()))}); "
                         "every row needs one value per base function")
    return np.stack(features.to_numpy()).astype(float).reshape(len(features), -1)


#: the frame attribute that names the first stage among ``attrs["feature_names"]`` (set by RunFeatures)
FIRST_STAGE_ATTR = "first_stage"


def first_stage_column(attrs: dict, feature_names: Optional[Sequence[str]] = None, raw: Optional[np.ndarray] = None,
                       score: Optional[np.ndarray] = None) -> Optional[int]:
    """The frame's first stage: the column ``attrs["first_stage"]`` declares, else the first equal to ``score``."""
    first = attrs.get(FIRST_STAGE_ATTR)
    if first is None:
        if raw is None or score is None or not len(raw):
            return None
        same = np.flatnonzero((raw == score[:, None]).all(axis=0))
        return int(same[0]) if len(same) else None
    names = list(feature_names if feature_names is not None else attrs.get("feature_names") or [])
    if first not in names:
        raise ValueError(f"the frame declares the first stage {first!r} (attrs['first_stage']), which is not one "
                         f"of its features {names}; name one of them, e.g. RunFeatures(base, first=...)")
    return names.index(first)


def candidates_from_frame(res: pd.DataFrame, qrels: Optional[pd.DataFrame] = None,
                          n_functions: Optional[int] = None, context=None, rel: float = 1.0,
                          feature_names: Optional[Sequence[str]] = None) -> Candidates:
    """Validate a result frame with ``features`` and turn it into :class:`Candidates`; with ``qrels``, labels joined
    on (qid, docno) (unjudged: 0) and ``n_relevant`` counted at ``rel``; ``feature_names`` aligns the features."""
    missing = [c for c in ("qid", "docno", "features") if c not in getattr(res, "columns", ())]
    if missing:
        who = type(context).__name__ if context is not None else "the learner"
        raise ValueError(f"{who} needs candidates with columns qid, docno and features (one score per base "
                         f"function), but the frame lacks {missing} (it has {list(getattr(res, 'columns', []))}); "
                         "put RunFeatures(...) before it, e.g. RunFeatures({'bm25': ..., 'dph': ...}) >> "
                         f"{who}()")
    pt.validate.result_frame(res, extra_columns=["features"], context=context)
    res = res.reset_index(drop=True)
    score = None
    if "score" in res.columns and len(res):
        score = pd.to_numeric(res["score"], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(score).all():
            r = int(np.flatnonzero(~np.isfinite(score))[0])
            raise ValueError(f"column 'score' is {res['score'].iloc[r]} for qid={res['qid'].iloc[r]!r} "
                             f"docno={res['docno'].iloc[r]!r}: a retriever's score must be a finite number "
                             "(only features may be NaN, for a base function that missed the document)")
    # qid and docno factorised once: duplicates on the raw values, the canonical order on their strings
    raw_q, raw_q_uniques = pd.factorize(res["qid"], use_na_sentinel=False)
    raw_d, raw_d_uniques = pd.factorize(res["docno"], use_na_sentinel=False)
    dup = pd.Index(raw_q.astype(np.int64) * len(raw_d_uniques) + raw_d).duplicated()
    if dup.any():
        row = res.loc[int(np.argmax(dup)), ["qid", "docno"]]
        raise ValueError(f"{int(dup.sum())} duplicate (qid, docno) rows, e.g. qid={row.qid!r} "
                         f"docno={row.docno!r}; each candidate must appear once per query "
                         "(deduplicate, e.g. res.drop_duplicates(['qid', 'docno']))")
    # by query, then by docno: a canonical order, so that no learner depends on the frame's row order
    q_code, q_strings = factorised_string_codes(raw_q, raw_q_uniques)
    d_code, d_strings = factorised_string_codes(raw_d, raw_d_uniques)
    order = np.lexsort((d_code, q_code))
    # stacked in the frame's own row order (as its arrays lie in memory), then gathered
    flat = _flat_features(res["features"].to_numpy()) if len(res) else None
    res = res.iloc[order].reset_index(drop=True)
    q_code, d_code = q_code[order], d_code[order]
    qid_str = q_strings[q_code]
    if flat is not None:
        raw = flat[order]
    elif len(res):
        raw = _diagnosed_features(res["features"], qid_str, res["docno"])
    else:
        raw = np.zeros((0, n_functions or 0))
    if np.isinf(raw).any():
        r, c = np.argwhere(np.isinf(raw))[0]
        raise ValueError(f"feature {c} is infinite for qid={qid_str[r]!r} docno={res['docno'].iloc[r]!r}; "
                         "features must be finite (NaN marks a document a base function did not retrieve)")
    if feature_names is not None:
        raw = align_feature_names(raw, res.attrs.get("feature_names"), feature_names)
    if n_functions is not None and len(res) and raw.shape[1] != n_functions:
        raise ValueError(f"the model was trained with {n_functions} features per row but these rows have "
                         f"{raw.shape[1]}; use the same RunFeatures (same base functions) as in training")
    qids = q_strings                                   # every query has rows: its code is its index
    offsets = np.searchsorted(q_code, np.arange(len(qids) + 1)).astype(np.int64)
    cands = Candidates(raw=raw, labels=None, offsets=offsets, qids=qids, frame=res, docno_codes=d_code,
                       reference=first_stage_column(res.attrs, feature_names, raw,
                                                    None if score is None else score[order]))
    if qrels is not None:
        qrels = check_qrels(qrels, rel)                # one row per (qid, docno), the last label kept
        # the qrels' (qid, docno) as the candidates' codes (-1: no such qid / docno among the candidates)
        qi = pd.Index(q_strings).get_indexer(qrels["qid"].to_numpy())
        di = pd.Index(d_strings).get_indexer(qrels["docno"].to_numpy())
        n_docs = max(len(d_strings), 1)
        at = pd.Index(q_code.astype(np.int64) * n_docs + d_code).get_indexer(
            np.where((qi >= 0) & (di >= 0), qi.astype(np.int64) * n_docs + di, -1))     # -1: not a candidate
        cands.labels = np.zeros(len(res))
        cands.labels[at[at >= 0]] = qrels["label"].to_numpy()[at >= 0]
        # per query: relevant documents and qrels rows of any label
        known = qi >= 0
        relevant = known & (qrels["label"].to_numpy() >= rel)
        cands.n_relevant = np.bincount(qi[relevant], minlength=len(qids)).astype(float)
        absent = qids[np.bincount(qi[known], minlength=len(qids)) == 0]
        if len(absent):
            warn(f"{len(absent)} of {len(qids)} queries have no qrels at all (e.g. qid "
                 f"{absent[0]!r}); all their candidates count as non-relevant")
    return cands
