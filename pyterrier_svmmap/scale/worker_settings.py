"""The allocator settings of the package's workers, applied to a cluster the user brings.

A LocalCluster made by ``executor="local"`` starts its worker processes with
:data:`~pyterrier_svmmap.scale.allocator.WORKER_ENVIRON` (glibc's ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` at 32 MiB), which glibc reads once, when a process starts. A cluster the user
started (``LocalCluster()``, ``dask worker``) runs with Dask's own ``MALLOC_TRIM_THRESHOLD_=65536``, which also
turns off glibc's dynamic mmap threshold: every array above 128 kB is then a fresh ``mmap`` whose pages fault in
on first touch, and the heap is returned to the system as soon as 64 kB are free at its top. The cutting-plane
iterations allocate arrays of a few hundred kB per shard and call, so they pay for that in every call.

:class:`AllocatorSettings` is a Dask ``WorkerPlugin`` that sets the same two thresholds in running workers
with glibc's ``mallopt`` (:func:`~pyterrier_svmmap.scale.allocator.set_allocator`, the call the environment
variables stand for), and records them in the worker's ``os.environ`` so that they can be checked and are
inherited by the worker's subprocesses. It changes nothing
else: no restart, no data moved, no thread settings (Dask's nannies already start workers with
``OMP_NUM_THREADS=1`` and the like, and the package's kernels use the worker's threads). It does nothing where
``mallopt`` is not glibc's (macOS, Windows, musl), and nothing in a worker that runs inside the process that
registered it (``LocalCluster(processes=False)``: the user's own process keeps its allocator).

:func:`apply_worker_settings` registers it; the package does so when it resolves an ``executor`` that is a
client or a scheduler address (:func:`~pyterrier_svmmap.scale.client.dask_client`), unless Dask's
configuration has ``svmmap.worker-settings: false``.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Optional

from distributed.diagnostics.plugin import WorkerPlugin

from pyterrier_svmmap.scale.allocator import set_allocator

log = logging.getLogger(__name__)

#: the name the plugin is registered under (registering again replaces nothing: the plugin is idempotent)
PLUGIN_NAME = "pyterrier-svmmap-allocator"

#: the Dask configuration key that turns the automatic registration off
CONFIG_KEY = "svmmap.worker-settings"


class AllocatorSettings(WorkerPlugin):
    """A Dask ``WorkerPlugin`` giving every worker of a cluster, present and future, the allocator thresholds of
    the package's own workers (:func:`~pyterrier_svmmap.scale.allocator.set_allocator`; see the module's description).

    Parameters
    ----------
    client_pid : int, optional
        The process that registers the plugin (default: this one): a worker running in it is left alone.
    """

    idempotent = True
    name = PLUGIN_NAME

    def __init__(self, client_pid: Optional[int] = None):
        self.client_pid = os.getpid() if client_pid is None else int(client_pid)

    def setup(self, worker: Any) -> None:
        if os.getpid() == self.client_pid:
            log.debug("worker %s runs in the client's process: its allocator is left as it is", worker.address)
            return
        done = set_allocator()
        log.debug("worker %s: %s", worker.address, done or "mallopt is not glibc's: nothing set")


def apply_worker_settings(client: Any) -> None:
    """Register :class:`AllocatorSettings` on the cluster of ``client`` (its workers now and later), unless
    Dask's configuration has ``svmmap.worker-settings: false``.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster.
    """
    import dask
    if not dask.config.get(CONFIG_KEY, True):
        return
    plugin = AllocatorSettings()
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(plugin, name=PLUGIN_NAME)
