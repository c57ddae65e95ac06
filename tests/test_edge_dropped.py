"""Watchers that vanish: a client process killed, a channel closed, while the server is writing to their
Watch streams. The service's log keeps no traceback and no error for it (at most one debug line each)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import pytest

from protos.tablehall.v1 import matches_pb2, matches_pb2_grpc
from tablehall.client import Client
from tests.durability import Cluster, cluster, database, run
from tests.edge_support import troubles
from tests.over_grpc import Service, drive, serve
from tests.test_service_watch import released

REPO = Path(__file__).resolve().parents[1]
STREAMS = 3
SMALL_WINDOW = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)]
"""A receive window of about one update: once a watcher stops reading, the server's writes to it wait."""

WATCHER = f"""
import asyncio, sys
import grpc
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2, matches_pb2_grpc

async def main() -> None:
    address, match_id, door = sys.argv[1:]
    async with grpc.aio.insecure_channel(address, options={SMALL_WINDOW!r}) as channel:
        if door == "gateway":
            watch = matches_pb2_grpc.MatchesStub(channel).Watch
            request = matches_pb2.WatchRequest(match_id=match_id)
        else:  # a worker's own Watch, as a gateway's would reach it
            watch = host_pb2_grpc.MatchHostStub(channel).Watch
            request = host_pb2.HostWatchRequest(match_id=match_id)
        calls = [watch(request) for _ in range({STREAMS})]
        for call in calls:
            await call.read()
        print("watching", flush=True)
        await asyncio.Event().wait()  # reads nothing more until it is killed

asyncio.run(main())
"""


async def a_match(service: Service) -> tuple[str, tuple[str, ...]]:
    created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"])
    return created.match_id, created.tokens


async def backed_up(service: Service, match_id: str, tokens: tuple[str, ...]) -> None:
    """Changes the watchers do not read: after the first one or two, the server's writes wait on them."""
    seats = [service.client.seat(match_id, token) for token in tokens]
    start = service.actor(match_id).seq
    await drive(seats, random.Random(15), until=lambda seq: seq >= start + 12, modest=True)


async def watcher(address: str, match_id: str, door: str) -> asyncio.subprocess.Process:
    """A client process holding `STREAMS` Watch streams on `door` ("gateway" or "worker"), reading none."""
    environment = dict(os.environ, PYTHONPATH=str(REPO))
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WATCHER, address, match_id, door, stdout=asyncio.subprocess.PIPE, env=environment
    )
    assert child.stdout is not None
    assert await asyncio.wait_for(child.stdout.readline(), 30) == b"watching\n"
    return child


async def killed(child: asyncio.subprocess.Process) -> None:
    child.kill()
    await child.wait()


def test_a_killed_watcher_process_leaves_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def body(service: Service) -> None:
        match_id, tokens = await a_match(service)
        child = await watcher(service.address, match_id, "gateway")
        try:
            actor = service.actor(match_id)
            assert len(actor.watchers) == STREAMS
            await backed_up(service, match_id, tokens)
        finally:
            await killed(child)
        await asyncio.wait_for(released(actor), 10)

    serve(body)
    assert troubles(caplog.records) == []
    assert len([r for r in caplog.records if "went away" in r.getMessage()]) <= STREAMS


def test_a_closed_channel_leaves_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def body(service: Service) -> None:
        match_id, tokens = await a_match(service)
        channel = grpc.aio.insecure_channel(service.address, options=SMALL_WINDOW)
        stub = matches_pb2_grpc.MatchesStub(channel)
        calls = [stub.Watch(matches_pb2.WatchRequest(match_id=match_id)) for _ in range(STREAMS)]
        for call in calls:
            await call.read()
        actor = service.actor(match_id)
        await backed_up(service, match_id, tokens)
        await channel.close()
        await asyncio.wait_for(released(actor), 10)

    serve(body)
    assert troubles(caplog.records) == []


def test_killed_watchers_leave_no_traceback_in_the_gateway_and_worker_processes(tmp_path: Path) -> None:
    """`tablehall gateway` and `tablehall worker` as their own processes: one watcher process on the
    gateway's Watch, one on the worker's own (what a gateway's watch reaches), both killed mid-write."""

    async def body(processes: Cluster) -> None:
        async with Client(processes.address) as client:
            created = await client.create_match("spectacular-bid", ["Ana", "Bia"])
            children = [
                await watcher(processes.address, created.match_id, "gateway"),
                await watcher(processes.worker_address(0), created.match_id, "worker"),
            ]
            try:
                seats = [client.seat(created.match_id, token) for token in created.tokens]
                await drive(seats, random.Random(15), until=lambda seq: seq >= 12, modest=True)
            finally:
                for child in children:
                    await killed(child)
            await client.spectator(created.match_id).view()  # both processes answer on after the drops

    with database("sqlite", tmp_path) as url, cluster(url, 1, tmp_path, tolerance_s=30) as processes:
        run(lambda: started(processes, body), timeout=120)
        logs = {proc.name: proc.log() for proc in processes.procs}
    troubled = {name: log[-2000:] for name, log in logs.items() if "Traceback" in log or "ExecuteBatchError" in log}
    assert troubled == {}


async def started(processes: Cluster, body: Callable[[Cluster], Awaitable[None]]) -> None:
    await processes.start()
    await body(processes)
