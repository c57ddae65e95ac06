"""Heavy tournament work runs in process pools, never on the event loop and never in its process: a thread
would hold the GIL the match clocks need (a 1,000-player Swiss round 1 paired in a thread made Ping p99
180 ms and voided matches `timer_late`). Two kinds, a pool each, so a long pairing never queues a replay:

- `plan`: a round's plan (Swiss pairing above all: seconds of pure Python for a large field);
- `records`: the records of ended tables for `ExportRecords`, each match's log replayed by the engine.

A pool is made on first use with the `spawn` start method (a fork of a process running gRPC and threads is
unsafe), one process at nice `NICE`: the cores belong to the clocks first. A pool that broke (its process
died) is replaced on the next call; the caller sees the failure once. A Celery worker's (daemonic)
process may start no process of its own and runs no clock: there the work runs in a thread.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from sqlalchemy import Engine

from gateway.tournaments import rounds, store
from gateway.tournaments.rounds import History, Plan, Settings
from workers.errors import Unavailable

__all__ = ["History", "PairingFailed", "plan", "records", "shutdown"]

T = TypeVar("T")
NICE = 10
"""The pool's process runs at a lower CPU priority than the clocks' process: on a machine short of cores the
scheduler gives the clocks their turn first (in `bench clocks --swiss 1000` on a saturated 2-core machine a
pool at the same priority still made timers late by up to a second)."""
_pools: dict[str, ProcessPoolExecutor] = {}


class PairingFailed(Unavailable):
    """The pairing process could not plan the round (it died, or the plan raised): the message says why.
    Nothing was written; the periodic pass (or the organizer's next call) pairs the round again."""


async def _in_pool(kind: str, work: Callable[..., T], *args: Any) -> T:
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


async def plan(settings: Settings, history: History, number: int) -> Plan:
    """`rounds.plan` in the pairing pool. PairingFailed if its process died or the plan raised."""
    try:
        return await _in_pool("pairing", rounds.plan, settings, history, number)
    except BrokenProcessPool:
        raise PairingFailed(f"round {number}: the pairing process stopped; the next pass pairs it again") from None
    except Exception as error:
        raise PairingFailed(f"round {number} could not be paired: {type(error).__name__}: {error}") from error


async def records(engine: Engine, match_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Status and record JSON of each ended match among `match_ids`, replayed in the replays pool (which
    opens the same database by its URL). Unavailable if its process died."""
    url = engine.url.render_as_string(hide_password=False)
    try:
        return await _in_pool("replays", _records, url, list(match_ids))
    except BrokenProcessPool:
        raise Unavailable("the process replaying the records stopped: ask again") from None


def _records(url: str, match_ids: list[str]) -> dict[str, tuple[str, str]]:
    from workers.sql.migrate import engine_for

    found = store.ended_records(engine_for(url), match_ids)
    return {m: (r.status, json.dumps(r.record())) for m, r in found.items()}


def shutdown() -> None:
    """Stop the pools (the process is ending); a later call makes new ones."""
    while _pools:
        _pools.popitem()[1].shutdown(wait=False, cancel_futures=True)
