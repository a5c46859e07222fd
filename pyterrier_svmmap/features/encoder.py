"""The feature encoder: learns what φ's blocks need (thresholds, scales) and builds φ (docs/user_guide.md#features)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_chunks, score_matrix
from pyterrier_svmmap.features import kernels
from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.matrices import BinnedBlock, DenseBlock, FeatureMatrix, code_dtype
from pyterrier_svmmap.features.scales import ColumnStatistics, check_unnormalised_range, column_statistics
from pyterrier_svmmap.features.thresholds import sample_thresholds
from pyterrier_svmmap.features.transforms import BINNINGS, scale_for_binning

#: how the ``raw`` block puts scores on a scale: within-query standardisation, or none
NORMALISATIONS = ("query", None)


def parse_blocks(features: Union[str, Sequence[str]]) -> Tuple[str, ...]:
    """``"bins+minmax"`` or ``["bins", "minmax"]`` → ``("bins", "minmax")``, validated."""
    parts = features.split("+") if isinstance(features, str) else list(features)
    parts = tuple(p.strip() for p in parts)
    bad = [p for p in parts if p not in BLOCK_KINDS]
    if not parts or bad or len(set(parts)) != len(parts):
        raise ValueError(f"features={features!r} is not valid: give one or more of {tuple(BLOCK_KINDS)}, "
                         "joined by '+' (e.g. 'bins+minmax'), each at most once")
    return parts


@dataclass
class FeatureEncoder:
    """Learns the thresholds K_f and scales on training candidates (``thresholds_``, ``prescale_``, ``column_scale_``,
    ``indicator_scale_``) and encodes candidates as a FeatureMatrix.

    Parameters
    ----------
    features : str or sequence of str, default "bins"
        The blocks of φ (:data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS`, joined by ``+``).
    n_bins : int, default 50
        |K_f|, thresholds per function of a block with thresholds.
    binning : {'quantile', 'minmax', 'percentile'}, default 'quantile'
        How scores are scaled before thresholds apply.
    threshold_depth : int or None, default None
        Quantile binning only: the quantiles of each training query's top ``threshold_depth`` candidates.
    normalise : {'query', None}, default 'query'
        The ``raw`` block's scale: standardised within queries, or the scores as they are.
    """

    features: Union[str, Sequence[str]] = "bins"
    n_bins: int = 50
    binning: str = "quantile"
    threshold_depth: Optional[int] = None
    normalise: Optional[str] = "query"
    thresholds_: np.ndarray = field(default=None, repr=False)   # (F, n_bins) or None without bins
    n_functions_: int = field(default=None, repr=False)
    prescale_: np.ndarray = field(default=None, repr=False)
    column_scale_: np.ndarray = field(default=None, repr=False)
    indicator_scale_: np.ndarray = field(default=None, repr=False)

    def __post_init__(self):
        self.blocks = parse_blocks(self.features)
        if self.binning not in BINNINGS:
            raise ValueError(f"binning={self.binning!r} is not valid; choose one of {BINNINGS}")
        if self.normalise not in NORMALISATIONS:
            raise ValueError(f"normalise={self.normalise!r} is not valid; choose 'query' (scores standardised "
                             "within queries, the default) or None (the scores as they are)")
        if self.threshold_depth is not None and int(self.threshold_depth) < 1:
            raise ValueError(f"threshold_depth must be a positive number of candidates, got {self.threshold_depth}")
        if int(self.n_bins) < 1:
            raise ValueError(f"n_bins must be at least 1, got {self.n_bins}")

    def fit(self, raw, offsets: np.ndarray, base_names: Optional[Sequence[str]] = None) -> "FeatureEncoder":
        """Learn the thresholds and scales on training candidates.

        Parameters
        ----------
        raw, offsets : ndarray
            Candidates (n × F scores, NaN where missing) and their query boundaries.
        base_names : sequence of str, optional
            A name per base function (for errors).

        Returns
        -------
        self
        """
        raw = score_matrix(raw)
        offsets = np.asarray(offsets, dtype=np.int64)
        fitted = sample_thresholds(raw, offsets, self.n_bins, self.threshold_depth) if self.fits_thresholds else None
        return self.fit_statistics(column_statistics(raw, offsets), fitted, base_names)

    def fit_statistics(self, stats: ColumnStatistics, thresholds: Optional[np.ndarray] = None,
                       base_names: Optional[Sequence[str]] = None) -> "FeatureEncoder":
        """:meth:`fit` from its statistics, however computed (in one process or over a cluster's shards).

        Parameters
        ----------
        stats : ColumnStatistics
            The functions' statistics (:func:`column_statistics`, or summed over shards).
        thresholds : ndarray of shape (F, n_bins), optional
            Quantile bins' thresholds (:func:`sample_thresholds`).
        base_names : sequence of str, optional

        Returns
        -------
        self
        """
        self.n_functions_ = len(stats.top)
        if "raw" in self.blocks and self.normalise is None:
            check_unnormalised_range(stats.top, base_names)
        self.prescale_ = stats.prescale
        if self.normalise == "query":
            spread = np.where(stats.spread > 0, stats.spread, np.finfo(float).tiny)
            self.column_scale_ = np.where(stats.score_varies, 1.0 / spread, 0.0)
        else:
            self.column_scale_ = stats.score_varies.astype(float)
        self.indicator_scale_ = stats.retrieval_varies.astype(float)
        self.thresholds_ = None
        if any(BLOCK_KINDS[kind].thresholds for kind in self.blocks):
            self.thresholds_ = np.array(thresholds, dtype=float) if self.binning == "quantile" else \
                np.tile(np.arange(self.n_bins) / self.n_bins, (self.n_functions_, 1))      # even on [0, 1)
            self.thresholds_[~stats.score_varies, 1:] = np.inf         # no score dimension: codes 0 or 1
            self.thresholds_[~stats.score_varies & ~stats.retrieval_varies, 0] = np.inf     # nor an indicator
        return self

    @property
    def fits_thresholds(self) -> bool:
        return self.binning == "quantile" and any(BLOCK_KINDS[kind].thresholds for kind in self.blocks)

    @property
    def normalises(self) -> bool:
        """Whether the dense blocks' columns are scaled (``prescale_`` known)."""
        return self.prescale_ is not None

    def transform(self, raw, offsets: np.ndarray) -> FeatureMatrix:
        """φ of candidates, computed in chunks of whole queries.

        Parameters
        ----------
        raw, offsets : ndarray
            Candidates (n × F scores, NaN where missing) and their query boundaries.

        Returns
        -------
        FeatureMatrix
        """
        raw = score_matrix(raw)
        offsets = np.asarray(offsets, dtype=np.int64)
        if self.n_functions_ is None:
            raise RuntimeError("FeatureEncoder.transform called before fit")
        if raw.ndim != 2 or raw.shape[1] != self.n_functions_:
            raise ValueError(f"the model was trained on {self.n_functions_} base functions but these "
                             f"candidates have {raw.shape[1] if raw.ndim == 2 else raw.shape}; use the same "
                             "RunFeatures as in training")
        return FeatureMatrix([DenseBlock(self._dense_values(kind, raw, offsets)) if BLOCK_KINDS[kind].dense
                              else BinnedBlock(BLOCK_KINDS[kind].values(self, raw, offsets), self.n_bins)
                              for kind in self.blocks])

    def _dense_values(self, kind: str, raw, offsets: np.ndarray) -> np.ndarray:
        """(n, 2F) columns of a dense block: its values, then the scaled "retrieved" indicators."""
        n, n_funcs = raw.shape
        out = np.empty((n, 2 * n_funcs))
        for chunk in query_chunks(raw, np.asarray(offsets, dtype=np.int64)):
            retrieved = ~np.isnan(chunk.values)
            out[chunk.start:chunk.stop, :n_funcs] = BLOCK_KINDS[kind].values(self, chunk.values, chunk.offsets)
            out[chunk.start:chunk.stop, n_funcs:] = retrieved if self.indicator_scale_ is None else \
                retrieved * self.indicator_scale_
        return out

    def bin_codes(self, raw, offsets: np.ndarray) -> np.ndarray:
        """The number of thresholds each score exceeds (missing → 0).

        Parameters
        ----------
        raw, offsets : ndarray

        Returns
        -------
        ndarray of shape (n, F), of :func:`~.matrices.code_dtype`
        """
        raw = score_matrix(raw)
        codes = np.zeros(raw.shape, dtype=code_dtype(self.n_bins))
        if not len(raw):
            return codes
        jit = kernels()
        thresholds = np.ascontiguousarray(self.thresholds_, dtype=float)
        for chunk in query_chunks(raw, np.asarray(offsets, dtype=np.int64)):
            scaled = np.ascontiguousarray(scale_for_binning(chunk.values, chunk.offsets, self.binning), dtype=float)
            out = codes[chunk.start:chunk.stop]
            threads.run_ranges(lambda lo, hi: jit.bin_codes(scaled[lo:hi], thresholds, out[lo:hi]), len(scaled),
                               scaled.size)
        return codes

    def feature_names(self, base_names: Sequence[str]) -> List[str]:
        """A readable name per dimension of φ, in the weight vector's order.

        Parameters
        ----------
        base_names : sequence of str

        Returns
        -------
        list of str
        """
        return [name for kind in self.blocks for name in BLOCK_KINDS[kind].names(self, base_names)]
