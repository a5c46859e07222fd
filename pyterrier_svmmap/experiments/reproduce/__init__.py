"""``svmmap reproduce`` (:mod:`pyterrier_svmmap.cli.reproduce`): the experiment of Yue et al. (SIGIR 2007) §4–5
on a TREC-format collection, one module per job: ``base_runs`` (the collection and its base runs),
``experiment`` (the splits and one run), ``trials`` (fitting, testing and checkpointing the systems of
:mod:`pyterrier_svmmap.experiments.systems` and the unsupervised fusions, here, in worker processes or on Dask),
``evaluation`` (measures, aggregates, tables).
"""
