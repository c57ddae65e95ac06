"""`tablehall bench floor`: what grpc.aio alone allows for a two-seat match's commands, with no game at all.

The floor under `tablehall bench service`: the same shape of traffic as a Spectacular Bid match played over
two `Play` sessions, and as boardgame.io's harness (a move in, the new state out to both players), but the
server does nothing except route pre-encoded bytes. Each match has two bidirectional streams, one per seat;
the seat on move sends a command, the server answers it on that stream and sends an update to the other
seat's stream, which then moves. A match is `--commands` commands; `--matches` are kept in flight. The
server runs in its own process and reports its CPU time; the load generator (all matches' clients, one
process, as the peer's harness) reports its own.

Whatever tablehall does per command is added to these figures: if the floor's commands/s is below the peer's
moves/s on the same hour, no work we cut on our side can reach the peer's throughput in Python's gRPC.

`--database-url URL`: the durable floor. The server is set up as a worker (`workers.clocks_first`), creates
each match in the log and answers a command only once it is appended through the service's own durable
storage (`SqlStorage`: its writer, group commit, fencing), still with no game: what gRPC and the durable
log allow together in one Python process (its CPU includes a log writer process's, if one runs).

`--workers N`: the floor under `bench service --workers N` — a relay and N worker processes, each command
sent on to its match's worker and answered once the worker answered (tablehall/bench_floor_relay.py).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from multiprocessing.connection import Connection
from typing import Any

import grpc
from rich.console import Console
from rich.table import Table

from tablehall.bench_floor_relay import Links, wait_for_ports, worker_processes
from tablehall.bench_floor_server import FloorLog, identity, open_log, serve_timed
from tablehall.bench_messages import server_process
from workers import event_loop
from workers.clocks_first import clocks_first

_SERVICE = "tablehall.bench.Floor"
_METHOD = f"/{_SERVICE}/Seat"
_ANSWER = b"a" * 120
"""An answer about the size of an `ActResponse`."""
_UPDATE = b"u" * 250
"""An update about the size of a typed Spectacular Bid `Update` (~250 bytes)."""


Forward = Callable[[bytes, int], Awaitable[None]]
"""Sends one seat's command of a match on to where it is kept, and returns once it is answered there."""


class _Hall:
    """The server's one piece of state: each seat's outgoing queue, by (match, seat)."""

    def __init__(self, log: FloorLog | None = None, forward: Forward | None = None) -> None:
        self.queues: dict[bytes, asyncio.Queue[bytes | None]] = {}
        self.log = log
        self.forward = forward
        """The topology's floor: each command goes to a worker process, answered once the worker answers."""

    def queue(self, key: bytes) -> asyncio.Queue[bytes | None]:
        return self.queues.setdefault(key, asyncio.Queue())

    async def seat(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        """The first message names the seat ("<match>:<0|1>"); each later one is a command: answer it here
        and tell the other seat."""
        first = await anext(aiter(requests))
        match, _, seat = first.partition(b":")
        own = self.queue(first)
        other = self.queue(match + b":" + (b"1" if seat == b"0" else b"0"))
        log, forward = self.log, self.forward
        if log is not None and seat == b"0":  # seat 0 moves first: its match is in the log before
            await log.create(match)

        async def read() -> None:
            async for _ in requests:
                if forward is not None:
                    await forward(match, int(seat))
                elif log is not None:
                    await log.append(match, int(seat))
                own.put_nowait(_ANSWER)
                other.put_nowait(_UPDATE)
            own.put_nowait(None)

        reader = asyncio.ensure_future(read())
        try:
            while (message := await own.get()) is not None:
                yield message
        finally:
            reader.cancel()
            self.queues.pop(first, None)


async def _serve(pipe: Connection, database_url: str | None, workers: list[int] | None = None) -> None:
    """The floor's server; with `workers` (their ports), a relay to those worker processes, which keep the log."""
    log, links = None, None
    if workers:
        links = Links(workers)
    elif database_url is not None:
        clocks_first()
        log = await open_log(database_url)
    hall = _Hall(log, None if links is None else links.send)
    await serve_timed(pipe, _SERVICE, "Seat", hall.seat)
    if links is not None:
        await links.close()
    if log is not None:
        from workers.sql.storage import SqlStorage

        assert isinstance(log.storage, SqlStorage)
        pipe.send(f"{log.storage.stats.ops / max(log.storage.stats.batches, 1):.1f}")
        await log.storage.close()


def _server(pipe: Connection, database_url: str | None = None, workers: list[int] | None = None) -> None:
    event_loop.run(_serve(pipe, database_url, workers))


async def _match(channel: grpc.aio.Channel, index: int, commands: int, latencies: list[float]) -> None:
    """Two seats alternate `commands` commands; a command's latency runs from its write to its answer."""
    seat = channel.stream_stream(_METHOD, identity, identity)
    calls = [seat(), seat()]
    for number, call in enumerate(calls):
        await call.write(f"{index}:{number}".encode())
    clock = time.perf_counter
    for played in range(commands):
        mover, waiter = calls[played % 2], calls[(played + 1) % 2]
        sent = clock()
        await mover.write(b"c")
        await mover.read()  # the answer
        latencies.append(clock() - sent)
        await waiter.read()  # the other seat's update: its turn
    for call in calls:
        await call.done_writing()
        await call.read()  # the end of the stream


async def _load(port: int, matches: int, commands: int, seconds: float) -> tuple[list[float], float, float]:
    latencies: list[float] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        deadline = time.perf_counter() + seconds
        counter = iter(range(1 << 30))

        async def slot() -> None:
            """Matches one after another until the time is up (at least one each)."""
            await _match(channel, next(counter), commands, latencies)
            while time.perf_counter() < deadline:
                await _match(channel, next(counter), commands, latencies)

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(slot() for _ in range(matches)))
        return latencies, time.perf_counter() - started, time.process_time() - cpu


