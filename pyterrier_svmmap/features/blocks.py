"""The kinds of feature blocks of φ, one class each, in one registry (:data:`BLOCK_KINDS`) that the rest iterates
over: a new kind is one :class:`FeatureBlock` subclass and one :func:`register_block`."""
from __future__ import annotations

from typing import ClassVar, Dict, List, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.features.transforms import minmax_normalise, query_min_max, standardise_scores
from pyterrier_svmmap.queries import query_ids


class FeatureBlock:
    """One kind of block of φ: its ``name``, a ``description`` (documentation, ``--help``), whether it is ``dense``
    (else bin codes) or needs ``thresholds``, its ``model_class`` (0: linear, 1: step functions), ``axis_label``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    dense: ClassVar[bool] = True
    thresholds: ClassVar[bool] = False
    model_class: ClassVar[int] = 0
    axis_label: ClassVar[str] = "score"

    def values(self, encoder, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The block on candidates under the fitted ``encoder``: (n, F) dense values or bin codes."""
        raise NotImplementedError

    def width(self, n_functions: int, n_bins: int) -> int:
        return int(np.prod(self.weight_shape(n_functions, n_bins)))

    def weight_shape(self, n_functions: int, n_bins: int) -> Tuple[int, int]:
        """The shape of the block's weights: (2, F), scores then indicators, for a dense block."""
        return (2, n_functions)

    def names(self, encoder, base_names: Sequence[str]) -> List[str]:
        return [f"{self.name}({b})" for b in base_names] + [f"retrieved({b})" for b in base_names]

    def prior_head(self, n_functions: int, n_bins: int, function: int, span: float) -> np.ndarray:
        """The block's part of a w₀ that ranks like ``function`` alone: 1/``span`` on its score column."""
        head = np.zeros(self.width(n_functions, n_bins))
        head[function] = 1.0 / span if span > 0 else 1.0
        return head

    def score_extent(self, encoder, raw: np.ndarray, offsets: np.ndarray, function: int) -> Tuple[float, float]:
        """The (min, max) of ``function``'s column in this block, the unit of the prior's weight; (0, 1) by default."""
        return 0.0, 1.0

    def curves(self, encoder, weights: np.ndarray, base_names: Sequence[str],
               x_range: Tuple[float, float]) -> List[tuple]:
        """Per base function (name, kind, x, y, base): its contribution against its score."""
        x = np.array(x_range, dtype=float)
        return [(name, self.name, x, weights[0, f] * x, float(weights[1, f])) for f, name in enumerate(base_names)]


def _masked(encoder, values: np.ndarray) -> np.ndarray:
    """Dense ``values`` with the columns of functions that never vary within a training query set to 0."""
    return values * (encoder.column_scale_ != 0) if encoder.normalises else values


#: the block kinds by name, in the order the documentation lists them
BLOCK_KINDS: Dict[str, FeatureBlock] = {}


def register_block(kind: type) -> type:
    """Add block kind ``kind`` to :data:`BLOCK_KINDS` (a class decorator)."""
    if not kind.name or kind.name in BLOCK_KINDS or "+" in kind.name:
        raise ValueError(f"a block kind needs a new name without '+', got {kind.name!r}")
    BLOCK_KINDS[kind.name] = kind()
    return kind


@register_block
class Bins(FeatureBlock):
    """Yue et al. (2007) §4.2: 1[f(d|q) > k] for every threshold k ∈ K_f, as bin codes (the first, −∞: "retrieved")."""

    name = "bins"
    description = "the paper's threshold indicators 1[f > k], n_bins per base function (a step function of each)"
    dense = False
    thresholds = True
    model_class = 1
    axis_label = "base score (thresholds)"

    def values(self, encoder, raw, offsets):
        return encoder.bin_codes(raw, offsets)

    def weight_shape(self, n_functions, n_bins):
        return (n_functions, n_bins)

    def names(self, encoder, base_names):
        return [f"{b}>{t:.6g}" for b, th in zip(base_names, encoder.thresholds_) for t in th]

    def prior_head(self, n_functions, n_bins, function, span):
        head = np.zeros(self.width(n_functions, n_bins))
        head[function * n_bins:(function + 1) * n_bins] = 1.0 / n_bins          # a score of about 1 at the top
        return head

    def curves(self, encoder, weights, base_names, x_range):
        return [(name, self.name, th[np.isfinite(th)], np.cumsum(w)[np.isfinite(th)],
                 0.0 if np.isfinite(th[0]) else float(w[0]))       # the first, −∞ threshold: the "retrieved" base
                for name, th, w in zip(base_names, encoder.thresholds_, weights)]


@register_block
class Raw(FeatureBlock):
    """The base scores on the scale ``normalise`` gives them, a missing score counting as its query's lowest."""

    name = "raw"
    description = "the base scores, one weight per function, on the scale normalise gives them"

    def values(self, encoder, raw, offsets):
        if encoder.normalise == "query" and encoder.normalises:
            return standardise_scores(raw, offsets, encoder.prescale_, encoder.column_scale_)
        lo = np.nan_to_num(query_min_max(raw, offsets)[0][query_ids(offsets)], nan=0.0)
        return _masked(encoder, np.where(np.isnan(raw), lo, raw))

    def score_extent(self, encoder, raw, offsets, function):
        """The column's (min, max), standardised with ``normalise="query"``; (0, 0) when never retrieved."""
        col = raw[:, function]
        if not np.isfinite(col).any():
            return 0.0, 0.0
        if encoder.normalise == "query" and encoder.normalises:
            one = slice(function, function + 1)
            return 0.0, float(standardise_scores(np.asarray(col, dtype=float)[:, None], offsets,
                                                 encoder.prescale_[one], encoder.column_scale_[one]).max())
        return float(np.nanmin(col)), float(np.nanmax(col))


@register_block
class MinMax(FeatureBlock):
    """The scores min–max normalised per query (missing → 0): SVM_acc4's scale (Yue et al. §5.2.1)."""

    name = "minmax"
    description = "the scores min-max normalised per query"
    axis_label = "min–max normalised score"

    def values(self, encoder, raw, offsets):
        return _masked(encoder, np.nan_to_num(minmax_normalise(raw, offsets), nan=0.0))

    def curves(self, encoder, weights, base_names, x_range):
        return super().curves(encoder, weights, base_names, (0.0, 1.0))
