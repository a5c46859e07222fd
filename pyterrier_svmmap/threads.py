"""Threads of one process for the numeric core: how many a call may use, and the one way work is spread.

A learner's ``n_jobs`` parameter sets the thread count for the duration of its ``fit`` with :func:`using`
(a context variable: per call and per thread, nothing process-wide changes; numba's and BLAS's own thread
settings are left as the caller set them). The numeric core asks :func:`current` and cuts its work with
:func:`run` over fixed pieces whose results do not depend on how they are cut: rows of Φw, base functions of
Φᵀc, queries of a loss's argmax, each piece computed by the same serial (``nogil``) kernel in the same
order. The model is therefore the same bit for bit for every ``n_jobs``.

``n_jobs`` follows scikit-learn and LightGBM (:func:`effective_n_jobs`: None or −1 every core this process may
run on, −2 all but one). Outside any :func:`using` block the core runs on one thread.
"""
from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, ContextManager, List, Optional, Sequence, TypeVar

import numpy as np

T = TypeVar("T")

#: threads the numeric core may use in this context (1 outside any :func:`using` block)
_THREADS: ContextVar[int] = ContextVar("pyterrier_svmmap_threads", default=1)
#: the most threads any :func:`using` block may take in this context (None: no cap), set by :func:`limit`
_CAP: ContextVar[Optional[int]] = ContextVar("pyterrier_svmmap_thread_cap", default=None)

#: below this many candidates (or cells) per piece, a piece is not worth a thread
MIN_PER_PIECE = 16_384

_pool: Optional[ThreadPoolExecutor] = None
_pool_size = 0
_pool_lock = threading.Lock()


def cpu_count() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_n_jobs(n_jobs) -> None:
    """ValueError unless ``n_jobs`` is None or a non-zero integer."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None (all cores), a positive number of threads or a negative one "
                         f"(-1: all cores, -2: all but one), got {n_jobs!r}")


def effective_n_jobs(n_jobs) -> int:
    """The number of threads (at least 1) ``n_jobs`` stands for on this machine: None every core, a positive number
    that many threads, a negative one cores + 1 + n_jobs."""
    check_n_jobs(n_jobs)
    n = -1 if n_jobs is None else int(n_jobs)                   # None: every core, as -1
    return max(1, n if n > 0 else cpu_count() + 1 + n)


@contextmanager
def _set(var: ContextVar, value):
    """``var`` set to ``value`` inside the block (for this thread and context only), then reset."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def using(n_jobs) -> ContextManager[int]:
    """Let the numeric core use ``n_jobs`` threads (:func:`effective_n_jobs`) inside the block, in this thread (and
    asyncio task) only; the block is given the thread count in effect."""
    n, cap = effective_n_jobs(n_jobs), _CAP.get()
    return _set(_THREADS, n if cap is None else min(n, cap))


def limit(threads: int) -> ContextManager[int]:
    """Cap the threads of every :func:`using` block inside this one at ``threads`` (≥ 1), as threadpoolctl caps BLAS
    (for a caller that runs several fits at once); like :func:`using`, in this thread and context only."""
    threads, outer = max(1, int(threads)), _CAP.get()
    return _set(_CAP, threads if outer is None else min(outer, threads))


def current() -> int:
    """The threads the numeric core may use here (1 outside :func:`using`)."""
    return _THREADS.get()


