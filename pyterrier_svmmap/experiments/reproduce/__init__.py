"""``svmmap reproduce`` (:mod:`pyterrier_svmmap.cli.reproduce`): the experiment of Yue et al. (SIGIR 2007) §4–5
on a TREC-format collection, one module per job: ``collection``, ``base_runs``, ``protocol`` (the splits),
``experiment`` (one run), ``runner`` and ``trials`` (fitting and testing the systems of
:mod:`pyterrier_svmmap.experiments.systems`), ``workers`` and ``warm_up``, ``checkpoints``, ``evaluation``,
``report``.
"""
