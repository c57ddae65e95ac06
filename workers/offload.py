"""Heavy work runs in process pools, never on a match host's event loop and never in its process: a thread
would hold the GIL the match clocks need (a 1,000-player Swiss round 1 paired in a thread made Ping p99
180 ms and voided matches `timer_late`). One pool per kind of work, so a long pairing never queues a rating.

A pool is made on first use with the `spawn` start method (a fork of a process running gRPC and threads is
unsafe), one process at nice `NICE`: the cores belong to the clocks first. A pool that broke (its process
died) is replaced on the next call; the caller sees `BrokenProcessPool` once. A pool's process ends with the
process that made it, even one killed -9 (which shuts no pool down: its process would live on, an orphan
holding memory and database connections). A Celery worker's (daemonic) process may start no process of its
own and runs no clock: there the work runs in a thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

__all__ = ["NICE", "BrokenProcessPool", "run", "shutdown"]

T = TypeVar("T")
NICE = 10
"""The pool's process runs at a lower CPU priority than the clocks' process: on a machine short of cores the
scheduler gives the clocks their turn first (in `bench clocks --swiss 1000` on a saturated 2-core machine a
pool at the same priority still made timers late by up to a second)."""
PR_SET_PDEATHSIG = 1
"""prctl(2): the signal this process gets when its parent thread ends (`ends_with`, without pidfds)."""
_pools: dict[str, ProcessPoolExecutor] = {}


async def run(kind: str, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in the pool of its kind (a thread in a daemonic process); BrokenProcessPool replaces it."""
    if multiprocessing.current_process().daemon:
        return await asyncio.to_thread(work, *args)
    pool = _pools.get(kind)
    if pool is None:
        spawn = multiprocessing.get_context("spawn")
        made = ProcessPoolExecutor(1, mp_context=spawn, initializer=pool_process, initargs=(os.getpid(),))
        pool = _pools[kind] = made
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, work, *args)
    except BrokenProcessPool:
        if _pools.get(kind) is pool:
            del _pools[kind]
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def pool_process(parent: int, pidfd: bool = True) -> None:
    """A pool process's start: a lower priority, and its end bound to `parent`'s."""
    os.nice(NICE)
    ends_with(parent, pidfd)


def ends_with(parent: int, pidfd: bool = True) -> None:
    """End this process as soon as `parent` has ended: a thread waits on a pidfd of it, or, on a Linux kernel
    without pidfds (`pidfd` False), the kernel sends SIGTERM when the thread that made this process ends (the
    parent's event loop thread, where `run` submits). Elsewhere (not Linux) nothing watches."""
    opener = getattr(os, "pidfd_open", None) if pidfd else None
    watched = None
    if opener is not None:
        try:
            watched = opener(parent)
        except ProcessLookupError:
            os._exit(0)
        except OSError:  # no pidfds in this kernel
            watched = None
    if watched is None and sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the watch began
        os._exit(0)
    if watched is not None:
        threading.Thread(target=_exit_once_readable, args=(watched,), name="parent-watch", daemon=True).start()


def _exit_once_readable(watched: int) -> None:
    select.select([watched], [], [])  # a pidfd turns readable when its process has ended
    os._exit(0)


def shutdown() -> None:
    """Stop the pools (the process is ending); a later call makes new ones."""
    while _pools:
        _pools.popitem()[1].shutdown(wait=False, cancel_futures=True)
