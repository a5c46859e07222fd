"""``svmmap reproduce``: the experiment of Yue et al. (SIGIR 2007) §4–5 on a TREC-format collection.

One module per job: ``collection`` (TREC readers, ir_datasets), ``base_runs`` (the cached PISA base
functions), ``protocol`` (the trial plan: balanced random splits or folds), ``trials`` (one trial: fit and
test every system), ``evaluation`` (per-query measures and the aggregation over trials), ``checkpoints``
(the trial store that lets a run resume), ``runner`` (the trials one after another, in forked workers or on
Dask), ``workers`` and ``warm_up`` (what the worker processes run), ``report`` (tables and results.json). The
systems compared are those of :mod:`pyterrier_svmmap.experiments.systems`; the command line is
:mod:`pyterrier_svmmap.cli.reproduce`.
"""
