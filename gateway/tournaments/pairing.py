"""Round plans (Swiss pairing above all: seconds of pure Python for a large field) run in a process pool,
never on the event loop and never in its process: a thread would hold the GIL the match clocks need
(a 1,000-player Swiss round 1 paired in a thread made Ping p99 180 ms and voided matches `timer_late`).

One pool per process, made on first use with the `spawn` start method (a fork of a process running gRPC
and threads is unsafe), one worker process: pairing is rare and the cores belong to the clocks. A pool
that broke (its process died) is replaced on the next call; the caller sees the failure once. A Celery
worker's (daemonic) process may start no process of its own and runs no clock: there the plan runs in a
thread.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from gateway.tournaments import rounds
from gateway.tournaments.rounds import History, Plan, Settings
from workers.errors import Unavailable

__all__ = ["History", "PairingFailed", "plan", "shutdown"]

_pool: ProcessPoolExecutor | None = None
NICE = 10
"""The pairing process runs at a lower CPU priority than the clocks' process: on a machine short of cores the
scheduler gives the clocks their turn first (in `bench clocks --swiss 1000` on a saturated 2-core machine the
pool at the same priority still made timers late by up to a second)."""


class PairingFailed(Unavailable):
    """The pairing process could not plan the round (it died, or the plan raised): the message says why.
    Nothing was written; the periodic pass (or the organizer's next call) pairs the round again."""


def _executor() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        spawn = multiprocessing.get_context("spawn")
        _pool = ProcessPoolExecutor(max_workers=1, mp_context=spawn, initializer=os.nice, initargs=(NICE,))
    return _pool


async def plan(settings: Settings, history: History, number: int) -> Plan:
    """`rounds.plan` in the pool. PairingFailed if its process died or the plan raised."""
    global _pool
    if multiprocessing.current_process().daemon:  # a Celery prefork child may have no children: no clocks here
        return await asyncio.to_thread(rounds.plan, settings, history, number)
    pool = _executor()
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, rounds.plan, settings, history, number)
    except BrokenProcessPool:
        if _pool is pool:
            _pool = None
        pool.shutdown(wait=False, cancel_futures=True)
        raise PairingFailed(f"round {number}: the pairing process stopped; the next pass pairs it again") from None
    except Exception as error:
        raise PairingFailed(f"round {number} could not be paired: {type(error).__name__}: {error}") from error


def shutdown() -> None:
    """Stop the pool (the process is ending); a later call makes a new one."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
        _pool = None
