"""`tablehall bench floor --workers N`: the floor under `bench service --workers N`, with no game at all.

The same two-seat traffic as `bench floor`, through the same shape of service as a gateway with worker
processes: the server is a relay that sends each command on to the worker process its match belongs to
(by a hash of its id), over one long-lived stream per worker that carries many commands a message, as the
gateway's command streams do (`workers.outbox`), and answers the seat once the worker answered. With
`--database-url`, each worker appends every command to the log through the service's own durable storage
before it answers (`SqlStorage`: its writer, group commit, fencing; a partition of its own). What the
processes, their gRPC hops and the log cost together on this machine, before any of tablehall's own work:
if this floor is below the peer's moves/s in the same hour, no cut of ours reaches the peer's rate with
this many processes on these cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from multiprocessing.connection import Connection
from typing import Any

import grpc

from tablehall.bench_floor_server import FloorLog, identity, open_log, serve_timed
from tablehall.bench_messages import server_process
from workers import event_loop
from workers.clocks_first import clocks_first
from workers.outbox import Outbox

_SERVICE = "tablehall.bench.FloorWorker"
_COMMANDS = f"/{_SERVICE}/Commands"
_ITEM = struct.Struct(">IBB")
"""A command on the relay's stream: its ref, the seat, the length of the match's key (which follows)."""
_REF = struct.Struct(">I")


def _items(batch: bytes) -> Iterator[tuple[int, int, bytes]]:
    at = 0
    while at < len(batch):
        ref, seat, size = _ITEM.unpack_from(batch, at)
        at += _ITEM.size
        yield ref, seat, batch[at : at + size]
        at += size


class _Link:
    """One stream to a worker: commands out in batches, answers (their refs) back in batches."""

    def __init__(self, port: int) -> None:
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.call: Any = self.channel.stream_stream(_COMMANDS, identity, identity)()
        self.outbox: Outbox[bytes] = Outbox()
        self.waiting: dict[int, asyncio.Future[None]] = {}
        self.refs = 0
        self.tasks = [asyncio.ensure_future(self._write()), asyncio.ensure_future(self._read())]

    async def send(self, match: bytes, seat: int) -> None:
        self.refs += 1
        answered = self.waiting[self.refs] = asyncio.get_running_loop().create_future()
        self.outbox.put(_ITEM.pack(self.refs, seat, len(match)) + match)
        await answered

    async def _write(self) -> None:
        while items := await self.outbox.take():
            await self.call.write(b"".join(items))
        await self.call.done_writing()

    async def _read(self) -> None:
        async for batch in self.call:
            for (ref,) in _REF.iter_unpack(batch):
                self.waiting.pop(ref).set_result(None)

    async def close(self) -> None:
        self.outbox.close()
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.gather(*self.tasks), 5)
        await self.channel.close()


class Links:
    """The relay's streams, one per worker; a match always goes to the same worker."""

    def __init__(self, ports: list[int]) -> None:
        self.links = [_Link(port) for port in ports]

    async def send(self, match: bytes, seat: int) -> None:
        await self.links[zlib.crc32(match) % len(self.links)].send(match, seat)

    async def close(self) -> None:
        for link in self.links:
            await link.close()


class _Worker:
    """A worker's one service: each command of a batch runs as its own task (appended to the log when there
    is one, its match created with its first command); the answers go back batched."""

    def __init__(self, log: FloorLog | None) -> None:
        self.log = log
        self.created: set[bytes] = set()

    async def _one(self, ref: int, seat: int, match: bytes, answers: Outbox[bytes]) -> None:
        if self.log is not None:
            if match not in self.created:
                self.created.add(match)
                await self.log.create(match)
            await self.log.append(match, seat)
        answers.put(_REF.pack(ref))

    async def commands(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        answers: Outbox[bytes] = Outbox()
        running: set[asyncio.Task[None]] = set()

        async def read() -> None:
            async for batch in requests:
                for ref, seat, match in _items(batch):
                    task = asyncio.create_task(self._one(ref, seat, match, answers))
                    running.add(task)
                    task.add_done_callback(running.discard)
            await asyncio.gather(*running)
            answers.close()

        reader = asyncio.ensure_future(read())
        try:
            while refs := await answers.take():
                yield b"".join(refs)
        finally:
            reader.cancel()


async def _worker_serve(pipe: Connection, partition: int, database_url: str | None) -> None:
    log = None if database_url is None else await open_log(database_url, partition)
    await serve_timed(pipe, _SERVICE, "Commands", _Worker(log).commands)
    if log is not None:
        await log.storage.close()


def _worker(pipe: Connection, partition: int, database_url: str | None) -> None:
    clocks_first()  # set up as `tablehall worker` is
    event_loop.run(_worker_serve(pipe, partition, database_url))


@contextlib.contextmanager
def worker_processes(count: int, database_url: str | None) -> Iterator[list[Connection]]:
    """`count` floor workers, each in a process of its own, keeping partition 0, 1, ... of the log."""
    with contextlib.ExitStack() as stack:
        pipes = []
        for partition in range(count):
            target = _bound(partition, database_url)
            pipes.append(stack.enter_context(server_process(target)))
        yield pipes


def _bound(partition: int, database_url: str | None) -> Any:
    def target(pipe: Connection) -> None:
        _worker(pipe, partition, database_url)

    return target


def wait_for_ports(pipes: list[Connection], timeout_s: float = 60.0) -> list[int]:
    """Each worker's port, once it serves."""
    deadline = time.monotonic() + timeout_s
    ports = []
    for pipe in pipes:
        if not pipe.poll(max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"a floor worker did not start within {timeout_s:g} s (pid {os.getpid()})")
        ports.append(pipe.recv())
    return ports
