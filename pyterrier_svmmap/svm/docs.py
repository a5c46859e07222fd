"""The parameters of the structural SVM learners, documented once and composed into the docstrings of
every class that takes them (:class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker`,
:class:`~pyterrier_svmmap.StructSVM`, :class:`~pyterrier_svmmap.SVMMap`), in numpydoc form."""
from __future__ import annotations

import textwrap
from typing import Dict, Optional, Sequence, Tuple

#: parameter name → (type and default, description)
PARAMETERS: Dict[str, Tuple[str, str]] = {
    "C": ("float, sequence of float or 'auto', default DEFAULT_C_GRID",
          "OP 1's regularisation constant (objective ½‖w‖² + C/n Σ_i ξ_i), or a grid of them. With a grid, "
          "every C is trained (one warm-started path) and the one with the best validation MAP is kept: MAP on "
          "the validation queries given to ``fit``, or, without them, the mean held-out MAP of ``cv``-fold "
          "cross-validation over the training queries (:mod:`pyterrier_svmmap.selection`). ``\"auto\"``: the "
          "grid 1e-4, 1e-3, …, 1000 divided by R², the mean squared distance of a candidate's φ from its "
          "query's mean on the training candidates, per feature block, so that the grid means the same "
          "regularisation whatever the block, the number of base functions or their units (SVMlight's default "
          "C = 1/mean ‖x‖² rests on the same argument); ``C_`` and ``path_`` give the C values trained."),
    "loss": ("str or Loss, default 'map'",
             "The structural loss Δ: ``\"map\"`` (SVM-map), any name of "
             ":data:`pyterrier_svmmap.svm.losses.LOSSES` (cutoffs as ``\"ndcg@10\"``), ``\"combo\"``, or a "
             ":class:`~pyterrier_svmmap.svm.losses.base.Loss` instance (which cannot be saved)."),
    "loss_params": ("dict or None, default None",
                    "The loss's parameters, e.g. ``{\"k\": 10}``; for ``\"combo\"``: ``losses``, ``slack`` and "
                    "``C_weights``."),
    "features": ("str or sequence of str, default 'bins'",
                 "The blocks of φ: ``\"bins\"`` (the paper's threshold indicators), ``\"raw\"`` (the base scores, "
                 "scaled as ``normalise`` says), ``\"minmax\"`` (per-query min–max normalised), a combination such as "
                 "``\"bins+raw\"``, or ``\"auto\"``: bins, raw and bins+raw are each trained and chosen jointly "
                 "with C (``features_`` says which was kept)."),
    "normalise": ("{'query', None}, default 'query'",
                  "How the ``raw`` block puts each base function on a scale. ``\"query\"``: (f − min_q f)/σ_f, "
                  "σ_f the function's spread within queries on the training candidates, so that multiplying a "
                  "function by a positive number or adding a constant to it (for all queries or per query) "
                  "changes neither the model's ranking nor its cost, and C means the same for every data set; "
                  "the scales are kept in the model, so scoring stays one dot product per block. None: the scores "
                  "as they are (the paper's and ``svm_map_learn``'s linear model, whose weights and C depend "
                  "on the scores' units). In every case a function that never varies within a training query "
                  "gets weight 0 exactly (:mod:`pyterrier_svmmap.features.encoder`)."),
    "n_bins": ("int, default 50", "|K_f|, the thresholds per base function (50 in the paper)."),
    "binning": ("{'quantile', 'minmax', 'percentile'}, default 'quantile'",
                "How scores are placed among the thresholds: at quantiles of the training scores, or per query "
                "after min–max or percentile scaling with thresholds evenly spaced in [0, 1]."),
    "threshold_depth": ("int or None, default 200",
                        "With quantile binning, the quantiles are taken over each training query's top "
                        "``threshold_depth`` candidates per function (None: over all candidates), so that "
                        "the thresholds fall where the ranking is decided."),
    "epsilon": ("float, default 1e-3",
                "The cutting-plane tolerance: training stops when no constraint is violated by more than ε."),
    "max_iter": ("int, default 1000", "The cap on cutting-plane iterations per C."),
    "prior": ("{None, 'best', 'auto'}, default None",
              "None regularises towards w = 0 (the paper); ``\"best\"`` towards the base function with the "
              "highest training MAP (½‖w − w₀‖²), so that a small C keeps that function's ranking and a larger "
              "C moves away from it only as far as the training constraints ask; with ``selection=\"auto\"`` "
              "also ``\"auto\"`` (both, chosen with C)."),
    "prior_scale": ("float, default 1.0",
                    "The size of w₀: the prior function's contribution spans about [0, prior_scale]."),
    "cv": ("int, default 5",
           "Folds of the cross-validation that chooses C (and features) when ``fit`` gets no validation data: "
           "folds by query, shuffled with ``random_state``, thresholds learned on each fold's training part; "
           "the whole path is then trained on all training queries. Ignored with validation data or one "
           "setting."),
    "random_state": ("int or None, default 0", "The seed of the cross-validation folds."),
    "rel": ("float, default 1.0",
            "The relevance threshold: a candidate is relevant when its label ≥ ``rel`` (as ir_measures' "
            "``AP(rel=1)`` and LETOR's MAP); graded labels are binarised with it for the loss and validation "
            "MAP."),
    "selection": ("{'validation', 'auto'}, default 'validation'",
                  "How a setting is chosen among several (C, features, prior). ``\"validation\"``: the paper's "
                  "protocol and svm_map_learn's, the best validation MAP, or without validation data the best "
                  "mean held-out MAP of ``cv``-fold cross-validation over the training queries. ``\"auto\"`` "
                  "(:func:`~pyterrier_svmmap.selection.select_auto`): per-query held-out AP of every setting and "
                  "of the *fallback* — the base function with the best MAP, as a model — from ``cv``-fold "
                  "cross-validation over training ∪ validation queries; the arg-max is refitted on all of them "
                  "and replaces the fallback only if a sign-flip max-gain test gives p ≤ ``fallback_alpha``. A "
                  "single setting is trained as given. ``choice_`` records the decision."),
    "fallback_alpha": ("float or None, default 0.5",
                       "With ``selection=\"auto\"``: the level of the test that keeps the base function. 0.5 "
                       "asks the learned model's held-out gain to exceed the median of what the best of the "
                       "same settings shows without any real effect; None never falls back."),
    "min_valid_queries": ("int or None, default None",
                          "With ``selection=\"auto\"``: from this many validation queries on, the validation set "
                          "alone is the evidence; None always cross-validates over training ∪ validation."),
    "average_folds": ("bool, default True",
                      "With ``selection=\"auto\"``, cross-validation and φ without fitted thresholds (raw, "
                      "minmax): the final weights are the average of the fold models and the refit at the "
                      "chosen setting."),
    "verbose": ("bool, default False", "Show progress on stderr: a bar over the fits and one line per trained C."),
    "executor": ("None, 'local', str or dask.distributed.Client, default None",
                 "Where the cutting-plane iterations run: this process (None), a new local Dask cluster with "
                 "a worker per core (``\"local\"``), the Dask scheduler at an address, or a Dask client "
                 "(:mod:`pyterrier_svmmap.scale`). It does not change the model."),
    "queries_per_shard": ("int, default 1000",
                          "With an executor, the training queries are cut into shards of this many queries "
                          "(fixed, so that the model does not depend on the number of workers)."),
    "n_jobs": ("int or None, default None",
               "Threads of this process for training and scoring (:mod:`pyterrier_svmmap.threads`): None every "
               "core, as LightGBM; 1 one; a negative number counts back from all cores, as in scikit-learn "
               "(-1 all, -2 all but one). The work is cut into pieces whose results do not depend on the cut, "
               "so the model is the same bit for bit for every value; it is neither saved with the model nor "
               "shown by ``repr``. numba's and BLAS's own thread settings are left as they are."),
}

