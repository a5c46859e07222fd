"""The feature encoder: from base-function scores to the feature vectors φ(x, d) of the linear model.

Input everywhere is a matrix ``raw`` of shape (candidates, base functions), NaN where a base function
did not retrieve the candidate, with the candidates of each query contiguous and delimited by
``offsets`` (length Q + 1).

Three kinds of blocks can make up φ, alone or together (``FeatureEncoder(features=...)``); each is a class of
:mod:`pyterrier_svmmap.features.blocks` (its values, width, names, prior weights and picture). The encoder
learns what they need from the training candidates (thresholds, :mod:`.thresholds`; scales, :mod:`.scales`)
and builds φ of any candidates as a :class:`~pyterrier_svmmap.features.matrices.FeatureMatrix`. The kinds:

``"bins"``
    Yue et al. (2007) §4.2: φ contains 1[f(d|q) > k] for every k ∈ K_f. Never materialised: a block
    keeps one bin code per (candidate, function), the number of thresholds the score exceeds, and the
    model's score is a lookup in the cumulative bin weights. A candidate that a function did not
    retrieve is below every threshold (code 0). How the scores are put on a scale before binning is
    ``binning``:

    * ``"quantile"`` (the paper's "reasonably spaced, capturing the sensitive region"): thresholds
      are quantiles of the training candidates' raw scores, per function;
    * ``"minmax"`` (SVM_acc4 of §5.2.1): scores min–max normalised per query, thresholds evenly
      spaced in [0, 1];
    * ``"percentile"`` (SVM_acc3): scores turned into per-query percentiles (the top document
      gets 1), thresholds evenly spaced in [0, 1].
``"raw"``
    The base scores, one weight per function, and an indicator per function that says whether the function
    retrieved the candidate; a missing score counts as the query's lowest of that function. How the scores
    are put on a scale is ``normalise``:

    * ``"query"`` (the default): z = (f − min_q f) / σ_f, with σ_f the function's spread *within* queries
      (the pooled standard deviation of its scores around their query's mean, on the training candidates).
      A linear ranking model only ever compares candidates of one query, so this is the scale that matters:
      z does not change when a function is multiplied by a positive number or shifted by a constant (for all
      queries or per query), and so neither do φ, the learned model, its cost, nor its ranking. The centring
      changes no ranking (a per-query constant) and keeps the arithmetic exact: a score equal to its query's
      lowest gives 0 whatever the magnitude of the scores;
    * ``None``: the scores as they are (Yue et al.'s and ``svm_map_learn``'s linear model), whose units
      then set the scale of the weights, of C and of the solver's arithmetic; scores beyond ±1e100 are
      refused (their squares overflow the solver's sums).
``"minmax"``
    The scores min–max normalised per query (missing → 0), with the same indicators.

**What carries no ranking information is left out exactly**, in every block and either normalisation: a
function whose retrieved scores are equal within every training query (a document-independent feature such
as a query length, or a constant column) has its score dimensions fixed at 0, and so does its "retrieved"
indicator when, in every training query, the function retrieved all or none of the candidates. Their
weights stay exactly 0 (their share of every constraint is an empty sum, not a rounding residue of a sum
that should cancel), so such a column cannot change a model, however large its values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import query_blocks, score_matrix
from pyterrier_svmmap.features import kernels
from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.matrices import BinnedBlock, Block, DenseBlock, FeatureMatrix
from pyterrier_svmmap.features.scales import ColumnStatistics, check_unnormalised_range, column_statistics
from pyterrier_svmmap.features.thresholds import even_thresholds, sample_thresholds
from pyterrier_svmmap.features.transforms import (BINNINGS, minmax_normalise, query_min_max, scale_for_binning,
                                                  standardise_scores)
from pyterrier_svmmap.queries import query_ids

#: how the ``raw`` block puts scores on a scale (module doc): within-query standardisation, or none
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
    """Learns the thresholds K_f (on training candidates) and encodes candidates as a FeatureMatrix.

    Parameters
    ----------
    features : str or sequence of str, default "bins"
        The blocks of φ (:data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS`, joined by ``+``).
    n_bins : int, default 50
        |K_f|, thresholds per function of a block with thresholds.
    binning : {'quantile', 'minmax', 'percentile'}, default 'quantile'
        How scores are scaled before thresholds apply.
    threshold_depth : int or None, default None
        Quantile binning only: the quantiles over each training query's top ``threshold_depth`` candidates of
        the function instead of over all candidates, so that the thresholds sit where rankings are decided (the
        paper's "sensitive region") rather than among the many low-scoring candidates.
    normalise : {'query', None}, default 'query'
        The ``raw`` block's scale (see the module doc).

    Notes
    -----
    Learned by :meth:`fit`: ``thresholds_`` ((F, n_bins), None without bins; a function that carries no
    ranking information has thresholds +inf, so its codes are 0), ``prescale_`` (F powers of two),
    ``column_scale_`` (the factor of each function's score column in the dense blocks: 1/spread with
    ``normalise="query"``, else 1; 0 for a function whose scores never vary within a training query) and
    ``indicator_scale_`` (1, or 0 for a "retrieved" indicator that never varies within a training query).
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
        """Learn the thresholds and scales on training candidates (``raw``: candidates × base functions, NaN =
        not retrieved, a float32 or float64 array or memory map, read in blocks of whole queries and never
        copied whole; ``offsets``: query boundaries); ``base_names`` name the functions in errors.

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.
        base_names : sequence of str, optional
            A name per base function.

        Returns
        -------
        self
        """
        raw = score_matrix(raw)
        offsets = np.asarray(offsets, dtype=np.int64)
        thresholds = None
        if self.fits_thresholds:
            thresholds = sample_thresholds(raw, offsets, self.n_bins, self.threshold_depth)
        return self.fit_statistics(column_statistics(raw, offsets), thresholds, base_names)

    def fit_statistics(self, stats: ColumnStatistics, thresholds: Optional[np.ndarray] = None,
                       base_names: Optional[Sequence[str]] = None) -> "FeatureEncoder":
        """:meth:`fit` from what it learns from the data: the functions' :class:`ColumnStatistics` and, for
        quantile bins, their thresholds (:func:`~pyterrier_svmmap.features.thresholds.function_thresholds`),
        however they were computed (one process or the shards of a cluster).

        Parameters
        ----------
        stats : ColumnStatistics
            The functions' statistics (:func:`column_statistics`, or summed over shards).
        thresholds : ndarray of shape (F, n_bins), optional
            Quantile bins' thresholds (:func:`sample_thresholds`).
        base_names : sequence of str, optional
            A name per base function.

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
            if self.binning == "quantile":
                self.thresholds_ = np.array(thresholds, dtype=float)
            else:
                self.thresholds_ = np.tile(even_thresholds(self.n_bins), (self.n_functions_, 1))
            self.thresholds_[~stats.score_varies, 1:] = np.inf         # no score dimension: codes 0 or 1
            self.thresholds_[~stats.score_varies & ~stats.retrieval_varies, 0] = np.inf     # nor an indicator
        return self

    @property
    def fits_thresholds(self) -> bool:
        """Whether :meth:`fit` learns thresholds from the scores (a block that uses them, quantile binning)."""
        return self.binning == "quantile" and any(BLOCK_KINDS[kind].thresholds for kind in self.blocks)

    @property
    def normalises(self) -> bool:
        """Whether the dense blocks' columns are scaled (``prescale_`` known: fitted by this version)."""
        return self.prescale_ is not None

    def transform(self, raw, offsets: np.ndarray) -> FeatureMatrix:
        """φ of candidates ``raw`` (n × F, a float32 or float64 array or memory map) grouped by ``offsets``,
        computed in blocks of whole queries: only φ is allocated (bin codes; the dense blocks' columns).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        FeatureMatrix
            φ, one block per kind of ``features``.
        """
        raw = score_matrix(raw)
        offsets = np.asarray(offsets, dtype=np.int64)
        if self.n_functions_ is None:
            raise RuntimeError("FeatureEncoder.transform called before fit")
        if raw.ndim != 2 or raw.shape[1] != self.n_functions_:
            raise ValueError(f"the model was trained on {self.n_functions_} base functions but these "
                             f"candidates have {raw.shape[1] if raw.ndim == 2 else raw.shape}; use the same "
                             "RunFeatures as in training")
        blocks: List[Block] = []
        for kind in self.blocks:
            block = BLOCK_KINDS[kind]
            if block.dense:
                blocks.append(DenseBlock(self.dense_values(kind, raw, offsets)))
            else:
                blocks.append(BinnedBlock(block.values(self, raw, offsets), self.n_bins))
        return FeatureMatrix(blocks)

    def dense_values(self, kind: str, raw, offsets: np.ndarray) -> np.ndarray:
        """(n, 2F) columns of a dense block kind (:data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS`): its
        values, then the "retrieved" indicators (times ``indicator_scale_``), filled block of whole queries by
        block.

        Parameters
        ----------
        kind : str
            A block kind of :data:`~pyterrier_svmmap.features.blocks.BLOCK_KINDS` (or ``"bias"``).
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, 2F)
        """
        n, n_funcs = raw.shape
        out = np.empty((n, 2 * n_funcs))
        for block in query_blocks(raw, np.asarray(offsets, dtype=np.int64)):
            part, offs = block.values, block.offsets
            missing = np.isnan(part)
            out[block.start:block.stop, :n_funcs] = BLOCK_KINDS[kind].values(self, part, offs)
            out[block.start:block.stop, n_funcs:] = ~missing if self.indicator_scale_ is None else \
                ~missing * self.indicator_scale_
        return out

    def filled_scores(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The scores as they are, a missing one as its query's lowest of that function (0 when the function
        retrieved none of the query's candidates).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F)
        """
        lo, _ = query_min_max(raw, offsets)
        fill = np.nan_to_num(lo[query_ids(offsets)], nan=0.0)
        return np.where(np.isnan(raw), fill, raw)

    def minmax_scores(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The scores min–max normalised per query and function, missing → 0.

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F)
        """
        return np.nan_to_num(minmax_normalise(raw, offsets), nan=0.0)

    def masked(self, values: np.ndarray) -> np.ndarray:
        """Dense block ``values`` with the columns of functions whose scores never vary within a training query
        set to 0 (a model of an earlier version, which scales nothing, keeps them).

        Parameters
        ----------
        values : ndarray of shape (n, F)
            A dense block's score columns.

        Returns
        -------
        ndarray of shape (n, F)
        """
        return values * (self.column_scale_ != 0) if self.normalises else values

    def standardise(self, raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The ``raw`` block's scores with ``normalise="query"``: (f − min_q f)·``column_scale_`` per query and
        function, missing → 0 (:func:`standardise_scores`).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F)
        """
        return standardise_scores(raw, offsets, self.prescale_, self.column_scale_)

    def bin_codes(self, raw, offsets: np.ndarray) -> np.ndarray:
        """Number of thresholds each score exceeds, per (candidate, function); missing → 0. Computed in blocks
        of whole queries (:func:`._kernels.bin_codes`, rows spread over threads).

        Parameters
        ----------
        raw : ndarray of shape (n, F)
            Base-function scores, NaN where a function did not retrieve the candidate.
        offsets : ndarray of shape (Q + 1,)
            Query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n, F), uint8 or uint16
        """
        raw = score_matrix(raw)
        dtype = np.uint8 if self.n_bins < 256 else np.uint16
        codes = np.zeros(raw.shape, dtype=dtype)
        if not len(raw):
            return codes
        jit = kernels()
        thresholds = np.ascontiguousarray(self.thresholds_, dtype=float)
        for block in query_blocks(raw, np.asarray(offsets, dtype=np.int64)):
            scaled = np.ascontiguousarray(scale_for_binning(block.values, block.offsets, self.binning), dtype=float)
            out = codes[block.start:block.stop]
            bounds = threads.even_bounds(len(scaled), threads.pieces(scaled.size))
            threads.run(lambda i: jit.bin_codes(scaled[bounds[i]:bounds[i + 1]], thresholds,
                                                out[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
        return codes

    def feature_names(self, base_names: Sequence[str]) -> List[str]:
        """A readable name per dimension of φ, in the weight vector's order.

        Parameters
        ----------
        base_names : sequence of str
            A name per base function.

        Returns
        -------
        list of str
        """
        return [name for kind in self.blocks for name in BLOCK_KINDS[kind].names(self, base_names)]
