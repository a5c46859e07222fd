"""Training beyond one process: shards of queries (:mod:`.shards`), the in-process shard executor
(:mod:`.local`), Dask (:mod:`.dask`, with its one client factory in :mod:`.client`), plugged into the numeric
core through :mod:`pyterrier_svmmap.svm.executors` (:mod:`.executors`)."""
