"""The results tables — all systems (Yue et al. 2007, Table 6 form, :func:`format_table`), the learners against
SVM-map (their Table 9, :func:`format_learner_table`), the test measures per training loss (Chakrabarti et al.
2008, Figure 9, :func:`format_loss_table`), the three in ``OUT/tables.md`` (:func:`tables_markdown`) — and
``OUT/results.json`` (:func:`results_dict`).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import pandas as pd


def best_base(summary: pd.DataFrame) -> Optional[str]:
    base = summary[summary["kind"] == "base"]
    return None if base.empty else str(base.sort_values("map", ascending=False, kind="stable").iloc[0]["name"])


def format_table(summary: pd.DataFrame, reference: Optional[str], title: str = "") -> str:
    """Learned systems, fusions, the chosen base, then base functions by MAP, with the reference's W/L."""
    s = pd.concat([summary[summary["kind"] == k] for k in ("learned", "unsupervised", "chosen")]
                  + [summary[summary["kind"] == "base"].sort_values("map", ascending=False, kind="stable")])
    width = max([len("system")] + [len(n) for n in s["name"]])
    kw = max([len("kind")] + [len(k) for k in s["kind"]])
    head = (f"{'system':<{width}}  {'kind':<{kw}}  {'MAP':>6}  {'nDCG@10':>7}  {'RR@10':>6}  "
            + (f"W/L vs {reference}" if reference else "W/L"))
    rows = [f"{r['name']:<{width}}  {r['kind']:<{kw}}  {r['map']:6.4f}  {r['ndcg_cut_10']:7.4f}  "
            f"{r['recip_rank_10']:6.4f}  {_wl(r, reference)}" for _, r in s.iterrows()]
    note = (f"W/L: queries where {reference} has the higher / lower AP (averaged over the trials that tested the "
            "query); ** p < 0.05, two-sided Wilcoxon signed-rank." if reference else
            "no learned reference system: W/L not computed.")
    return _table(title, head, rows, [note], s)


def _table(title: str, head: str, rows: list, notes: list, s: pd.DataFrame) -> str:
    """``title``, ``head`` underlined, the ``rows``, a blank line, the ``notes`` and those on the chosen base and
    the fusions when rows of theirs are in ``s``."""
    kinds = [note for kind, note in (("chosen", _CHOSEN_NOTE), ("unsupervised", _FUSION_NOTE))
             if (s["kind"] == kind).any()]
    return "\n".join(([title] if title else []) + [head, "-" * len(head), *rows, "", *notes, *kinds])


_CHOSEN_NOTE = ("base-chosen-on-training: in each trial, the base function with the best MAP on its "
                "training and validation queries, evaluated on its test queries.")
_FUSION_NOTE = ("unsupervised: fusions of the same base functions without judgments — fusion-rrf, reciprocal "
                "rank fusion (k = 60); fusion-combsum, CombSUM of per-query min-max normalised scores.")


def _wl(r, reference: Optional[str]) -> str:
    if reference is None or r["name"] == reference:
        return "-"
    return f"{int(r['wins'])}/{int(r['losses'])}" + (" **" if r["p_value"] < 0.05 else "")


def _learned(summary: pd.DataFrame) -> pd.DataFrame:
    """The learned systems, the fusions and the chosen base, by MAP."""
    return summary[summary["kind"].isin(["learned", "unsupervised", "chosen"])].sort_values(
        "map", ascending=False, kind="stable")


def format_learner_table(summary: pd.DataFrame, reference: Optional[str], title: str = "") -> str:
    """Table 9 form: every learned system's MAP and W/L against ``reference``, fit seconds and gains."""
    s = _learned(summary)
    width = max([len("learner")] + [len(n) for n in s["name"]])
    gains = "gain_vs_chosen" in s.columns and s["gain_vs_chosen"].notna().any()
    firsts = "gain_vs_first" in s.columns and s["gain_vs_first"].notna().any()
    head = (f"{'learner':<{width}}  {'MAP':>6}  W/L vs {reference or '-'}  fit s"
            + ("  gain vs chosen base (W/L)" if gains else "") + ("  gain vs first stage (W/L)" if firsts else ""))
    rows = []
    for _, r in s.iterrows():
        fit = r.get("fit_seconds", float("nan"))
        fit = f"{fit:.2f}" if isinstance(fit, float) and math.isfinite(fit) else "-"
        wl = f"{_wl(r, reference):<{len('W/L vs ') + len(reference or '-')}}"
        line = f"{r['name']:<{width}}  {r['map']:6.4f}  {wl}  {fit:>5}"
        for shown, gain, versus in ((gains, "gain_vs_chosen", "vs_chosen"), (firsts, "gain_vs_first", "vs_first")):
            g = r.get(gain, float("nan")) if shown else float("nan")
            if isinstance(g, float) and math.isfinite(g):
                line += f"  {_gain(g, r['map'], r[versus]):<{GAIN_WIDTH}}"
            elif shown:
                line += f"  {'-':<{GAIN_WIDTH}}"
        rows.append(line.rstrip())
    notes = [f"W/L: queries where {reference} has the higher / lower AP than the learner (AP averaged over the "
             "trials that tested the query); ** p < 0.05, two-sided Wilcoxon signed-rank; fit s: median seconds "
             "per fit." if reference else "no reference system: W/L not computed."]
    if gains:
        notes.append("gain vs chosen base: the learner's MAP minus base-chosen-on-training's, and the queries "
                     "where the learner has the higher / lower AP than it (** p < 0.05, Wilcoxon).")
    if firsts:
        notes.append("gain vs first stage: the same against the first stage (--first-stage), the ranking a user "
                     "would have without learning.")
    return _table(title, head, rows, notes, s)


