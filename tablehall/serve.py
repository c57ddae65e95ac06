"""`tablehall serve`: the whole service in one process (gateway + an in-process worker, in memory)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from gateway.server import start_gateway
from gateway.workers import Router
from workers.host import MatchHost


async def serve(host: str, port: int, ready: asyncio.Event | None = None) -> None:
    logging.basicConfig(level=os.environ.get("TABLEHALL_LOG_LEVEL", "INFO"), format="%(asctime)s %(name)s %(message)s")
    matches = MatchHost()
    await matches.start()
    gateway = await start_gateway(Router([matches]), host, port)
    print(f"tablehall serving on {host}:{gateway.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    await stop.wait()
    print("tablehall: shutting down", flush=True)
    await gateway.stop(grace=5.0)
    matches.close()


def settings(host: str | None, port: int | None) -> tuple[str, int]:
    return (
        host or os.environ.get("TABLEHALL_HOST", "127.0.0.1"),
        port if port is not None else int(os.environ.get("TABLEHALL_PORT", "50051")),
    )