#: the learned attributes every structural SVM learner sets in ``fit``
ATTRIBUTES: Dict[str, Tuple[str, str]] = {
    "coef_": ("ndarray", "w, the weights of the kept model."),
    "C_": ("float", "The kept C."),
    "features_": ("str", "The feature blocks of the kept model (``features``, or the one ``\"auto\"`` chose)."),
    "path_": ("list of dict",
              "Per (features, C) of the grid, in order: features, C, validation (MAP, or the mean of "
              "``cv_scores`` with cross-validation), n_iter, converged, gap, primal, seconds."),
    "coefs_": ("ndarray", "w of every C of the kept features' path, in the grid's order."),
    "validation_": ("dict", "C → validation MAP of the kept features."),
    "selection_": ("str", "How the setting was chosen: ``\"validation\"``, ``\"cv\"`` or ``\"none\"``."),
    "history_": ("list of dict",
                 "Per cutting-plane iteration of the kept model: primal and dual objective, duality gap, "
                 "violation, working-set size, seconds."),
    "n_iter_": ("int", "Cutting-plane iterations of the kept model."),
    "converged_": ("bool", "Whether the kept model reached the tolerance ε."),
    "layout_": ("FeatureLayout", "φ's layout: blocks, thresholds, base names."),
    "feature_names_": ("list of str", "A name per dimension of φ."),
    "base_names_": ("list of str", "A name per base function."),
    "tie_function_": ("int", "The base function whose score breaks ties (:mod:`pyterrier_svmmap.ties`)."),
    "prior_function_": ("str", "With ``prior=\"best\"``: the base function regularised towards."),
    "choice_": ("dict", "With ``selection=\"auto\"``: the decision and its evidence (the learned arg-max, its "
                        "mean held-out gain over the fallback, t, p_value, alpha, fallback, source, chosen)."),
}

