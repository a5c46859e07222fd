"""RunFeatures: several base runs as one candidate set with a score per base function (Yue et al. 2007 §4.1)."""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from pyterrier_svmmap.frames import FIRST_STAGE_ATTR

BaseItem = Union[pt.Transformer, pd.DataFrame]


def _scores(run: pd.DataFrame, who: str) -> np.ndarray:
    """The scores of a run, checked to be finite and one per (qid, docno); ``who`` begins the messages."""
    if run.duplicated(["qid", "docno"]).any():
        raise ValueError(f"{who} the same (qid, docno) more than once")
    scores = pd.to_numeric(run["score"], errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(scores).all():
        raise ValueError(f"{who} NaN or infinite scores")
    return scores


#: the feature name of a first stage's own score when RunFeatures gets a result frame
INPUT_FEATURE = "input"


class RunFeatures(pt.Transformer):
    """Union of base runs → one row per (qid, candidate) with ``features``, a score per base function (NaN: missed).

    Parameters
    ----------
    base : list or dict
        The base functions (PyTerrier transformers or run DataFrames of qid, docno, score), or a dict name → one.
    first : str, optional
        The base run that is the first stage, declared in ``attrs["first_stage"]`` (re-ranking: ``"input"``).
    verbose : bool, default False
        Show a progress bar over the base functions.
    """

    def __init__(self, base: Union[Sequence[BaseItem], Mapping[str, BaseItem]], first: Optional[str] = None,
                 verbose: bool = False):
        if isinstance(base, Mapping):
            self.names: List[str] = [str(k) for k in base.keys()]
            self.base: List[BaseItem] = list(base.values())
        else:
            self.base = list(base)
            self.names = [f"run{i}" if isinstance(b, pd.DataFrame) else f"{type(b).__name__}{i}"
                          for i, b in enumerate(self.base)]
        if not self.base:
            raise ValueError("RunFeatures needs at least one base function")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"base function names must be unique, got {self.names}; pass a dict name → base")
        for name, b in zip(self.names, self.base):
            if isinstance(b, pd.DataFrame):
                missing = {"qid", "docno", "score"} - set(b.columns)
                if missing:
                    raise ValueError(f"base run {name!r} lacks column(s) {sorted(missing)}")
            elif not isinstance(b, pt.Transformer):
                raise TypeError(f"base function {name!r} must be a PyTerrier Transformer or a run DataFrame, "
                                f"got {type(b).__name__}")
        if first is not None and first not in self.names:
            raise ValueError(f"first={first!r} is not the name of a base function; give one of {self.names}")
        self.first = first
        self.verbose = verbose

    def __repr__(self) -> str:
        items = ", ".join(f"{n!r}: {('<run of %d rows>' % len(b)) if isinstance(b, pd.DataFrame) else repr(b)}"
                          for n, b in zip(self.names, self.base))
        return f"RunFeatures({{{items}}}{'' if self.first is None else f', first={self.first!r}'})"

    def transform_inputs(self) -> List[List[str]]:
        """Topics, or a first stage's result frame."""
        return [["qid", "query"], ["qid", "query", "docno", "score"]]

    def transform_outputs(self, inp_cols: List[str]) -> List[str]:
        """The columns ``transform`` returns (``pt.inspect``).

        Parameters
        ----------
        inp_cols : list of str

        Returns
        -------
        list of str
        """
        return list(inp_cols) + [c for c in ("docno", "features") if c not in inp_cols]

    def __str__(self) -> str:
        return f"RunFeatures({', '.join(map(repr, self.names))})"

    def _runs(self, topics: pd.DataFrame):
        """Each base function's run on ``topics`` (qid, docno as str, score), checked, in order."""
        for name, item in pt.tqdm(list(zip(self.names, self.base)), desc="RunFeatures", unit="run",
                                  disable=not self.verbose):
            run = item[item["qid"].astype(str).isin(set(topics["qid"].astype(str)))] \
                if isinstance(item, pd.DataFrame) else item.transform(topics)
            missing = {"qid", "docno", "score"} - set(run.columns)
            if missing:
                raise ValueError(f"base function {name!r} returned no {sorted(missing)} column(s)")
            yield pd.DataFrame({"qid": run["qid"].astype(str).to_numpy(), "docno": run["docno"].astype(str).to_numpy(),
                                "score": _scores(run, f"base function {name!r} returned")})

    def _union(self, topics: pd.DataFrame):
        """The (qid, docno) of the base runs' candidates on ``topics`` and their scores (NaN: missed)."""
        allruns = pd.concat([run.assign(f=f) for f, run in enumerate(self._runs(topics))], ignore_index=True)
        codes, keys = pd.factorize(pd.MultiIndex.from_frame(allruns[["qid", "docno"]]))
        raw = np.full((len(keys), len(self.base)), np.nan)
        raw[codes, allruns["f"].to_numpy()] = allruns["score"].to_numpy()
        return keys, raw

    def _rerank(self, res: pd.DataFrame) -> pd.DataFrame:
        """Features for a first stage's candidates: its own score, then every base function's."""
        pt.validate.result_frame(res, context=self)
        score = _scores(res, "the input result frame has")
        qid, docno = res["qid"].astype(str).to_numpy(), res["docno"].astype(str).to_numpy()
        topics = res[pt.model.query_columns(res)].drop_duplicates("qid").assign(qid=lambda t: t["qid"].astype(str))
        keys, scores = self._union(topics)
        at = keys.get_indexer(pd.MultiIndex.from_arrays([qid, docno]))          # -1: no base run has it
        raw = np.full((len(res), 1 + len(self.base)), np.nan)
        raw[:, 0] = score
        raw[at >= 0, 1:] = scores[at[at >= 0]]
        out = res.drop(columns=[c for c in ("features",) if c in res.columns]).copy()
        out["features"] = list(raw)
        out.attrs["feature_names"] = [INPUT_FEATURE] + list(self.names)
        out.attrs[FIRST_STAGE_ATTR] = self.first if self.first is not None else INPUT_FEATURE
        return out

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        """Candidates with ``features``: from topics, the base runs' union by qid, best first by the first base
        function; from a first stage's result frame, its rows in order.

        Parameters
        ----------
        topics : DataFrame
            Topics (``qid``, ``query``), or a result frame (with ``docno``).

        Returns
        -------
        DataFrame
        """
        if "docno" in topics.columns:
            return self._rerank(topics)
        pt.validate.query_frame(topics, context=self)
        topics = topics.drop(columns=[c for c in ("docno", "score", "rank", "features") if c in topics.columns])
        topics = topics.drop_duplicates("qid").assign(qid=lambda t: t["qid"].astype(str))
        uniques, raw = self._union(topics)
        qid_order = {q: i for i, q in enumerate(topics["qid"])}
        cand = pd.DataFrame({"qid": uniques.get_level_values(0), "docno": uniques.get_level_values(1)})
        first = np.where(np.isnan(raw[:, 0]), -np.inf, raw[:, 0])
        order = np.lexsort((cand["docno"].to_numpy(), -first, cand["qid"].map(qid_order).to_numpy()))
        cand = cand.iloc[order].reset_index(drop=True)
        cand["features"] = list(raw[order])
        out = topics.merge(cand, on="qid", how="inner")
        out.attrs["feature_names"] = list(self.names)
        if self.first is not None:
            out.attrs[FIRST_STAGE_ATTR] = self.first
        return out
