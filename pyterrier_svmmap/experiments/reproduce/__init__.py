"""``svmmap reproduce`` (:mod:`pyterrier_svmmap.cli.reproduce`): the experiment of Yue et al. (SIGIR 2007) §4–5
on a TREC-format collection, one module per job: ``collection``, ``base_runs``, ``protocol`` (the splits),
``experiment`` (one run), ``trials`` (fitting, testing and checkpointing the systems of
:mod:`pyterrier_svmmap.experiments.systems`, here, in worker processes or on Dask), ``evaluation``, ``report``.
"""
