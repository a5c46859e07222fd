"""The structural SVM learners' constructor parameters, declared once (:mod:`pyterrier_svmmap.params`)."""
from __future__ import annotations

from typing import Any, Callable, Optional

from pyterrier_svmmap.features.blocks import BLOCK_KINDS
from pyterrier_svmmap.features.encoder import parse_blocks
from pyterrier_svmmap.features.transforms import BINNINGS
from pyterrier_svmmap.params import (Param, ParamSpec, boolean, one_of, optional_int, optional_positive_int,
                                     positive_int, positive_number)
from pyterrier_svmmap.selection import (DEFAULT_ALPHA, DEFAULT_C, DEFAULT_C_GRID, DEFAULT_FEATURES,
                                        DEFAULT_MIN_VALID_QUERIES, DEFAULT_PRIOR, SELECTION_METHODS, c_grid,
                                        feature_options)
import pyterrier_svmmap.threads as threads


def _unless(ok: Callable[[Any], bool], message: str) -> Callable[[Any], Optional[str]]:
    """A check: None when ``ok(value)``, else ``message``."""
    return lambda v: None if ok(v) else message


def _accepted_by(parse: Callable[[Any], Any], message: Callable[[Exception], str],
                 errors=(ValueError,)) -> Callable[[Any], Optional[str]]:
    """A check: None when ``parse(value)`` raises none of ``errors``, else ``message`` of the error."""
    def check(v) -> Optional[str]:
        try:
            parse(v)
        except errors as e:
            return message(e)
        return None
    return check


def _is_loss(v) -> bool:
    from pyterrier_svmmap.svm.losses.base import Loss
    return isinstance(v, (str, Loss))


_c_values = _accepted_by(c_grid, lambda e: f"{e} (or 'auto')")
_features = _accepted_by(lambda v: [parse_blocks(option) for option in feature_options(v)],
                         lambda e: f"must be 'auto' or one or more of {', '.join(map(repr, BLOCK_KINDS))} joined by "
                                   "'+' (e.g. 'bins+raw'), each at most once", (ValueError, TypeError, AttributeError))
_n_jobs = _accepted_by(threads.check_n_jobs, lambda e: "must be None (all cores), a positive number of threads or a "
                                                       "negative one (-1: all cores)")
_folds = _unless(lambda v: positive_int(v) is None and v >= 2, "must be an integer number of folds >= 2")
_alpha = _unless(lambda v: v is None or (positive_number(v) is None and v <= 1),
                 "(the level of the test that keeps the base function) must be in (0, 1] or None")
_first_stage = _unless(lambda v: isinstance(v, str) or (optional_int(v) is None and (v is None or v >= 0)),
                       "must be None, 'auto', a base function's name or its column (an integer >= 0)")
_rel = _unless(lambda v: positive_number(v) is None,
               "(the relevance threshold: label >= rel is relevant) must be a positive number")


