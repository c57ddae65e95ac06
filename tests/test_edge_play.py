"""Every command on a `Play` stream gets exactly one answer: a failure nobody foresaw (a bug in the worker)
is INTERNAL with the generic message, logged once; a storage that fails on append is UNAVAILABLE (the
change was not stored: send it again), logged once; the stream goes on either way; a command sent as the
match ends is answered before the stream ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import grpc
import pytest

from gateway.server import start_gateway
from gateway.workers import GrpcWorker, Router, WorkerClient
from protos.tablehall.v1 import matches_pb2, matches_pb2_grpc
from tablehall.client import Client, action_message
from workers.edge import INTERNAL
from workers.host import MatchHost
from workers.service import start_worker_server
from workers.storage import LogEntry, MemoryStorage, Progress

BOUND = 10.0
"""Seconds a test waits for an answer at most: an unanswered command fails the test, it never hangs it."""


class BrokenDisk(MemoryStorage):
    """The injected fault: once `broken`, every append raises as a full disk would."""

    broken = False

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        if self.broken:
            raise OSError(28, "No space left on device")
        await super().append_all(match_id, partition, epoch, entries, progress)


class Buggy(MatchHost):
    """The injected fault: once `buggy`, a command meets an exception nobody foresaw (a bug)."""

    buggy = False

    async def command(self, request: Any) -> matches_pb2.ActResponse:
        if self.buggy:
            raise RuntimeError("a bug nobody foresaw")
        return await super().command(request)


def served(
    body: Callable[[Buggy, Client, matches_pb2_grpc.MatchesStub], Awaitable[None]], remote: bool = False
) -> None:
    """A real gateway on a free port, its worker in process or (`remote`) behind its own gRPC server as
    `tablehall serve --workers N` runs it: then command replies and updates reach the gateway on two
    different streams, in no fixed order."""

    async def main() -> None:
        host = Buggy(BrokenDisk())
        await host.start()
        worker_server, port = await start_worker_server(host, "127.0.0.1:0") if remote else (None, 0)
        worker: WorkerClient = GrpcWorker(f"127.0.0.1:{port}") if remote else host
        gateway = await start_gateway(Router([worker]), "127.0.0.1", 0)
        try:
            async with Client(f"127.0.0.1:{gateway.port}") as client:
                await asyncio.wait_for(body(host, client, client.stub), 60)
        finally:
            await gateway.stop(grace=0.5)
            if isinstance(worker, GrpcWorker) and worker_server is not None:
                await worker.close()
                await worker_server.stop(None)
            host.close()

    asyncio.run(main())


class Stream:
    """A raw Play stream: requests written in order, events read one at a time within `BOUND`."""

    def __init__(self, stub: matches_pb2_grpc.MatchesStub, match_id: str, token: str) -> None:
        self.call = stub.Play(metadata=(("authorization", f"Bearer {token}"),))
        self.match_id = match_id
        self.events: AsyncIterator[matches_pb2.PlayEvent] = aiter(self.call)

    async def open(self) -> matches_pb2.Update:
        await self.call.write(matches_pb2.PlayRequest(match_id=self.match_id))
        return (await self.next("update")).update

    async def send(self, ref: int, action: dict[str, Any]) -> None:
        await self.call.write(matches_pb2.PlayRequest(ref=ref, action=action_message(action)))

    async def next(self, kind: str) -> matches_pb2.PlayEvent:
        while True:
            event = await asyncio.wait_for(anext(self.events), BOUND)
            if event.HasField(kind):
                return event

    async def rest(self) -> list[matches_pb2.PlayEvent]:
        """Everything until the server ends the stream."""
        return [event async for event in _bounded(self.events)]


async def _bounded(events: AsyncIterator[matches_pb2.PlayEvent]) -> AsyncIterator[matches_pb2.PlayEvent]:
    while True:
        try:
            yield await asyncio.wait_for(anext(events), BOUND)
        except StopAsyncIteration:
            return


def test_a_command_meeting_a_bug_gets_internal_and_the_stream_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    async def body(host: Buggy, client: Client, stub: matches_pb2_grpc.MatchesStub) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        stream = Stream(stub, match.match_id, match.tokens[0])
        first = await stream.open()
        host.buggy = True
        caplog.clear()
        await stream.send(1, {"do": "ready"})
        failed = (await stream.next("result")).result
        assert failed.ref == 1 and failed.seq == 0
        assert (failed.error.status, failed.error.code, failed.error.message) == ("INTERNAL", "internal", INTERNAL)
        logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(logged) == 1 and logged[0].exc_info is not None, [r.getMessage() for r in logged]
        assert "nobody foresaw" in str(logged[0].exc_info[1])
        assert host.actors[match.match_id].seq == first.seq  # the match did not move
        host.buggy = False
        await stream.send(2, {"do": "ready"})
        done = (await stream.next("result")).result
        assert done.ref == 2 and not done.HasField("error") and done.seq == first.seq + 1
        stream.call.cancel()

    caplog.set_level(logging.INFO)
    served(body)


def test_a_command_whose_storage_fails_gets_unavailable_and_the_stream_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(host: Buggy, client: Client, stub: matches_pb2_grpc.MatchesStub) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        stream = Stream(stub, match.match_id, match.tokens[0])
        first = await stream.open()
        disk = host.storage
        assert isinstance(disk, BrokenDisk)
        disk.broken = True
        caplog.clear()
        await stream.send(1, {"do": "ready"})
        failed = (await stream.next("result")).result
        assert failed.ref == 1 and failed.seq == 0
        assert (failed.error.status, failed.error.code) == ("UNAVAILABLE", "unavailable")
        assert "send it again" in failed.error.message
        logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(logged) == 1 and "No space left" in logged[0].getMessage(), [r.getMessage() for r in logged]
        # the match did not move, and the same stream answers the next command once the disk is back
        assert host.actors[match.match_id].seq == first.seq
        disk.broken = False
        await stream.send(2, {"do": "ready"})
        done = (await stream.next("result")).result
        assert done.ref == 2 and not done.HasField("error") and done.seq == first.seq + 1
        stream.call.cancel()

    caplog.set_level(logging.INFO)
    served(body)


def test_act_and_play_answer_the_same_failure_alike() -> None:
    async def body(host: Buggy, client: Client, stub: matches_pb2_grpc.MatchesStub) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        disk = host.storage
        assert isinstance(disk, BrokenDisk)
        disk.broken = True
        with pytest.raises(grpc.aio.AioRpcError) as act:
            request = matches_pb2.ActRequest(match_id=match.match_id, action=action_message({"do": "ready"}))
            await stub.Act(request, metadata=(("authorization", f"Bearer {match.tokens[1]}"),))
        stream = Stream(stub, match.match_id, match.tokens[0])
        await stream.open()
        await stream.send(1, {"do": "ready"})
        played = (await stream.next("result")).result
        assert (act.value.code().name, act.value.details()) == (played.error.status, played.error.message)
        stream.call.cancel()

    served(body)


@pytest.mark.parametrize("remote", [False, True], ids=["in-process", "worker-process"])
def test_commands_sent_as_the_match_ends_are_each_answered_once(remote: bool) -> None:
    async def body(host: Buggy, client: Client, stub: matches_pb2_grpc.MatchesStub) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        stream = Stream(stub, match.match_id, match.tokens[0])
        await stream.open()
        # the resignation ends the match; the two commands behind it reach a match that is over
        for ref, action in enumerate(({"do": "resign"}, {"do": "ready"}, {"do": "ready"}), start=1):
            await stream.send(ref, action)
        events = await stream.rest()
        results = [e.result for e in events if e.HasField("result")]
        assert sorted(r.ref for r in results) == [1, 2, 3], "one answer per command, none lost, none twice"
        by_ref = {r.ref: r for r in results}
        assert not by_ref[1].HasField("error")
        assert {by_ref[2].error.code, by_ref[3].error.code} == {"illegal_action"}
        assert events[-1].HasField("result") or events[-1].update.over
        assert any(e.HasField("update") and e.update.over for e in events)
        await stream.call.wait_for_connection()
        assert await stream.call.code() == grpc.StatusCode.OK

    served(body, remote)