#: the width of a "gain vs ..." column of the learners' table (``+0.0123 (+4.1%, 20/10 **)`` and a margin)
GAIN_WIDTH = 26


def _gain(g: float, value: float, versus: dict) -> str:
    """``+0.0123 (+4.1%, 20/10 **)``: a MAP gain, relative to the other's MAP, and the W/L of ``versus``."""
    return (f"{g:+.4f} ({100 * g / (value - g):+.1f}%, {versus['wins']}/{versus['losses']}"
            + (" **" if versus["p_value"] < 0.05 else "") + ")")


def format_loss_table(summary: pd.DataFrame, title: str = "") -> str:
    """Figure 9 form: rows = training loss / learner, columns = test MAP, nDCG@10, RR@10; * each column's best."""
    s = _learned(summary)
    cols = [("map", "MAP"), ("ndcg_cut_10", "nDCG@10"), ("recip_rank_10", "RR@10")]
    best = {c: s[c].max() for c, _ in cols} if len(s) else {}
    width = max([len("training loss / learner")] + [len(n) for n in s["name"]])
    rows = [f"{r['name']:<{width}}" + "".join(f"  {(f'{r[c]:.4f}' + ('*' if r[c] == best[c] else ' ')):>8}"
                                              for c, _ in cols) for _, r in s.iterrows()]
    return _table(title, f"{'training loss / learner':<{width}}" + "".join(f"  {h:>8}" for _, h in cols), rows,
                  ["test measures of each learner; * the best of the column."], s)


def tables_markdown(summary: pd.DataFrame, reference: Optional[str], title: str = "") -> str:
    """The three tables as one Markdown document (fixed-width blocks)."""
    parts = [f"# {title}" if title else "# svmmap reproduce"]
    if (summary["kind"] == "learned").any():
        parts += ["## Learners against SVM-map (Yue et al. 2007, Table 9 form)",
                  "```\n" + format_learner_table(summary, reference) + "\n```",
                  "## Test measures by training loss (Chakrabarti et al. 2008, Figure 9 form)",
                  "```\n" + format_loss_table(summary) + "\n```"]
    parts += ["## All systems and base functions (Yue et al. 2007, Table 6 form)",
              "```\n" + format_table(summary, reference) + "\n```"]
    return "\n\n".join(parts) + "\n"


def results_dict(summary: pd.DataFrame, *, collection: str, trials: int, train: Optional[int],
                 valid: Optional[int], seed: int, reference: Optional[str], extra: Optional[dict] = None) -> dict:
    """The summary as results.json's dict: the run's settings (``trials``: the number of splits; ``train`` and
    ``valid`` None for k-fold splits), ``best_base`` (the best base function in hindsight), one entry per system
    and ``extra``."""
    systems = []
    for _, r in summary.iterrows():
        d = {"name": str(r["name"]), "kind": str(r["kind"]), "map": float(r["map"]),
             "ndcg_cut_10": float(r["ndcg_cut_10"]), "recip_rank_10": float(r["recip_rank_10"]),
             "wins": int(r["wins"]), "losses": int(r["losses"]), "p_value": float(r["p_value"])}
        if r["kind"] == "learned":
            d["fit_seconds"] = float(r["fit_seconds"]) if math.isfinite(r["fit_seconds"]) else None
        for gain, versus in (("gain_vs_chosen", "vs_chosen"), ("gain_vs_first", "vs_first")):
            g = r.get(gain, float("nan"))
            if isinstance(g, float) and math.isfinite(g):
                d[gain] = g
                d[versus] = {k: (int(v) if k != "p_value" else float(v)) for k, v in r[versus].items()}
        systems.append(d)
    return {"collection": collection, "trials": int(trials), "train": None if train is None else int(train),
            "valid": None if valid is None else int(valid), "seed": int(seed), "best_base": best_base(summary),
            "reference": reference, "systems": systems, **(extra or {})}


def write_results(path: Path, results: dict) -> None:
    """Write ``results`` as JSON, whole or not at all."""
    from pyterrier_svmmap.experiments.reproduce.base_runs import atomic_write_bytes
    atomic_write_bytes(Path(path), (json.dumps(results, indent=2) + "\n").encode())
