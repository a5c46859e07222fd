"""Model selection, re-exported for the learners and the command line (docs/model-selection.md)."""
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
