"""The array-level structural-SVM learner: numpy arrays and query offsets in, a fitted linear model out.

:class:`StructSVMRanker` is what the PyTerrier estimators (:class:`~pyterrier_svmmap.StructSVM`,
:class:`~pyterrier_svmmap.SVMMap`), ``svmmap learn/classify`` and ``svmmap reproduce`` all train with, as
``pyterrier.ltr`` is a thin layer over LightGBM. It knows nothing of PyTerrier or pandas.

Training (Yue et al. 2007, §3–4): thresholds and φ from the base scores (:class:`~.features.layout.FeatureLayout`),
then OP 1 of the paper, min ½‖w‖² + C/n Σ ξ_i, solved by 1-slack cutting planes for every C of a grid
(:func:`~pyterrier_svmmap.svm.cutting_plane.train_path`, warm-started from one C to the next); the selection
engine (:func:`~pyterrier_svmmap.selection.engine.search`) keeps the model of the paper's protocol (the best
validation MAP, §5) or of the default's rule, and this class trains the paths it asks for.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import Any, Callable, ContextManager, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

import pyterrier_svmmap.svm.cutting_plane as solver
import pyterrier_svmmap.svm.model_state as model_state
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.chunks import score_matrix
from pyterrier_svmmap.features.layout import EncodedQueries, FeatureLayout, default_base_names
from pyterrier_svmmap.params import Parametrized
from pyterrier_svmmap.queries import (Queries, as_queries, check_ranking_arrays, shard_sizes, split_queries,
                                     subset_queries, usable_queries, usable_shard_sizes)
from pyterrier_svmmap.selection.grids import (DEFAULT_ALPHA, DEFAULT_C_GRID, DEFAULT_MIN_VALID_QUERIES, c_grid,
                                              evidence_source, feature_options, features_name,
                                              prior_options)
from pyterrier_svmmap.selection.reference import queries_best_function
from pyterrier_svmmap.selection.engine import PAPER, Protocol, Search, from_paths, search
from pyterrier_svmmap.state import StateError
from pyterrier_svmmap.svm.docs import compose
from pyterrier_svmmap.svm.executors import resolve as resolve_executor
from pyterrier_svmmap.svm.params import STRUCT_SVM_PARAMS
from pyterrier_svmmap.svm.progress import Progress
from pyterrier_svmmap.svm.shared_cuts import PartsOracle, restrict_points
from pyterrier_svmmap.svm.slack import make_slack_groups
from pyterrier_svmmap.ties import break_ties
from pyterrier_svmmap.user_warnings import warn


#: validation data: :class:`~pyterrier_svmmap.queries.Queries`, or (raw, labels, offsets[, n_relevant[, docnos]])
ValidSet = Union[Queries, Tuple[np.ndarray, ...]]


class StructSVMRanker(Parametrized):
    __doc__ = compose("""A linear ranking function trained as a structural SVM for a ranking loss, on arrays.

    The array-level learner: numpy arrays and query offsets in, a fitted linear model out. The PyTerrier
    estimators (:class:`~pyterrier_svmmap.StructSVM`, :class:`~pyterrier_svmmap.SVMMap`), ``svmmap learn`` and
    ``svmmap reproduce`` all train with it. The constructor stores its keyword arguments as they are;
    :meth:`fit` (or :meth:`check_params`) checks them.""", STRUCT_SVM_PARAMS)

    PARAMS = STRUCT_SVM_PARAMS
    #: constructor parameters that change the model (``repr`` shows them; the model state saves them)
    MODEL_PARAMS = STRUCT_SVM_PARAMS.model_names

    def __init__(self, *, C=DEFAULT_C_GRID, loss="map", loss_params=None, features="bins", normalise="query",
                          n_bins=50, binning="quantile", threshold_depth=200, epsilon=1e-3, max_iter=1000,
                          prior=None, prior_scale=1.0, first_stage=None, cv=5, random_state=0, selection="validation",
                          fallback_alpha=DEFAULT_ALPHA, min_valid_queries=DEFAULT_MIN_VALID_QUERIES,
                          average_folds=True, share_cuts="auto", rel=1.0, verbose=False, executor=None,
                          queries_per_shard=1000, n_jobs=None):
        self.C = C
        self.loss = loss
        self.loss_params = loss_params
        self.features = features
        self.normalise = normalise
        self.n_bins = n_bins
        self.binning = binning
        self.threshold_depth = threshold_depth
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.prior = prior
        self.prior_scale = prior_scale
        self.first_stage = first_stage
        self.cv = cv
        self.random_state = random_state
        self.selection = selection
        self.fallback_alpha = fallback_alpha
        self.min_valid_queries = min_valid_queries
        self.average_folds = average_folds
        self.share_cuts = share_cuts
        self.rel = rel
        self.verbose = verbose
        self.executor = executor
        self.queries_per_shard = queries_per_shard
        self.n_jobs = n_jobs

    def check_params(self) -> None:
        """ValueError naming the first parameter that cannot work, alone (:data:`STRUCT_SVM_PARAMS`' checks) or
        with another: the loss with its ``loss_params``, ``prior="auto"`` with ``selection``."""
        super().check_params()
        self.slack_groups(1.0)                              # the loss and its parameters
        if self.prior == "auto" and self.selection != "auto":
            raise ValueError("prior='auto' (with and without the prior, chosen with C) needs selection='auto'")

    def relevant(self, labels: np.ndarray) -> np.ndarray:
        """Labels as 1.0 (label ≥ ``rel``) and 0.0: the package's relevance rule.

        Parameters
        ----------
        labels : ndarray of shape (n,)
            Relevance labels.
        """
        return (np.asarray(labels, dtype=float) >= self.rel).astype(float)

    def feature_options(self) -> List[Union[str, Sequence[str]]]:
        """The feature blocks to train (:func:`~pyterrier_svmmap.selection.grids.feature_options` of
        ``features``), in the order of their paths in ``path_``."""
        return feature_options(self.features)

    def selects_auto(self) -> bool:
        """Whether :meth:`fit` runs ``selection="auto"``: asked, and more than one setting (a single C, features
        and prior is trained as given: nothing to select, no fallback)."""
        return self.selection == "auto" and \
            len(c_grid(self.C)) * len(self.feature_options()) * len(prior_options(self.prior)) > 1

    def slack_groups(self, C: float) -> list:
        """The solver's slack groups of ``loss`` and ``loss_params``
        (:func:`~pyterrier_svmmap.svm.slack.make_slack_groups`; their errors as ValueError naming the loss).

        Parameters
        ----------
        C : float
            The constant of every group (the paths are trained from groups at C = 1).
        """
        try:
            return make_slack_groups(self.loss, C, **dict(self.loss_params or {}))
        except TypeError as e:
            raise ValueError(f"loss={self.loss!r} with loss_params={self.loss_params!r} is not valid: {e}") from None

    @property
    def needs_bias(self) -> bool:
        """Whether φ ends with a constant 1 (the classification losses' bias, Yue et al. §5.2)."""
        return any(g.loss.needs_bias for g in self.slack_groups(1.0))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self.MODEL_PARAMS)})"

    # -- training ---------------------------------------------------------------------------------
    def fit(self, raw, labels, offsets, n_relevant=None, valid: Optional[ValidSet] = None,
            base_names: Optional[Sequence[str]] = None, *, shard_queries: Optional[Sequence[int]] = None,
            declared_first_stage: Optional[int] = None) -> "StructSVMRanker":
        """Train on candidates grouped by query.

        Queries without a relevant or without a non-relevant candidate cannot form constraints: they are
        skipped with one warning that counts them. The cutting-plane sums are taken over shards of whole
        queries (``queries_per_shard``, or ``shard_queries``), in order, as a Dask cluster takes them, so that
        this process and a cluster give the same model bit for bit. With an ``executor``, ``selection="auto"``
        runs its independent fits on the executor's processes (:meth:`search_map`); any other selection trains
        on shards of the data held by the executor (its ``fit_shards``).

        Parameters
        ----------
        raw, labels, offsets : array-like
            (n, F) base-function scores (NaN where a function did not retrieve the candidate), their (n,) relevance
            (≥ ``rel`` relevant) and the (Q + 1,) query boundaries.
        n_relevant : array-like, optional
            (Q,) relevant documents per query in the qrels (default: among the candidates); used by
            validation and held-out MAP only.
        valid : Queries or tuple, optional
            Validation queries that choose among the settings: :class:`~pyterrier_svmmap.queries.Queries`, or
            ``(raw, labels, offsets)``, optionally with ``n_relevant`` and ``docnos``; without them the
            settings are chosen by ``cv``-fold cross-validation.
        base_names : sequence of str, optional
            A name per base function (for ``feature_names_`` and pictures).
        shard_queries : sequence of int, optional
            Keyword-only: the number of queries of each shard, e.g. one per file (:meth:`fit_shards` passes it).
        declared_first_stage : int, optional
            Keyword-only: the column of the first stage the candidates declare (``RunFeatures(base, first=...)``),
            the reference function when ``first_stage="auto"``.

        Returns
        -------
        StructSVMRanker
            self, fitted.
        """
        self.check_params()
        raw, labels, offsets = check_ranking_arrays(raw, labels, offsets)
        if labels is None:
            raise ValueError("fit() needs labels")
        self.__dict__.pop("choice_", None)                      # set by selection="auto" only
        valid = as_queries(valid)
        if base_names is not None and len(base_names) != raw.shape[1]:
            raise ValueError(f"{len(base_names)} base names for {raw.shape[1]} base functions")
        self._declared_first_stage = declared_first_stage
        if self.executor is not None and not self.selects_auto():
            shards = split_queries(raw, labels, offsets, shard_sizes(len(offsets) - 1, self.queries_per_shard))
            return resolve_executor(self.executor).fit_shards(self, shards, valid, base_names)
        labels = self.relevant(labels)
        ok = usable_queries(labels, offsets)
        warn_skipped(int((~ok).sum()), len(ok))
        with threads.using(self.n_jobs), self.search_map() as fit_map:
            return self._fit_here(raw, labels, offsets, ok, n_relevant, valid, base_names, shard_queries, fit_map)

    def search_map(self) -> ContextManager[Optional[Callable[[Callable[[int], Any], int], list]]]:
        """Where the independent fits of ``selection="auto"`` run: a context manager that gives the
        :data:`~pyterrier_svmmap.selection.engine.FitMap` of ``executor`` (e.g. the workers of a Dask cluster,
        open for the block), or None without an executor (this process); ValueError when the executor's shard
        executor cannot run independent fits (it has no ``fit_map``)."""
        if self.executor is None:
            return contextlib.nullcontext(None)
        executor = resolve_executor(self.executor)
        if not callable(getattr(executor, "fit_map", None)):
            raise ValueError(f"the shard executor {type(executor).__name__} of executor={self.executor!r} cannot "
                             "run the independent fits of selection='auto' (it has no fit_map()); give "
                             "selection='validation' with validation data, or a single C")
        return executor.fit_map()

    def _fit_here(self, raw, labels, offsets, ok, n_relevant, valid, base_names, shard_queries, fit_map=None
                  ) -> "StructSVMRanker":
        """:meth:`fit` in this process, on checked arrays, relevance labels and the usable queries ``ok``;
        ``fit_map`` runs the independent fits of ``selection="auto"`` (None: here)."""
        grid = c_grid(self.C)
        n_queries, n_candidates = len(offsets) - 1, len(raw)
        shards = usable_shard_sizes(ok, shard_queries, self.queries_per_shard)
        if not ok.all():                                # else the arrays as they are: no copy
            raw, labels, offsets, _ = subset_queries(raw, labels, offsets, ok)
        self.n_functions_ = raw.shape[1]
        self.base_names_ = list(base_names) if base_names is not None else default_base_names(self.n_functions_)
        reference = self.reference_column()
        self.first_stage_ = None if reference is None else self.base_names_[reference]
        t0 = time.perf_counter()
        settings = [(option, prior) for option in self.feature_options() for prior in prior_options(self.prior)]
        auto = self.selects_auto()
        if valid is not None and len(grid) * len(settings) > 1 and not self._can_choose(valid):
            valid = None
        n_rel = None if n_relevant is None else np.asarray(n_relevant, dtype=float)[ok]
        train = Queries(raw, labels, offsets, n_relevant=n_rel, reference=reference)
        valid = None if valid is None else self._valid_queries(valid)
        protocol = Protocol.auto(self.fallback_alpha, self.min_valid_queries, self.average_folds,
                                 share_cuts=self.share_cuts) if auto else replace(PAPER, share_cuts=self.share_cuts)
        self._progress = Progress(self.verbose, self._n_paths(protocol, valid, len(settings), fit_map) * len(grid),
                                   type(self).__name__, self.epsilon, self.max_iter)
        try:
            found = search(train, valid, settings, self.C, self.path_trainer(), self._make_layout, protocol,
                           cv=self.cv, random_state=self.random_state, prior_scale=self.prior_scale, shards=shards,
                           fit_map=fit_map)
        finally:
            self._progress.close()
            del self._progress
        self._learn(found, with_prior=auto)
        self.training_summary_ = dict(n_queries=int(ok.sum()), n_candidates=int(len(raw)),
                                      skipped_queries=int(n_queries - ok.sum()),
                                      skipped_candidates=int(n_candidates - len(raw)),
                                      seconds=time.perf_counter() - t0,
                                      **({"selection_queries": int(found.fit.n_queries)}
                                         if protocol.pool and self.selection_ == "cv" else {}))
        return self

    def _n_paths(self, protocol: Protocol, valid: Optional[Queries], n_settings: int, fit_map) -> int:
        """The paths of C a fit trains in this process (for the progress bar)."""
        if valid is not None and evidence_source(valid.n_queries, protocol.min_valid_queries) == "validation":
            return n_settings
        folds = self.cv * n_settings if fit_map is None else 0
        return folds + (n_settings if protocol.refit_every else 1)

    def fit_queries(self, train: Queries, valid: Optional[Queries] = None) -> "StructSVMRanker":
        """:meth:`fit` on :class:`~pyterrier_svmmap.queries.Queries` (the
        :class:`~pyterrier_svmmap.queries.QueryRanker` protocol).

        Parameters
        ----------
        train : Queries
            Training queries with labels (``n_relevant`` normalises held-out MAP).
        valid : Queries, optional
            Validation queries (as in :meth:`fit`).
        """
        return self.fit(train.raw, train.labels, train.offsets, train.n_relevant, valid=valid)

    def fit_shards(self, sources: Sequence, valid: Optional[ValidSet] = None,
                   base_names: Optional[Sequence[str]] = None) -> "StructSVMRanker":
        """Train on data that comes in shards, through the shard executor of ``executor``
        (:mod:`~pyterrier_svmmap.svm.executors`): without one they are read and concatenated here and :meth:`fit`
        trains, its sums taken shard by shard; on a Dask cluster (:mod:`~pyterrier_svmmap.scale.dask`) each
        worker keeps its shards and the model equals one process's fit. There, ``selection="validation"`` with a
        grid needs validation data; ``selection="auto"`` gathers the shards here and cross-validates on the
        cluster.

        Parameters
        ----------
        sources : sequence
            svmlight/LETOR file paths or ``(raw, labels, offsets)`` tuples (of arrays, or on a Dask cluster of
            futures of arrays made on the workers); a query's candidates all in one shard.
        valid : Queries, tuple or path, optional
            As in :meth:`fit`, or an svmlight file path (read as wide as the training shards).
        base_names : sequence of str, optional
            A name per base function.

        Returns
        -------
        StructSVMRanker
            self, fitted.
        """
        if self.executor is not None:             # in this process, fit() checks the parameters
            self.check_params()
        return resolve_executor(self.executor).fit_shards(self, sources, valid, base_names)

    def uses_prior(self, prior: Optional[str] = "default") -> bool:
        """Whether a path is trained towards the prior.

        Parameters
        ----------
        prior : str or None
            ``"best"``, None, or ``"default"`` for the parameter ``prior``.
        """
        return bool(self.prior if prior == "default" else prior)

    def prior_weights(self, layout: FeatureLayout, function: int, raw: Optional[np.ndarray] = None,
                      offsets: Optional[np.ndarray] = None, span: Optional[float] = None) -> np.ndarray:
        """The prior's centre w₀ in ``layout``: the weights that rank like base function ``function`` alone,
        its column scaled by ``prior_scale`` over its range
        (:meth:`~pyterrier_svmmap.features.layout.FeatureLayout.prior_weights`).

        Parameters
        ----------
        layout : FeatureLayout
            The fitted layout of the path.
        function : int
            The reference function: the first stage, or the best on the training queries.
        raw, offsets : ndarray, optional
            The training candidates' scores and query boundaries, on which the column's range is taken.
        span : float, optional
            The column's range when it is known already (a cluster's, over its shards).
        """
        return layout.prior_weights(function, raw, offsets, scale=self.prior_scale, span=span)

    def select_paths(self, grids: Sequence[Sequence[float]], trained: Sequence[tuple], valid: Optional[ValidSet]
                     ) -> None:
        """The paper's choice among paths of C trained elsewhere (a cluster's shards): the best validation MAP
        (:func:`~pyterrier_svmmap.selection.engine.from_paths`, ties broken by ``tie_function_``), and the
        learned attributes (``path_``, ``C_``, ``coef_``, ...) as :meth:`fit` sets them.

        Parameters
        ----------
        grids : sequence of sequences of float
            The C values of each feature option of :meth:`feature_options` (one length).
        trained : sequence of tuple
            Per feature option, its path: (layout, one training result per C, the prior's base function or
            None), as :meth:`train_path` returns it.
        valid : Queries or tuple, optional
            The validation queries (as in :meth:`fit`), or None: the first setting.
        """
        settings = [(option, self.prior) for option in self.feature_options()]
        valid = None if valid is None else self._valid_queries(valid)
        self._learn(from_paths(trained, settings, grids, valid, self.tie_function_), with_prior=False)

    def _learn(self, found: Search, with_prior: bool) -> None:
        """The learned attributes of the model a search made (``with_prior``: ``path_`` names each entry's
        prior, as ``selection="auto"`` records it)."""
        self.tie_function_ = found.tie_function
        self.selection_ = found.selection.method
        self.path_: List[dict] = found.path(with_prior, with_training=not with_prior)
        self.layout_, self.coef_, self.coefs_, self.C_ = found.layout, found.coef, found.coefs, found.C
        self.__dict__.pop("prior_function_", None)
        if found.function is not None:
            self.prior_function_ = self.base_names_[found.function]
        if found.fallback:
            self.features_ = "raw"
            self.history_, self.n_iter_, self.converged_ = [], 0, True
        else:
            self.features_ = features_name(found.settings[found.setting][0])
            kept = found.result
            self.history_, self.n_iter_, self.converged_ = list(kept.history), kept.n_iter, bool(kept.converged)
        self.feature_names_ = self.layout_.names()
        learned = self.path_[found.choice.best if found.choice is not None else found.selection.chosen]
        self.validation_: Dict[float, float] = model_state.block_validation(self.path_, learned)
        if with_prior:
            self.choice_ = found.record(self.path_)

    def reference_column(self) -> Optional[int]:
        """The reference function's column: ``first_stage`` among ``base_names_`` (``"auto"``: the one declared to
        :meth:`fit`), or None; ValueError for a column out of range or a name that is not a base function's."""
        first = self.first_stage
        if isinstance(first, str) and first == "auto" and "auto" not in self.base_names_:
            first = getattr(self, "_declared_first_stage", None)
        if first is None:
            return None
        if isinstance(first, str):
            if first not in self.base_names_:
                raise ValueError(f"first_stage={first!r} is not one of the base functions {self.base_names_}; "
                                 "give one of their names, a column, or None (the best on the training queries)")
            return self.base_names_.index(first)
        if not 0 <= int(first) < self.n_functions_:
            raise ValueError(f"first_stage={first!r} is not a column of the {self.n_functions_} base functions")
        return int(first)

    def _valid_queries(self, valid: ValidSet) -> Queries:
        """Validation data as :class:`~pyterrier_svmmap.queries.Queries`, checked, labels binary (``rel``),
        ``n_relevant`` as float when given."""
        valid = as_queries(valid)
        raw, labels, offsets = check_ranking_arrays(valid.raw, valid.labels, valid.offsets, what="validation")
        if labels is None:
            raise ValueError("validation needs labels")
        if raw.shape[1] != self.n_functions_:
            raise ValueError(f"validation candidates have {raw.shape[1]} base functions, training ones "
                             f"{self.n_functions_}")
        n_rel = valid.n_relevant
        return Queries(raw, self.relevant(labels), offsets, n_relevant=None if n_rel is None else
                       np.asarray(n_rel, dtype=float), docnos=valid.docnos)

    def _can_choose(self, valid: ValidSet) -> bool:
        """Whether validation queries can rank the settings: some candidate of theirs is relevant (label ≥
        ``rel``). Otherwise every setting scores MAP 0 and a choice would be arbitrary: a warning says so and
        the caller chooses by cross-validation instead."""
        valid = as_queries(valid)
        if valid.labels is None or self.relevant(valid.labels).any():
            return True
        warn(f"no validation candidate is relevant (label >= {self.rel:g}) in {len(valid.offsets) - 1} "
             "validation queries, so validation MAP cannot choose among the settings; they are chosen by "
             f"{self.cv}-fold cross-validation over the training queries instead (check that the "
             "validation qrels name the validation candidates' qids and docnos)")
        return False

    def _make_layout(self, queries: Queries, features) -> FeatureLayout:
        """The layout of feature blocks ``features`` fitted on ``queries`` (thresholds and scales; labels unused)."""
        return FeatureLayout.fit(queries.raw, queries.offsets, features, self.n_bins, self.binning,
                                 self.threshold_depth, bias=self.needs_bias, base_names=self.base_names_,
                                 normalise=self.normalise)

    def train_path(self, queries: Queries, grid: Sequence[float], setting: Tuple[Any, Optional[str]],
                   fold: Optional[int] = None, shards: Optional[np.ndarray] = None,
                   encoded: Optional[EncodedQueries] = None, *, parts: Optional[Tuple[list, list]] = None,
                   seeds: Optional[Tuple[list, list]] = None):
        """The path of C of one setting on these (usable) training queries: the
        :data:`~pyterrier_svmmap.selection.TrainPath` that the searches of :mod:`~pyterrier_svmmap.selection`
        call.

        Parameters
        ----------
        queries : Queries
            The training queries, labels binary.
        grid : sequence of float
            The C values, trained in order, each warm-started from the previous.
        setting : (features, prior)
            The feature blocks and the prior (``None`` or ``"best"``).
        fold : int, optional
            The cross-validation fold being trained (for progress reports), None for a final fit.
        shards : ndarray, optional
            Queries per shard (the order of the sums, see :meth:`fit`); None: all queries at once.
        encoded : EncodedQueries, optional
            φ of ``queries`` (its layout fitted on them or on more queries); else a layout of ``features`` is
            fitted on them.
        parts : (list of (φ, labels, offsets), list of int), optional
            Every fold's data and the folds ``queries`` are: each result keeps its points' per-fold sums
            (:class:`~pyterrier_svmmap.svm.shared_cuts.PartsOracle`); of ``encoded`` only the layout is read.
        seeds : (list, list of int), optional
            Such a path's ``points`` per C of ``grid`` and the folds ``queries`` are: each C starts from its
            constraints there (:func:`~pyterrier_svmmap.svm.shared_cuts.restrict_points`).

        Returns
        -------
        tuple
            (layout, one training result per C, index of the prior's base function or None).
        """
        features, prior = setting
        raw, labels, offsets = queries.raw, queries.labels, queries.offsets
        if encoded is None:
            encoded = EncodedQueries.of(self._make_layout(queries, features), raw, offsets)
        layout = encoded.layout
        w0, f = None, None
        if self.uses_prior(prior):
            f = queries_best_function(queries)
            w0 = self.prior_weights(layout, f, raw, offsets)
        losses = [g.loss for g in self.slack_groups(1.0)]
        if parts is not None:
            oracle = PartsOracle(parts[0], losses, parts[1])
        elif shards is None or len(shards) <= 1:
            oracle = solver.DataOracle(encoded.X, labels, offsets, losses)
        else:
            first = np.r_[0, np.cumsum(shards)]                      # each shard's first query
            parts = [(X, labels[offsets[first[j]]:offsets[first[j + 1]]], o)
                     for j, (X, o) in enumerate(encoded.shards(shards))]
            oracle = solver.DataOracle(None, None, None, losses, shards=parts)      # the sums shard by shard
        progress = getattr(self, "_progress", None)
        report = None if progress is None else progress.reporter(features_name(features), fold)
        seeded = None if seeds is None else [restrict_points(c, seeds[1], queries.n_queries) for c in seeds[0]]
        return layout, self._solve(oracle, grid, w0, report, seeded), f

    def _solve(self, oracle, grid: Sequence[float], prior: Optional[np.ndarray], report=None, seeds=None) -> list:
        """:func:`~pyterrier_svmmap.svm.cutting_plane.train_path` on ``oracle``'s data (here or a cluster's shards)."""
        return solver.train_path(None, None, None, self.slack_groups(1.0), grid, epsilon=self.epsilon,
                                 max_iter=self.max_iter, prior=prior, oracle=oracle, on_result=report,
                                 warn=report is None, seeds=seeds)

    def path_trainer(self) -> "PathTrainer":
        """:meth:`train_path` as a picklable callable (:class:`PathTrainer`), for a cluster's workers."""
        return PathTrainer(self)

    # -- prediction -------------------------------------------------------------------------------
    def decision_function(self, raw, offsets) -> np.ndarray:
        """Scores wᵀφ(x, d) of candidates. For the classification losses the bias is included, so ``> 0`` predicts
        relevance.

        Parameters
        ----------
        raw, offsets : ndarray
            Candidates ((n, F) base-function scores, NaN where a function did not retrieve the candidate) and their
            (Q + 1,) query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.

        Returns
        -------
        ndarray of shape (n,)
            The model's scores, ties not broken.
        """
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() or load a model first")
        raw, _, offsets = check_ranking_arrays(raw, None, offsets, what="input")
        if raw.shape[1] != self.n_functions_:
            raise ValueError(f"the model was trained on {self.n_functions_} base functions (features per "
                             f"candidate) but these candidates have {raw.shape[1]}")
        with threads.using(self.n_jobs):
            return self.layout_.transform(raw, offsets).dot(self.coef_)

    def ranking_scores(self, raw, offsets, docnos=None) -> np.ndarray:
        """:meth:`decision_function` with ties broken by the package's policy (:mod:`~pyterrier_svmmap.ties`):
        by the reference function (``tie_function_``), then by docno descending: what ``transform`` and
        ``svmmap classify`` output, and what held-out MAP is computed on.

        Parameters
        ----------
        raw, offsets : ndarray
            Candidates ((n, F) base-function scores, NaN where a function did not retrieve the candidate) and their
            (Q + 1,) query boundaries: query q holds rows ``offsets[q]:offsets[q + 1]``.
        docnos : ndarray of shape (n,), optional
            The candidates' document ids (the tie policy's last key).

        Returns
        -------
        ndarray of shape (n,)
            Scores whose order is the package's ranking (ties broken by the tie policy).
        """
        raw = score_matrix(raw)
        scores = self.decision_function(raw, offsets)
        return break_ties(scores, offsets, np.asarray(raw[:, self.tie_function_], dtype=float), docnos)[0]

    # -- state ------------------------------------------------------------------------------------
    def get_state(self) -> Tuple[dict, Dict[str, np.ndarray]]:
        """(meta, arrays): everything :meth:`from_state` needs to rebuild this fitted ranker exactly
        (:func:`~pyterrier_svmmap.svm.model_state.save`)."""
        return model_state.save(self)

    @classmethod
    def from_state(cls, meta: dict, arrays: Dict[str, np.ndarray]) -> "StructSVMRanker":
        """The fitted ranker saved by :meth:`get_state`, checked whole (:mod:`~pyterrier_svmmap.svm.model_state`):
        a :class:`~pyterrier_svmmap.state.StateError` (a ValueError) names the field that is missing or
        inconsistent."""
        missing = [k for k in ("params", "C_", "layout", "path", "n_iter", "converged") if k not in meta]
        if missing:
            raise StateError(missing[0], f"is missing (the state lacks {missing})")
        try:
            # a state without normalise is of a version that scaled nothing
            self = cls(**dict({"normalise": None}, **meta["params"]))
            self.check_params()
        except (TypeError, ValueError) as e:
            raise StateError("params", str(e)) from None
        return model_state.restore(self, meta, arrays)