#: the defaults of the PyTerrier estimators (:class:`~pyterrier_svmmap.StructSVM`,
#: :class:`~pyterrier_svmmap.SVMMap`) where they differ from the array-level ranker's (the paper's protocol)
ESTIMATOR_DEFAULTS: Dict[str, str] = {"C": "'auto'", "features": "'auto'", "prior": "'best'",
                                      "selection": "'auto'"}


def section(title: str, entries: Dict[str, Tuple[str, str]], names: Sequence[str], indent: str = "    ",
            defaults: Optional[Dict[str, str]] = None) -> str:
    """A numpydoc section (``Parameters``, ``Attributes``) of ``names``, indented by ``indent``; ``defaults``
    replaces the documented default of the entries it names."""
    lines = [title, "-" * len(title)]
    for name in names:
        kind, text = entries[name]
        if defaults and name in defaults:
            kind = f"{kind.split(', default ')[0]}, default {defaults[name]}"
        lines.append(f"{name} : {kind}")
        lines += textwrap.wrap(text, width=100, initial_indent="    ", subsequent_indent="    ")
    return textwrap.indent("\n".join(lines), indent)


def compose(summary: str, parameters: Sequence[str], attributes: Sequence[str] = tuple(ATTRIBUTES),
            extra_attributes: Optional[Dict[str, Tuple[str, str]]] = None,
            defaults: Optional[Dict[str, str]] = None) -> str:
    """A class docstring: ``summary`` (already indented as a docstring body), then the Parameters (with
    ``defaults`` where the class's differ from :data:`PARAMETERS`') and Attributes sections."""
    return (summary.rstrip() + "\n\n" + section("Parameters", PARAMETERS, parameters, defaults=defaults) + "\n\n"
            + section("Attributes", dict(ATTRIBUTES, **(extra_attributes or {})), attributes) + "\n    ")
