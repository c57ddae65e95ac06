"""The gateway's batched streams to a worker (gateway/links.py) against a real worker gRPC server:
many commands and watches share two streams, refusals come back as their own errors, a watch the
gateway drops is dropped on the worker too, and a stopped worker fails what waits with Unavailable."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable

import grpc
import pytest

from gateway.links import REPLY_S, CommandStream
from gateway.workers import GrpcWorker
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
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


class _AnswersOnce(host_pb2_grpc.MatchHostServicer):
    """A worker that answers the first command it reads and never another one (a stuck match)."""

    def __init__(self) -> None:
        self.read: asyncio.Queue[int] = asyncio.Queue()

    async def Commands(self, requests, context):  # type: ignore[no-untyped-def]
        answered = False
        async for batch in requests:
            for command in batch.commands:
                self.read.put_nowait(command.ref)
                if not answered:
                    answered = True
                    reply = host_pb2.HostCommandReply(ref=command.ref, reply=matches_pb2.ActResponse(seq=1))
                    yield host_pb2.HostCommandReplyBatch(replies=[reply])


def test_a_command_its_worker_never_answers_fails_unavailable_after_the_reply_bound() -> None:
    """The bound on a command's wait is swept, not timed per command: at loop time `sent + reply_s` (given
    here, not waited for) a command still unanswered fails `Unavailable`; one answered, and one whose caller
    cancelled it, are forgotten."""

    async def body() -> None:
        worker = _AnswersOnce()
        server = grpc.aio.server()
        host_pb2_grpc.add_MatchHostServicer_to_server(worker, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        stream = CommandStream(host_pb2_grpc.MatchHostStub(channel), reply_s=REPLY_S)
        try:
            loop = asyncio.get_running_loop()
            assert (await stream.send(ready("0000000000000001", 0))).seq == 1
            stuck = asyncio.create_task(stream.send(ready("0000000000000001", 1)))
            assert await worker.read.get() == 1
            assert await worker.read.get() == 2  # the worker holds it
            stream.overdue(loop.time())
            assert [ref for _, ref in stream.sent] == [2] and not stuck.done()  # the answered one forgotten
            gave_up = asyncio.create_task(stream.send(ready("0000000000000001", 0)))
            assert await worker.read.get() == 3
            gave_up.cancel()  # its caller cancels mid-command: the worker has it, the stream keeps its ref
            with pytest.raises(asyncio.CancelledError):
                await gave_up
            stream.overdue(loop.time() + REPLY_S + 1)
            with pytest.raises(Unavailable, match="did not answer within"):
                await stuck
            assert not stream.sent and not stream.waiting  # the cancelled one forgotten as well
        finally:
            stream.close()
            await channel.close()
            await server.stop(None)

    asyncio.run(body())
