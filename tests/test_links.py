"""The gateway's batched streams to a worker (gateway/links.py) against a real worker gRPC server:
many commands and watches share two streams, refusals come back as their own errors, a watch the
gateway drops is dropped on the worker too, and a stopped worker fails what waits with Unavailable."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable

import pytest

from gateway.workers import GrpcWorker
from protos.tablehall.v1 import host_pb2, matches_pb2
from workers.errors import NotFound, Unavailable
from workers.games.errors import IllegalAction
from workers.host import MatchHost
from workers.outbox import Outbox
from workers.service import start_worker_server

TOKENS = [b"seat-zero", b"seat-one"]


def create(match_id: str) -> host_pb2.HostCreateRequest:
    return host_pb2.HostCreateRequest(
        match_id=match_id, game="spectacular-bid", players=["Ana", "Bia"], options_json="{}",
        token_sha256=[hashlib.sha256(t).digest() for t in TOKENS], created_unix_ms=int(time.time() * 1000),
    )


def owned_ids(count: int) -> list[str]:
    return [f"{n:016x}" for n in range(count)]  # one worker of one owns every partition


async def with_worker(body: Callable[[MatchHost, GrpcWorker], Awaitable[None]]) -> None:
    host = MatchHost()
    await host.start()
    server, port = await start_worker_server(host, "127.0.0.1:0")
    worker = GrpcWorker(f"127.0.0.1:{port}")
    try:
        await body(host, worker)
    finally:
        await worker.close()
        await server.stop(None)
        host.close()


def ready(match_id: str, seat: int) -> host_pb2.HostCommandRequest:
    return host_pb2.HostCommandRequest(
        match_id=match_id, token_sha256=hashlib.sha256(TOKENS[seat]).digest(),
        action=matches_pb2.Action(ready=matches_pb2.Ready()), arrival_unix_ms=int(time.time() * 1000),
    )


def test_many_commands_and_watches_share_the_two_streams() -> None:
    async def body(host: MatchHost, worker: GrpcWorker) -> None:
        ids = owned_ids(40)
        for match_id in ids:
            await worker.create(create(match_id))

        async def first_updates(match_id: str, seat: int, n: int) -> list[matches_pb2.Update]:
            watch = host_pb2.HostWatchRequest(match_id=match_id, token_sha256=hashlib.sha256(TOKENS[seat]).digest())
            out: list[matches_pb2.Update] = []
            stream = worker.watch(watch)
            async for posted in stream:
                out.append(posted.update())
                if len(out) == n:
                    break
            await stream.aclose()  # type: ignore[attr-defined]
            return out

        watches = [asyncio.create_task(first_updates(m, s, 2)) for m in ids for s in (0, 1)]
        replies = await asyncio.gather(*(worker.command(ready(m, s)) for m in ids for s in (0, 1)))
        seen = await asyncio.gather(*watches)
        assert worker.commands is not None and worker.feed is not None  # one stream each, for all of them
        assert all(reply.seq >= 1 for reply in replies)
        for updates in seen:
            assert [u.seq for u in updates] == [1, 2]
            assert json.loads(updates[0].view_json)["seat"] == updates[0].seat
        # every dropped watch was let go on the worker as well
        for _ in range(200):
            if not any(host.actors[m].watchers for m in ids):
                break
            await asyncio.sleep(0.01)
        assert not any(host.actors[m].watchers for m in ids)

    asyncio.run(with_worker(body))


def test_refusals_come_back_as_their_own_errors() -> None:
    async def body(host: MatchHost, worker: GrpcWorker) -> None:
        (match_id,) = owned_ids(1)
        await worker.create(create(match_id))
        await worker.command(ready(match_id, 0))
        with pytest.raises(IllegalAction):
            await worker.command(ready(match_id, 0))  # ready twice
        unknown = host_pb2.HostWatchRequest(match_id="ffffffffffffffff")
        with pytest.raises(NotFound):
            async for _ in worker.watch(unknown):
                pass
        # the streams are still fine for everyone else
        assert (await worker.command(ready(match_id, 1))).seq >= 2

    asyncio.run(with_worker(body))


def test_a_stopped_worker_fails_waiting_watches_with_unavailable() -> None:
    async def body(host: MatchHost, worker: GrpcWorker) -> None:
        (match_id,) = owned_ids(1)
        await worker.create(create(match_id))
        watch = host_pb2.HostWatchRequest(match_id=match_id)
        seen: list[int] = []

        async def follow() -> None:
            async for update in worker.watch(watch):
                seen.append(update.seq)

        following = asyncio.create_task(follow())
        while not seen or not host.actors[match_id].watchers:
            await asyncio.sleep(0.01)
        host.close()  # the worker stops serving: its watches end as retryable
        with pytest.raises(Unavailable):
            await following
        assert seen == list(range(1, len(seen) + 1))

    asyncio.run(with_worker(body))


def test_the_outbox_hands_over_everything_queued_at_once() -> None:
    async def body() -> None:
        outbox: Outbox[int] = Outbox()
        taker = asyncio.create_task(outbox.take())
        await asyncio.sleep(0)
        for n in range(5):
            outbox.put(n)
        assert await taker == [0, 1, 2, 3, 4]
        outbox.put(5)
        outbox.close()
        outbox.put(6)  # after closing: nobody will read it
        assert await outbox.take() == [5]
        assert await outbox.take() == []

    asyncio.run(body())
