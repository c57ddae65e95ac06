"""Heavy work runs in process pools, never on a match host's event loop and never in its process: a thread
would hold the GIL the match clocks need (a 1,000-player Swiss round 1 paired in a thread made Ping p99
180 ms and voided matches `timer_late`). One pool per kind of work, so a long pairing never queues a rating.

A pool is made on first use with the `spawn` start method (a fork of a process running gRPC and threads is
unsafe), one process at nice `NICE`: the cores belong to the clocks first. A pool that broke (its process
died) is replaced on the next call; the caller sees `BrokenProcessPool` once. A Celery worker's (daemonic)
process may start no process of its own and runs no clock: there the work runs in a thread.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
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
_pools: dict[str, ProcessPoolExecutor] = {}


async def run(kind: str, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in the pool of its kind (a thread in a daemonic process); BrokenProcessPool replaces it."""
    if multiprocessing.current_process().daemon:
        return await asyncio.to_thread(work, *args)
    pool = _pools.get(kind)
    if pool is None:
        spawn = multiprocessing.get_context("spawn")
        pool = _pools[kind] = ProcessPoolExecutor(1, mp_context=spawn, initializer=os.nice, initargs=(NICE,))
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, work, *args)
    except BrokenProcessPool:
        if _pools.get(kind) is pool:
            del _pools[kind]
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def shutdown() -> None:
    """Stop the pools (the process is ending); a later call makes new ones."""
    while _pools:
        _pools.popitem()[1].shutdown(wait=False, cancel_futures=True)
