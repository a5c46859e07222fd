"""φ's layout: how w is laid out (blocks in order, then an optional bias), its names, w₀ and its state."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.encoder import FeatureEncoder, parse_blocks
from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
from pyterrier_svmmap.features.scales import check_unnormalised_range, column_top
from pyterrier_svmmap.queries import shard_rows, subset_queries


@dataclass
class FeatureLayout:
    """A fitted :class:`FeatureEncoder`, whether φ ends with a bias, and the base names (see :meth:`fit`).

    Parameters
    ----------
    encoder : FeatureEncoder
        Fitted.
    bias : bool, default False
        Whether φ ends with a constant dimension (the classification losses).
    base_names : list of str, optional
        A name per base function (default ``f0, f1, ...``).
    """

    encoder: FeatureEncoder
    bias: bool = False
    base_names: List[str] = field(default_factory=list)

    def __post_init__(self):
        if self.encoder.n_functions_ is None:
            raise ValueError("FeatureLayout needs a fitted FeatureEncoder")
        if not self.base_names:
            self.base_names = default_base_names(self.n_functions)
        if len(self.base_names) != self.n_functions:
            raise ValueError(f"{len(self.base_names)} base-function names for {self.n_functions} base functions")
        self.base_names = [str(n) for n in self.base_names]

    @classmethod
    def fit(cls, raw: np.ndarray, offsets: np.ndarray, features="bins", n_bins: int = 50,
            binning: str = "quantile", threshold_depth: Optional[int] = None, bias: bool = False,
            base_names: Optional[Sequence[str]] = None, normalise: Optional[str] = "query") -> "FeatureLayout":
        """Learn the thresholds and scales on training candidates (:meth:`FeatureEncoder.fit`).

        Parameters
        ----------
        raw, offsets : ndarray
            Candidates (n × F scores, NaN where missing) and their query boundaries.
        features, n_bins, binning, threshold_depth, normalise, bias, base_names
            :class:`FeatureEncoder`'s and this class's parameters.

        Returns
        -------
        FeatureLayout
        """
        names = list(base_names) if base_names is not None else []
        encoder = FeatureEncoder(features, n_bins, binning, threshold_depth, normalise).fit(
            raw, offsets, names or None)
        return cls(encoder, bool(bias), names)

    @property
    def n_functions(self) -> int:
        return int(self.encoder.n_functions_)

    @property
    def blocks(self) -> Tuple[str, ...]:
        return self.encoder.blocks

    def block_slices(self) -> List[Tuple[str, slice]]:
        """(kind, slice of w) for every block in order, the bias last when there is one."""
        out, lo = [], 0
        for kind in list(self.blocks) + (["bias"] if self.bias else []):
            width = 1 if kind == "bias" else BLOCK_KINDS[kind].width(self.n_functions, int(self.encoder.n_bins))
            out.append((kind, slice(lo, lo + width)))
            lo += width
        return out

    @property
    def dim(self) -> int:
        return self.block_slices()[-1][1].stop

    def block_weights(self, w: np.ndarray, kind: str) -> np.ndarray:
        """The weights of block ``kind``, shaped as its kind says (:meth:`.blocks.FeatureBlock.weight_shape`).

        Parameters
        ----------
        w : ndarray of shape (dim,)
        kind : str

        Returns
        -------
        ndarray
        """
        w = np.asarray(w)
        if w.shape != (self.dim,):
            raise ValueError(f"w has shape {w.shape}, this layout has {self.dim} dimensions")
        if kind not in self.blocks:
            raise ValueError(f"this layout has no {kind!r} block (blocks: {self.blocks})")
        return w[dict(self.block_slices())[kind]].reshape(BLOCK_KINDS[kind].weight_shape(self.n_functions,
                                                                                         int(self.encoder.n_bins)))

    def names(self) -> List[str]:
        """A readable name per dimension of w (``bm25>3.21``, ``raw(bm25)``, ``retrieved(bm25)``, ``bias``)."""
        return self.encoder.feature_names(self.base_names) + (["bias"] if self.bias else [])

    def transform(self, raw: np.ndarray, offsets: np.ndarray) -> FeatureMatrix:
        """φ of candidates, the bias included (a ``raw`` block with ``normalise=None`` refuses scores beyond ±1e100).

        Parameters
        ----------
        raw, offsets : ndarray
            Candidates (n × F scores, NaN where missing) and their query boundaries.

        Returns
        -------
        FeatureMatrix
        """
        if "raw" in self.blocks and self.encoder.normalise is None:
            check_unnormalised_range(column_top(raw, offsets), self.base_names)
        X = self.encoder.transform(raw, offsets)
        if self.bias:
            X = FeatureMatrix(list(X.blocks) + [DenseBlock(np.ones((X.n_rows, 1)))])
        return X

    def prior_block(self) -> str:
        """The block the prior's weights go in: the first dense block (it ranks as the function does), else ``bins``."""
        dense = [kind for kind in self.blocks if BLOCK_KINDS[kind].dense]
        return dense[0] if dense else self.blocks[0]

    def prior_weights(self, function: int, raw: Optional[np.ndarray] = None, offsets: Optional[np.ndarray] = None,
                      *, scale: float = 1.0, span: Optional[float] = None) -> np.ndarray:
        """w₀ that ranks like base function ``function`` alone (missing documents last), for ½‖w − w₀‖².

        Parameters
        ----------
        function : int
            A base function's column.
        raw, offsets : ndarray, optional
            Candidates and their query boundaries (not read when ``span`` is given).
        scale : float
            The factor of the whole vector.
        span : float, optional
            The function's column range, when known already (a cluster's, over its shards).

        Returns
        -------
        ndarray of shape (dim,)
        """
        if span is None:
            if raw is None or offsets is None:
                raise ValueError("prior_weights needs the training candidates (raw and offsets) or the span")
            lo, hi = self.score_extent(raw, offsets, function)
            span = hi - lo
        w0 = np.zeros(self.dim)
        kind = self.prior_block()
        w0[dict(self.block_slices())[kind]] = BLOCK_KINDS[kind].prior_head(self.n_functions, int(self.encoder.n_bins),
                                                                           function, span)
        return scale * w0

    def score_extent(self, raw: np.ndarray, offsets: np.ndarray, function: int) -> Tuple[float, float]:
        """The (min, max) of base function ``function``'s column of :meth:`prior_block` on candidates.

        Parameters
        ----------
        raw, offsets : ndarray
        function : int

        Returns
        -------
        (float, float)
        """
        return BLOCK_KINDS[self.prior_block()].score_extent(self.encoder, raw, offsets, function)

    #: the encoder's learned per-function arrays besides the thresholds (absent from unscaled models)
    SCALE_ARRAYS = ("prescale", "column_scale", "indicator_scale")

    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        """(meta, arrays) describing the layout exactly; :meth:`from_state` rebuilds it."""
        enc = self.encoder
        meta = dict(features="+".join(enc.blocks), n_bins=int(enc.n_bins), binning=enc.binning,
                    threshold_depth=enc.threshold_depth, n_functions=self.n_functions, bias=self.bias,
                    base_names=list(self.base_names), normalise=enc.normalise)
        thresholds = enc.thresholds_ if enc.thresholds_ is not None else np.zeros((0, 0))
        arrays = {"thresholds": np.asarray(thresholds, dtype=float)}
        if enc.normalises:
            arrays.update({name: np.asarray(getattr(enc, f"{name}_"), dtype=float) for name in self.SCALE_ARRAYS})
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "FeatureLayout":
        """The layout saved by :meth:`get_state`; ValueError naming what is inconsistent."""
        missing = [k for k in ("features", "n_bins", "binning", "n_functions", "bias", "base_names") if k not in meta] \
            + [k for k in ("thresholds",) if k not in arrays]
        if missing:
            raise ValueError(f"feature layout incomplete: missing {missing}")
        F, n_bins = int(meta["n_functions"]), int(meta["n_bins"])
        scales = [name for name in cls.SCALE_ARRAYS if name in arrays]
        if scales and len(scales) != len(cls.SCALE_ARRAYS):
            raise ValueError(f"feature layout incomplete: has {scales} but not all of {list(cls.SCALE_ARRAYS)}")
        # a model of an earlier version scales nothing: its raw block is the scores as they are
        normalise = meta.get("normalise") if scales else None
        encoder = FeatureEncoder(meta["features"], n_bins, meta["binning"], meta.get("threshold_depth"), normalise)
        encoder.n_functions_ = F
        for name in scales:
            values = np.asarray(arrays[name], dtype=float)
            if values.shape != (F,) or not np.isfinite(values).all() or (values < 0).any():
                raise ValueError(f"{name} must hold {F} finite non-negative numbers, got shape {values.shape}")
            setattr(encoder, f"{name}_", values)
        thresholds = np.asarray(arrays["thresholds"], dtype=float)
        if any(BLOCK_KINDS[kind].thresholds for kind in parse_blocks(meta["features"])):
            if thresholds.shape != (F, n_bins):
                raise ValueError(f"thresholds have shape {thresholds.shape}, expected ({F}, {n_bins})")
            encoder.thresholds_ = thresholds
        return cls(encoder, bool(meta["bias"]), list(meta["base_names"]))


