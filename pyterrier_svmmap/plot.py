"""Pictures (``[plot]``): a model's learned score contributions (Yue et al. 2007, Figure 2) and a systems summary."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Tuple, Union

import numpy as np

from pyterrier_svmmap.features.blocks import BLOCK_KINDS


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'pyterrier-svmmap[plot]'") from None
    return plt


def contributions(model, x_range: Tuple[float, float] = (0.0, 1.0)):
    """Per base function (name, kind, x, y, base): its contribution against its score, as its block kind draws it."""
    if not hasattr(model, "layout_") or not hasattr(model, "coef_"):
        raise RuntimeError(f"{type(model).__name__} is not fitted: call fit() or load() before plotting it")
    layout = model.layout_
    return [curve for kind in layout.blocks for curve in BLOCK_KINDS[kind].curves(
        layout.encoder, layout.block_weights(model.coef_, kind), layout.base_names, x_range)]


def plot_model(model, path: Optional[Union[str, Path]] = None, x_range: Tuple[float, float] = (0.0, 1.0),
               max_panels: Optional[int] = None, ncols: int = 4):
    """A Figure of one panel per base function (its contribution against its score), saved to ``path``."""
    plt = _plt()
    by_range = sorted(contributions(model, x_range), key=lambda c: -(np.ptp(c[3]) if len(c[3]) else 0.0))
    curves = by_range[:max_panels or None]
    n = len(curves)
    ncols = min(ncols, n)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.6 * nrows), squeeze=False, sharey=True)
    for ax, (name, kind, x, y, base) in zip(axes.ravel(), curves):
        if not BLOCK_KINDS[kind].dense and len(x):
            ax.step(np.r_[x, x[-1] + (x[-1] - x[0]) * 0.05 + 1e-12], np.r_[y, y[-1]], where="post", lw=1.5)
        else:
            ax.plot(x, y, lw=1.5)
        ax.set_xlabel(BLOCK_KINDS[kind].axis_label)
        ax.set_title(f"{name}\n(range {np.ptp(y) if len(y) else 0:.3g})", fontsize=9)
        ax.axhline(0, color="grey", lw=0.5)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("contribution to score")
    loss = model.loss if isinstance(model.loss, str) else getattr(model.loss, "name", "")
    fig.suptitle(f"{type(model).__name__} (loss={loss}, C={model.C_:g}): learned score contribution "
                 "per base function", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_systems(results_json_path: Union[str, Path], out_png: Union[str, Path]):
    """MAP per system of ``svmmap reproduce``'s results.json, with W/L against the reference on each bar."""
    plt = _plt()
    res = json.loads(Path(results_json_path).read_text())
    systems = sorted(res["systems"], key=lambda s: s["map"])
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(systems) + 1.2))
    colours = ["tab:orange" if s.get("kind") == "learned" else "tab:blue" for s in systems]
    y = np.arange(len(systems))
    ax.barh(y, [s["map"] for s in systems], color=colours)
    ax.set_yticks(y, [s["name"] for s in systems], fontsize=8)
    ref = res.get("reference")
    for i, s in enumerate(systems):
        label = f"{s['map']:.3f}" + ("" if s["name"] == ref else f"  W/L {s.get('wins', 0)}/{s.get('losses', 0)}")
        ax.text(s["map"], i, " " + label, va="center", fontsize=7)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="tab:orange", label="learned"), Patch(color="tab:blue", label="base function")],
              loc="lower right", fontsize=8)
    ax.set_xlabel("MAP")
    ax.set_xlim(0, max(s["map"] for s in systems) * 1.35)
    ax.set_title(f"{res.get('collection', '')}: MAP per system, W/L per query vs {ref} "
                 f"({res.get('trials', '?')} trials)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    return fig
