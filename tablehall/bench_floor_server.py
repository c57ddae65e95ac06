"""The server side shared by `tablehall bench floor` and its relayed form: the floor's log, a stream method of
bare bytes served on a free port, and the process's CPU told to the bench."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import grpc

from tablehall.bench_served import cpu_seconds
from workers.games.catalog import SPECTACULAR_BID
from workers.storage import LogEntry, MatchEntry, Progress, Storage


def identity(raw: bytes) -> bytes:
    return raw


class FloorLog:
    """The durable floor's log: each match created once, each command appended (and committed) in turn."""

    def __init__(self, storage: Storage, epoch: int, partition: int = 0) -> None:
        self.storage, self.epoch, self.partition = storage, epoch, partition
        self.run = secrets.token_hex(4)
        self.seqs: dict[bytes, int] = {}

    def _id(self, match: bytes) -> str:
        return f"floor-{self.run}-{match.decode()}"

    async def create(self, match: bytes) -> None:
        entry = MatchEntry(self._id(match), SPECTACULAR_BID, ("north", "south"), {}, (bytes(32), bytes(32)),
                           time.time_ns() // 1_000_000, 0, self.partition)  # fmt: skip
        await self.storage.create(entry, self.epoch)

    async def append(self, match: bytes, seat: int) -> None:
        seq = self.seqs[match] = self.seqs.get(match, 0) + 1
        step = LogEntry(seq, seq, "command", seat, {"play": "3-5", "end": "left"}, seq)
        progress = Progress(deadline_unix_ms=time.time_ns() // 1_000_000 + 60_000, clock_running=True)
        await self.storage.append_all(self._id(match), self.partition, self.epoch, (step,), progress)


async def open_log(database_url: str, partition: int = 0) -> FloorLog:
    """The floor's log in the service's own durable storage, `partition` claimed for it."""
    from workers.sql.storage import SqlStorage

    storage = await SqlStorage.open(database_url)
    epoch = (await storage.claim(f"bench-floor-{secrets.token_hex(4)}", [partition]))[partition]
    return FloorLog(storage, epoch, partition)


async def serve_timed(pipe: Connection, service: str, method: str, handler: Callable[..., Any]) -> None:
    """Serve one stream method of bare bytes on a free port (told to the bench over `pipe`), and tell the
    bench this process's CPU between its "start" and its "done"."""
    handlers = grpc.method_handlers_generic_handler(
        service, {method: grpc.stream_stream_rpc_method_handler(handler, identity, identity)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    pipe.send(port)
    await asyncio.to_thread(pipe.recv)  # the load starts
    started = own_cpu()
    await asyncio.to_thread(pipe.recv)  # the load is done
    pipe.send(own_cpu() - started)
    await server.stop(None)


def own_cpu() -> float:
    """CPU seconds of this process and its children (the log's writer process, when there is one). Called in
    the server, `cpu_seconds` names this process both ways: its own clock ("load generator", exact) is kept,
    its /proc figure ("gateway", in 10 ms ticks: 0 for a short run) is not."""
    return sum(cpu for role, cpu in cpu_seconds(os.getpid()).items() if role != "gateway")