def bench_floor(matches: int, commands: int, seconds: float, database_url: str | None = None, workers: int = 0) -> int:
    if workers:
        return _relayed(matches, commands, seconds, database_url, workers)
    with server_process(functools.partial(_server, database_url=database_url)) as pipe:
        port = pipe.recv()
        pipe.send("start")
        latencies, wall, client_cpu = event_loop.run(_load(port, matches, commands, seconds))
        pipe.send("done")
        server_cpu = pipe.recv()
        batch = None if database_url is None else pipe.recv()
    _print(matches, latencies, wall, client_cpu, server_cpu)
    if batch is not None:
        Console().print(f"durable: every command committed to {str(database_url).partition(':')[0]} before its answer, "
                        f"{batch} commands a commit on average")  # fmt: skip
    return 0


def _relayed(matches: int, commands: int, seconds: float, database_url: str | None, workers: int) -> int:
    """The floor through a relay and `workers` worker processes (tablehall/bench_floor_relay.py)."""
    with worker_processes(workers, database_url) as pipes:
        ports = wait_for_ports(pipes)
        with server_process(functools.partial(_server, workers=ports)) as relay:
            port = relay.recv()
            for pipe in (relay, *pipes):
                pipe.send("start")
            latencies, wall, client_cpu = event_loop.run(_load(port, matches, commands, seconds))
            for pipe in (relay, *pipes):
                pipe.send("done")
            relay_cpu, worker_cpu = relay.recv(), sum(pipe.recv() for pipe in pipes)
    _print(matches, latencies, wall, client_cpu, relay_cpu + worker_cpu, f"a relay and {workers} worker processes")
    done = max(len(latencies), 1)
    kept = "each command appended to the log by its worker before its answer" if database_url else "no log"
    relay_ms, workers_ms = relay_cpu / done * 1000, worker_cpu / done * 1000
    Console().print(f"server CPU a command: relay {relay_ms:.3f} ms, workers {workers_ms:.3f} ms ({kept}; "
                    "PostgreSQL's own not counted)")  # fmt: skip
    return 0


def _print(
    matches: int, latencies: list[float], wall: float, client_cpu: float, server_cpu: float, server: str = ""
) -> None:
    done = len(latencies)
    ordered = sorted(latencies)

    def ms(q: float) -> str:
        return f"{ordered[min(done - 1, int(q * done))] * 1000:.1f}" if done else "-"

    through = f" through {server}" if server else ""
    table = Table(title=f"tablehall bench floor: grpc.aio alone{through}, {matches} two-seat matches in flight")
    for column in ("commands", "commands/s", "p50 ms", "p99 ms", "server CPU ms/command", "load CPU ms/command"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{done:,}", f"{done / wall:,.0f}", ms(0.5), ms(0.99),
        f"{server_cpu / max(done, 1) * 1000:.3f}", f"{client_cpu / max(done, 1) * 1000:.3f}",
    )
    Console().print(table)