def pieces(size: int) -> int:
    """How many pieces to cut work of ``size`` units into: :func:`current`, fewer of at least :data:`MIN_PER_PIECE`."""
    return max(1, min(current(), int(size) // MIN_PER_PIECE))


def even_bounds(n: int, k: int) -> np.ndarray:
    """``k + 1`` bounds cutting ``range(n)`` into ``k`` consecutive ranges of nearly equal length."""
    return (np.arange(k + 1, dtype=np.int64) * int(n)) // max(1, int(k))


def query_bounds(offsets: np.ndarray, k: int) -> np.ndarray:
    """``k + 1`` query indices cutting ``offsets`` into ``k`` blocks of about as many candidates (or empty)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n_q = len(offsets) - 1
    if k <= 1 or n_q <= 1:
        return np.array([0, n_q], dtype=np.int64)
    cut = np.searchsorted(offsets, even_bounds(int(offsets[-1]), k)[1:-1], side="left")
    return np.concatenate([[0], np.clip(cut, 0, n_q), [n_q]]).astype(np.int64)


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's pool threads: it makes its own (work queued on them would hang)."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _executor(workers: int) -> ThreadPoolExecutor:
    """The package's pool with at least ``workers`` threads (made, or enlarged, on first need)."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool_size < workers:                 # none yet (size 0), or too small: a new one, the old one let go
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pyterrier_svmmap"), workers
        return _pool


def run(task: Callable[[int], T], n_tasks: int) -> List[T]:
    """``[task(0), …, task(n_tasks − 1)]``: the calling thread and ``current() − 1`` pool threads each take the next
    task until none is left (a late thread takes fewer, not holding the others up). Tasks must write disjoint
    outputs. The first failed task's exception is raised once all have ended; a Ctrl-C stops the handing out."""
    k = min(current(), n_tasks)
    if k <= 1:
        return [task(i) for i in range(n_tasks)]
    results: List = [None] * n_tasks
    failed: dict = {}
    stop: list = []
    take, finish = itertools.count().__next__, itertools.count(1).__next__    # atomic under the GIL
    done = threading.Semaphore(0)            # released when the last task ends

    def drain() -> None:
        while not stop:
            i = take()
            if i >= n_tasks:
                return
            try:
                results[i] = task(i)
            except Exception as e:                # noqa: BLE001 - raised in the calling thread below
                failed[i] = e
            finally:
                if finish() == n_tasks:
                    done.release()
    pool = _executor(k - 1)
    futures = [pool.submit(drain) for _ in range(k - 1)]
    try:
        drain()
    except BaseException:                    # the calling thread interrupted: no further task is started
        stop.append(True)
        for f in futures:
            f.exception()
        raise
    done.acquire()
    if failed:
        raise failed[min(failed)]
    return results


def run_query_blocks(task: Callable[[int, int], object], offsets: np.ndarray) -> None:
    """``task(q_lo, q_hi)`` for consecutive blocks of the queries of ``offsets``, one per thread of :func:`pieces`;
    the tasks must write disjoint outputs."""
    qb = query_bounds(offsets, pieces(int(offsets[-1])))
    run(lambda i: task(int(qb[i]), int(qb[i + 1])), len(qb) - 1)


def run_ranges(task: Callable[[int, int], object], n: int, size: int) -> None:
    """``task(lo, hi)`` for consecutive ranges covering ``range(n)``: :func:`pieces` of work of ``size`` units,
    at most ``n``. The tasks must write disjoint outputs."""
    k = min(n, pieces(size))
    if k <= 1:                                   # one range: no hand-off (most calls of a small fit)
        task(0, n)
        return
    bounds = even_bounds(n, k)
    run(lambda i: task(int(bounds[i]), int(bounds[i + 1])), k)


def run_concurrently(task: Callable[[int], T], n_tasks: int, after: Optional[Sequence[Sequence[int]]] = None
                     ) -> List[T]:
    """``[task(0), …, task(n_tasks − 1)]``, up to :func:`current` at once, each inside ``using(1)``: for work too
    small to cut among threads (e.g. a small cross-validation's fits); the results do not depend on the schedule.
    ``after[i]``: earlier tasks that task i waits for (the pool starts tasks in order, so they have started).
    A task's exception is raised once all have ended; after a Ctrl-C no task starts, and it is raised once the
    started ones have ended (so that none goes on, nor logs, after the command says it was interrupted)."""
    if after is not None and any(j >= i or j < 0 for i in range(n_tasks) for j in after[i]):
        raise ValueError("a task can only wait for earlier tasks")
    k = min(current(), n_tasks)
    if k <= 1:
        return [task(i) for i in range(n_tasks)]
    futures: list = []
    started: List[threading.Event] = []     # one per task that has started, set when it ends
    stop = threading.Event()                # set by a Ctrl-C, under the lock
    lock = threading.Lock()

    def alone(i: int) -> Optional[T]:
        ended = threading.Event()
        with lock:                          # a task starts only before a Ctrl-C, and is then waited for
            if stop.is_set():
                return None
            started.append(ended)
        try:
            for j in after[i] if after is not None else ():
                futures[j].exception()              # waits; a failed task's exception is raised below, first
            with using(1):
                return task(i)
        finally:
            ended.set()
    pool = _executor(k)
    try:
        for i in range(n_tasks):
            futures.append(pool.submit(alone, i))
        for f in futures:                    # every task ends before this call returns or raises
            f.exception()
    except BaseException:                    # this thread interrupted (Ctrl-C): no task starts from now on, and
        with lock:                           # the call raises once the started ones have ended (none goes on,
            stop.set()                       # nor logs, after it)
        for f in futures:
            f.cancel()
        for ended in started:
            ended.wait()
        raise
    return [f.result() for f in futures]
