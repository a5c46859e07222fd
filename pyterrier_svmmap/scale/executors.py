"""The shard-executor factory this package registers (entry point ``pyterrier_svmmap.executors``, see
:mod:`~pyterrier_svmmap.svm.executors`): ``None`` trains in this process, a Dask client, scheduler address
or ``"local"`` on a Dask cluster."""
from __future__ import annotations

from typing import Any

from pyterrier_svmmap.scale.client import is_dask_client


def executor_for(executor: Any):
    """The shard executor for an ``executor`` parameter, or None when it is none of the above."""
    if executor is None:
        from pyterrier_svmmap.scale.local import InProcessExecutor
        return InProcessExecutor()
    if isinstance(executor, str) or is_dask_client(executor):
        from pyterrier_svmmap.scale.dask import DaskExecutor
        return DaskExecutor(executor)
    return None
