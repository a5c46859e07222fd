"""The results table (like Table 6 of Yue et al. 2007) and ``OUT/results.json``."""
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
    """Learned systems first, then base functions by decreasing MAP; W/L are the reference's wins
    and losses (per query, averaged AP), ** marks p < 0.05 (two-sided Wilcoxon signed-rank)."""
    s = pd.concat([summary[summary["kind"] == "learned"],
                   summary[summary["kind"] == "base"].sort_values("map", ascending=False, kind="stable")])
    width = max([len("system")] + [len(n) for n in s["name"]])
    lines = []
    if title:
        lines.append(title)
    wl_head = f"W/L vs {reference}" if reference else "W/L"
    lines.append(f"{'system':<{width}}  {'kind':<7}  {'MAP':>6}  {'nDCG@10':>7}  {'RR@10':>6}  {wl_head}")
    lines.append("-" * len(lines[-1]))
    for _, r in s.iterrows():
        if reference is None or r["name"] == reference:
            wl = "-"
        else:
            wl = f"{r['wins']}/{r['losses']}" + (" **" if r["p_value"] < 0.05 else "")
        lines.append(f"{r['name']:<{width}}  {r['kind']:<7}  {r['map']:6.4f}  {r['ndcg_cut_10']:7.4f}  "
                     f"{r['recip_rank_10']:6.4f}  {wl}")
    lines.append("")
    lines.append(f"W/L: queries where {reference} has the higher / lower AP (averaged over the trials "
                 "that tested the query); ** p < 0.05, two-sided Wilcoxon signed-rank."
                 if reference else "no learned reference system: W/L not computed.")
    return "\n".join(lines)


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def results_dict(summary: pd.DataFrame, *, collection: str, trials: int, train: int, valid: int,
                 seed: int, reference: Optional[str], extra: Optional[dict] = None) -> dict:
    systems = []
    for _, r in summary.iterrows():
        d = {"name": str(r["name"]), "kind": str(r["kind"]), "map": float(r["map"]),
             "ndcg_cut_10": float(r["ndcg_cut_10"]), "recip_rank_10": float(r["recip_rank_10"]),
             "wins": int(r["wins"]), "losses": int(r["losses"]), "p_value": float(r["p_value"])}
        if r["kind"] == "learned":
            d["fit_seconds"] = _clean(float(r["fit_seconds"]))
        systems.append(d)
    out = {"collection": collection, "trials": int(trials), "train": int(train), "valid": int(valid),
           "seed": int(seed), "best_base": best_base(summary), "reference": reference,
           "systems": systems}
    if extra:
        out.update(extra)
    return out


def write_results(path: Path, results: dict) -> None:
    Path(path).write_text(json.dumps(results, indent=2) + "\n")
