"""Training beyond one process: shards of queries and the in-process shard executor (:mod:`.shards`), Dask
(:mod:`.dask`, with its one client factory in :mod:`.client`). The estimators and the command line hand
:class:`~pyterrier_svmmap.svm.ranker.StructSVMRanker` the shard executor of their ``executor``
(:func:`.dask.executor_for`, :mod:`pyterrier_svmmap.svm.executors`)."""