def default_base_names(n: int, start: int = 0) -> List[str]:
    """``f0, f1, ...`` (``start=1``: svmlight's ``f1, f2, ...``)."""
    return [f"f{i}" for i in range(start, start + n)]


@dataclass
class EncodedQueries:
    """φ of some queries under a fitted layout, which learns nothing from labels and so serves every fold."""

    layout: FeatureLayout
    X: FeatureMatrix
    offsets: np.ndarray

    @classmethod
    def of(cls, layout: FeatureLayout, raw: np.ndarray, offsets: np.ndarray) -> "EncodedQueries":
        offsets = np.asarray(offsets, dtype=np.int64)
        return cls(layout, layout.transform(raw, offsets), offsets)

    def subset(self, keep: np.ndarray) -> "EncodedQueries":
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        rows = np.flatnonzero(np.repeat(keep, np.diff(self.offsets)))
        return EncodedQueries(self.layout, self.X.take(rows), subset_queries(None, None, self.offsets, keep)[2])

    def shards(self, queries_per_shard: np.ndarray) -> list:
        """φ cut into consecutive shards of ``queries_per_shard[i]`` whole queries: (φ, offsets) pairs."""
        return [(self.X.rows(lo, hi), offs) for lo, hi, offs in shard_rows(self.offsets, queries_per_shard)]

    @cached_property
    def spread(self) -> float:
        """R² of φ (:meth:`FeatureMatrix.spread`), computed once."""
        return self.X.spread(self.offsets)
