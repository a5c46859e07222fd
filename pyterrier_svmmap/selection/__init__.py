"""Model selection: the one home of choosing among a learner's settings.

* :mod:`~pyterrier_svmmap.selection.grids` — what is chosen among: C grids, feature blocks, priors, the folds;
* :mod:`~pyterrier_svmmap.selection.reference` — the reference function (the first stage, or the best base
  function on the training queries) and the held-out AP every setting is scored by;
* :mod:`~pyterrier_svmmap.selection.rule` — :func:`choose`, the one function that picks a setting (the paper's
  arg-max, or the default's fallback test over levels of model classes);
* :mod:`~pyterrier_svmmap.selection.engine` — :func:`search`, the one engine both protocols run
  (:data:`PAPER`, :meth:`Protocol.auto`): it trains the settings through the learner's callback, gathers the
  evidence (validation queries or cross-validation), calls :func:`choose` and makes the final model.

The names below are re-exported for the learners and the command line.
"""
from pyterrier_svmmap.selection.grids import (AUTO_C_GRID, AUTO_FEATURES, DEFAULT_ALPHA, DEFAULT_C, DEFAULT_C_GRID,
                                              DEFAULT_FEATURES, DEFAULT_MIN_VALID_QUERIES, DEFAULT_PRIOR,
                                              SELECTION_C_GRID, SELECTION_METHODS, c_grid, cv_folds,
                                              evidence_source, feature_options, features_name, is_auto_c, model_class,
                                              prior_options, resolve_c_grid, setting_levels)
from pyterrier_svmmap.selection.reference import (HeldOutRanking, best_function, best_row, fallback_model,
                                                  function_aps, per_query_ap, queries_best_function)
from pyterrier_svmmap.selection.rule import Choice, Selection, choose, first_best, max_gain_pvalue, paired_t, select
from pyterrier_svmmap.selection.engine import (PAPER, FitMap, HeldOut, Protocol, Search, cross_validate,
                                               encode_settings, from_paths, search)

__all__ = ["AUTO_C_GRID", "AUTO_FEATURES", "DEFAULT_ALPHA", "DEFAULT_C", "DEFAULT_C_GRID", "DEFAULT_FEATURES",
           "DEFAULT_MIN_VALID_QUERIES", "DEFAULT_PRIOR", "SELECTION_C_GRID", "SELECTION_METHODS", "c_grid", "cv_folds",
           "evidence_source", "feature_options", "features_name", "is_auto_c", "model_class", "prior_options",
           "resolve_c_grid", "setting_levels", "HeldOutRanking", "best_function", "best_row", "fallback_model",
           "function_aps", "per_query_ap", "queries_best_function", "Choice", "Selection", "choose", "first_best",
           "max_gain_pvalue", "paired_t", "select", "PAPER", "FitMap", "HeldOut", "Protocol", "Search",
           "cross_validate", "encode_settings", "from_paths", "search"]