#: :class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`'s parameters, with the paper's defaults
STRUCT_SVM_PARAMS = ParamSpec([
    Param("C", DEFAULT_C_GRID, "float, sequence of float or 'auto'",
          "OP 1's regularisation constant (½‖w‖² + C/n Σ_i ξ_i), or a grid of them, each trained along one "
          'warm-started path and chosen as ``selection`` says. ``"auto"``: 1e-4, 1e-3, …, 100 divided by R², '
          "φ's spread, per feature block (docs/user_guide.md#c-relative-to-the-features).",
          check=_c_values, cli="-c", default_doc="DEFAULT_C_GRID"),
    Param("loss", "map", 'str or Loss',
          'The structural loss Δ: ``"map"`` (SVM-map), any name of '
          ':data:`pyterrier_svmmap.svm.losses.LOSSES` (cutoffs as ``"ndcg@10"``), ``"combo"``, or '
          'a :class:`~pyterrier_svmmap.svm.losses.base.Loss` instance (which cannot be saved).',
          check=_unless(_is_loss, "must be a loss name or a Loss"), cli="--loss"),
    Param("loss_params", None, 'dict or None', 'The loss\'s parameters, e.g. ``{"k": 10}``; for ``"combo"``: '
          '``losses``, ``slack`` and ``C_weights``.',
          check=_unless(lambda v: v is None or isinstance(v, dict), "must be a dict or None")),
    Param("features", "bins", 'str or sequence of str',
          'The blocks of φ (:mod:`pyterrier_svmmap.features.blocks`): '
          + ", ".join(f'``"{name}"`` ({kind.description})' for name, kind in BLOCK_KINDS.items())
          + '; a combination such as ``"bins+raw"``, or ``"auto"``: bins, raw and bins+raw are each '
          'trained and chosen jointly with C (``features_`` says which was kept).',
          check=_features, cli="--features"),
    Param("normalise", "query", "{'query', None}",
          'How the ``raw`` block puts each base function on a scale: ``"query"``, (f − min_q f)/σ_f with '
          "σ_f the function's spread within training queries (free of its units); None, the scores as they "
          "are (the paper's and ``svm_map_learn``'s linear model).",
          check=one_of("query", None), implied=None, cli="--normalise"),
    Param("n_bins", 50, 'int', '|K_f|, the thresholds per base function (50 in the paper).',
          check=positive_int, cli="--n-bins"),
    Param("binning", "quantile", "{'quantile', 'minmax', 'percentile'}",
          'How scores are placed among the thresholds: at quantiles of the training scores, or '
          'per query after min–max or percentile scaling with thresholds evenly spaced in [0, 1].',
          check=one_of(*BINNINGS)),
    Param("threshold_depth", 200, 'int or None', "With quantile binning, the quantiles of each training "
          "query's top ``threshold_depth`` candidates per function (None: all).", check=optional_positive_int),
    Param("epsilon", 1e-3, 'float', 'The cutting-plane tolerance: training stops when no constraint is violated '
          'by more than ε.', check=positive_number, cli="-e"),
    Param("max_iter", 1000, 'int', 'The cap on cutting-plane iterations per C.', check=positive_int,
          cli="--max-iter"),
    Param("prior", None, "{None, 'best', 'auto'}",
          'None regularises towards w = 0 (the paper); ``"best"`` towards the reference function '
          '(``first_stage``), ½‖w − w₀‖²; with ``selection="auto"`` also ``"auto"`` (both, chosen with C).',
          check=one_of(None, "best", "auto"), cli="--prior"),
    Param("prior_scale", 1.0, 'float', "The size of w₀: the prior function's contribution spans about "
          "[0, prior_scale].", check=positive_number),
    Param("first_stage", None, "int, str, 'auto' or None",
          'The reference function, which the prior starts from, ``selection="auto"`` falls back to and '
          'ties are broken by: a base function by column or name; ``"auto"``, the one the candidates declare '
          '(``RunFeatures(base, first=name)``); None, the best base function on the training queries.',
          check=_first_stage, implied=None),
    Param("cv", 5, 'int',
          'Folds (by query, shuffled with ``random_state``) of the cross-validation that chooses among '
          'settings when validation queries are not the evidence.',
          check=_folds, cli="--cv"),
    Param("random_state", 0, 'int or None', 'The seed of the cross-validation folds.', check=optional_int),
    Param("selection", "validation", "{'validation', 'auto'}",
          'How a setting is chosen among several (C, features, prior) '
          '(:func:`~pyterrier_svmmap.selection.engine.search`, docs/model-selection.md). ``"validation"``: the '
          "paper's protocol, the best validation MAP (without validation data, of ``cv``-fold "
          'cross-validation); ``"auto"``: cross-validation over every judged query, the reference function '
          'kept unless a max-gain test at ``fallback_alpha`` says learning gains (``choice_``).',
          check=one_of(*SELECTION_METHODS), implied="validation", cli="--selection"),
    Param("fallback_alpha", DEFAULT_ALPHA, 'float or None', 'With ``selection="auto"``: the level of the test '
          'that keeps the reference function (0.5: median-unbiased); None never falls back.',
          check=_alpha, implied=DEFAULT_ALPHA, cli="--fallback-alpha"),
    Param("min_valid_queries", DEFAULT_MIN_VALID_QUERIES, 'int or None',
          'With ``selection="auto"``: from this many validation queries on, the validation set '
          'alone is the evidence; None always cross-validates over training ∪ validation.',
          check=optional_positive_int, implied=DEFAULT_MIN_VALID_QUERIES, cli="--min-valid-queries"),
    Param("average_folds", True, 'bool', 'With ``selection="auto"`` and cross-validation: average the refit '
          'with the fold models.', check=boolean, implied=True),
    Param("share_cuts", "auto", "{'auto', True, False}", 'With cross-validation: train each setting\'s first '
          'fold over every fold\'s queries, keeping each fold\'s sums, and start the other folds\' paths and the '
          'refit from their exact constraints at its points (docs/performance.md). Every path still converges to '
          'its duality gap Σ C ε, from fewer passes over large data, but to another point within the gap than '
          'without, so a choice at a near-tie may differ. ``"auto"``: from 100,000 cross-validated candidates on, '
          'where it pays (1.2× faster on 200,000, 1.5× on 900,000).',
          check=one_of("auto", True, False), implied=False),
    Param("rel", 1.0, 'float', 'The relevance threshold: a candidate is relevant when its label ≥ ``rel`` (as '
          'ir_measures\' ``AP(rel=1)``).', check=_rel, cli="--rel"),
    Param("verbose", False, 'bool', 'Show progress on stderr: a bar over the fits and one line per trained C.',
          check=boolean, model=False),
    Param("executor", None, "None, 'local', str or dask.distributed.Client",
          'Where the cutting-plane iterations run, the model unchanged: this process (None), a new local Dask '
          'cluster (``"local"``), a scheduler address or a Dask client; StructSVMRanker takes None or a shard '
          'executor (:func:`pyterrier_svmmap.scale.dask.executor_for`).',
          check=None, model=False, runtime=True, cli="--workers"),
    Param("queries_per_shard", 1000, 'int', 'With an executor, the queries per shard (fixed, so the model does '
          'not depend on the workers).', check=positive_int, model=False),
    Param("n_jobs", None, 'int or None',
          'Threads of this process (:mod:`pyterrier_svmmap.threads`): None every core, a negative number '
          'counts back from all (-1 all); the model is the same bit for bit for every value.',
          check=_n_jobs, model=False, runtime=True, cli="-j"),
])

#: the PyTerrier estimators' parameters: the package's default model selection (docs/model-selection.md)
ESTIMATOR_PARAMS = STRUCT_SVM_PARAMS.with_defaults(C=DEFAULT_C, features=DEFAULT_FEATURES, prior=DEFAULT_PRIOR,
                                                   selection="auto", first_stage="auto")

#: :class:`~pyterrier_svmmap.SVMMap`'s: Δ = 1 − AP, so no loss to choose
SVMMAP_PARAMS = ESTIMATOR_PARAMS.without("loss", "loss_params")