class PathTrainer:
    """A ranker's :meth:`~StructSVMRanker.train_path`, picklable: what the searches of
    :mod:`~pyterrier_svmmap.selection` call, here or on another process (a shard executor's ``fit_map``).
    Pickled, it becomes the trainer of a copy of the ranker's parameters with ``executor=None`` and the
    fit's ``base_names_`` (the copy trains what the ranker would: the paths depend on the parameters and the
    arguments only)."""

    def __init__(self, ranker: StructSVMRanker):
        self.ranker = ranker

    def __call__(self, queries, grid, setting, fold=None, shards=None, encoded=None, **shared):
        return self.ranker.train_path(queries, grid, setting, fold, shards, encoded, **shared)

    def __reduce__(self):
        copy = type(self.ranker)(**dict(self.ranker.get_params(deep=False), executor=None))
        if hasattr(self.ranker, "base_names_"):
            copy.base_names_ = list(self.ranker.base_names_)
        return PathTrainer, (copy,)


def warn_skipped(skipped: int, total: int) -> None:
    if skipped:
        warn(f"skipping {skipped} of {total} training queries that have no relevant or no non-relevant "
             "candidate: they cannot form ranking constraints")
    if skipped == total:
        raise ValueError("no training query has both a relevant and a non-relevant candidate; check that the "
                         "labels match the candidates (for frames: the same qid and docno strings)")
