"""glibc's allocator thresholds of the package's Dask workers: what a worker process is started with
(``executor="local"``, :mod:`~pyterrier_svmmap.scale.client`) or given while it runs
(:mod:`~pyterrier_svmmap.scale.worker_settings`)."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Dict, Optional

#: glibc's allocator thresholds of the package's workers: blocks below 32 MiB come from the heap, and the heap is
#: trimmed when more than 32 MiB are free at its top, so a worker still returns large freed memory. Dask's own
#: ``MALLOC_TRIM_THRESHOLD_=65536`` also turns off glibc's dynamic mmap threshold: every array above 128 kB is
#: then a fresh mmap whose pages fault in on first touch, and the heap is given back whenever 64 kB are free at
#: its top, so each cutting-plane iteration's arrays (a few hundred kB per shard) fault their pages in again
#: (docs/performance.md, "Dask"). Set in the worker processes of a LocalCluster made by ``executor="local"``
#: (Dask's ``distributed.nanny.pre-spawn-environ``) and, in running workers, by :func:`set_allocator`.
WORKER_ENVIRON = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024), "MALLOC_TRIM_THRESHOLD_": str(32 * 1024 * 1024)}

#: glibc's ``mallopt`` parameter of each variable of :data:`WORKER_ENVIRON`
#: (``M_TRIM_THRESHOLD`` and ``M_MMAP_THRESHOLD`` of ``<malloc.h>``)
MALLOPT_PARAMETERS = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3}


def _glibc_mallopt():
    """glibc's ``mallopt``, or None where the C library is not glibc."""
    if not hasattr(os, "confstr"):
        return None
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return None
    if not version.startswith("glibc"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is not None:
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def set_allocator(environ: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Set glibc's thresholds of ``environ`` (default :data:`WORKER_ENVIRON`)
    in this process with ``mallopt``, and write each one that took effect into ``os.environ``.

    Parameters
    ----------
    environ : dict of str to str, optional
        Variables of :data:`MALLOPT_PARAMETERS` and their values in bytes.

    Returns
    -------
    dict of str to str
        The variables set (empty where ``mallopt`` is not glibc's).
    """
    mallopt = _glibc_mallopt()
    if mallopt is None:
        return {}
    done = {}
    for name, value in (WORKER_ENVIRON if environ is None else environ).items():
        if mallopt(MALLOPT_PARAMETERS[name], int(value)) == 1:
            os.environ[name] = str(value)
            done[name] = str(value)
    return done
