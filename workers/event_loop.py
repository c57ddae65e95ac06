"""The event loop every tablehall server process runs on: uvloop (libuv), the same asyncio API with the loop's
own work — callbacks, timers, sockets, the hand-offs from grpc's poller thread — in C. On this repository's
2-core machine it took about a sixth off grpc.aio's own CPU per command (`tablehall bench floor`, server
CPU per command, the standard loop against uvloop back to back). `TABLEHALL_EVENT_LOOP=asyncio` runs the
standard library's loop instead (to compare, or to rule the loop out when something misbehaves)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import uvloop

from workers import loop_first

log = logging.getLogger(__name__)
T = TypeVar("T")

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "uvloop": uvloop.new_event_loop,
    "asyncio": asyncio.new_event_loop,
}
DEFAULT = "uvloop"


def loop_name() -> str:
    """The loop this process runs on: TABLEHALL_EVENT_LOOP when it names one of LOOPS, else uvloop."""
    name = os.environ.get("TABLEHALL_EVENT_LOOP", "").strip().lower()
    if name and name not in LOOPS:
        log.warning("TABLEHALL_EVENT_LOOP=%.40r is not one of %s: running on %s", name, ", ".join(LOOPS), DEFAULT)
    return name if name in LOOPS else DEFAULT


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on this process's loop."""
    with asyncio.Runner(loop_factory=LOOPS[loop_name()]) as runner:
        return runner.run(main)


def serve(main: Coroutine[Any, Any, T]) -> T:
    """`run(main)` for a serving process (serve, gateway, worker): its loop's thread first, every other
    thread of the process and each read thread at a lower priority (`loop_first`)."""
    nice = loop_first.beside_nice()  # the setting read (and a bad one said) once for the process
    with asyncio.Runner(loop_factory=LOOPS[loop_name()]) as runner:
        runner.get_loop().set_default_executor(loop_first.read_threads(nice))
        return runner.run(_loop_first(main, nice))


async def _loop_first(main: Coroutine[Any, Any, T], nice: int) -> T:
    keeper = asyncio.create_task(loop_first.keep_aside(nice), name="tablehall-loop-first")
    try:
        return await main
    finally:
        keeper.cancel()
