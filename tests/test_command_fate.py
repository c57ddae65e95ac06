"""A command's fate does not depend on its caller (issue: frozen matches). Through a real gateway over gRPC
and a real store (SQLite, PostgreSQL), a caller cancels at each point of a command's life: queued behind
another command, while its commit is under way, after the commit and before the answer. Either the
command is applied, in the log and seen by watchers, or it is in neither; the match goes on either way.
A store that fails, or loses the answer of a commit that went through, never freezes a match either."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from gateway.server import start_gateway
from gateway.workers import Router
from protos.tablehall.v1 import matches_pb2
from tablehall.client import Client, SeatClient, TablehallError, action_message
from tests.storage_backends import SQL_BACKENDS, Backend, backend_for, run
from workers.host import MatchHost
from workers.storage import LogEntry, Progress, Storage

CLOCK = {"bank_s": 600, "delay_s": 0}


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


class Gated:
    """The real store, whose next append can be held at one point: `before` it is handed to the store,
    or `after` the store committed it (the answer not yet returned). Or it can fail: `fail_before`
    (nothing written) or `fail_after` (written, then the answer lost, as when a connection drops during
    COMMIT). Everything else goes straight to the store."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.point: str | None = None
        self.reached = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def arm(self, point: str) -> None:
        self.point, self.reached, self.go = point, asyncio.Event(), asyncio.Event()

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        point, self.point = self.point, None
        if point == "before":
            self.reached.set()
            await self.go.wait()
        if point == "fail_before":
            raise OSError("the disk is full")
        await self.inner.append_all(match_id, partition, epoch, entries, progress)
        if point == "after":
            self.reached.set()
            await self.go.wait()
        if point == "fail_after":
            raise OSError("the connection dropped during COMMIT")


async def playing(client: Client) -> tuple[str, list[SeatClient]]:
    created = await client.create_match("spectacular-bid", ["Ana", "Bia"], CLOCK)
    seats = [client.seat(created.match_id, t) for t in created.tokens]
    for seat in seats:
        await seat.act({"do": "ready"})
    return created.match_id, seats


async def to_act(seats: list[SeatClient]) -> tuple[SeatClient, dict[str, Any], dict[str, Any]]:
    """The seat whose decision it is, its view, and a legal move (no resign)."""
    for seat in seats:
        _, view = await seat.view()
        moves = [a for a in view["legal"] if a["do"] != "resign"]
        if moves:
            return seat, view, moves[0]
    raise AssertionError("nobody has a move")


async def goes_on(seats: list[SeatClient], seq: int) -> int:
    """The match takes its next command: nothing is frozen (the answer is the next change)."""
    seat, _, move = await to_act(seats)
    after, _ = await seat.act(move)
    assert after > seq
    return after


@contextlib.asynccontextmanager
async def served(backend: Backend) -> AsyncIterator[tuple[Gated, MatchHost, Client]]:
    """The gated store, an in-process worker on it, a real gateway on a free port, and a client."""
    store = Gated(await backend.open())
    host = MatchHost(store)  # type: ignore[arg-type]
    await host.start()
    gateway = await start_gateway(Router([host]), "127.0.0.1", 0)
    try:
        async with Client(f"127.0.0.1:{gateway.port}") as client:
            yield store, host, client
    finally:
        host.close()
        await gateway.stop(grace=0.5)
        await store.inner.close()


@pytest.mark.parametrize("point", ["before", "after"])
def test_a_caller_that_cancels_mid_commit_still_gets_its_command_applied_and_published(
    backend: Backend, point: str
) -> None:
    async def body() -> None:
        async with served(backend) as (store, _host, client):
            match_id, seats = await playing(client)
            spectator = client.spectator(match_id)
            seq = (await seats[0].view())[0]
            seen: list[int] = []

            async def watch() -> None:
                async for update in spectator.updates(after_seq=seq):
                    seen.append(update.seq)

            watching = asyncio.create_task(watch())
            seat, _, move = await to_act(seats)
            store.arm(point)
            call = seat.stub.Act(
                matches_pb2.ActRequest(match_id=match_id, action=action_message(move)), metadata=seat.metadata
            )
            await asyncio.wait_for(store.reached.wait(), 10)
            call.cancel()  # the caller goes away in the middle of the commit
            with pytest.raises(asyncio.CancelledError):
                await call
            store.go.set()
            log = await store.inner.log(match_id)
            while log[-1].change <= seq:
                await asyncio.sleep(0.01)
                log = await store.inner.log(match_id)
            command = log[-1] if log[-1].kind == "command" else log[-2]
            assert command.kind == "command" and command.change == seq + 1
            assert (await seats[0].view())[0] >= seq + 1  # applied in memory: the views have it
            nxt = await goes_on(seats, seq + 1)  # nothing frozen
            while not seen or seen[-1] < nxt:
                await asyncio.sleep(0.01)
            assert seen == list(range(seq + 1, nxt + 1))  # the watcher saw every change, in order
            watching.cancel()

    run(body, timeout=60)


def test_a_command_queued_behind_another_is_dropped_when_its_caller_leaves(backend: Backend) -> None:
    async def body() -> None:
        async with served(backend) as (store, host, client):
            match_id, seats = await playing(client)
            seq = (await seats[0].view())[0]
            seat, view, move = await to_act(seats)
            other = seats[1 - view["seat"]]
            store.arm("before")
            first = asyncio.create_task(seat.act(move))
            await asyncio.wait_for(store.reached.wait(), 10)
            # the other seat resigns while the first command commits: queued behind it
            call = other.stub.Act(
                matches_pb2.ActRequest(match_id=match_id, action=action_message({"do": "resign"})),
                metadata=other.metadata,
            )
            mailbox = host.actors[match_id].mailbox
            while mailbox.waiting < 1:  # the resignation waits in the mailbox behind the first command
                await asyncio.sleep(0.005)
            call.cancel()  # gone before its turn came
            while mailbox.callers_waiting:  # the service has heard of it (the cancel crosses the connection)
                await asyncio.sleep(0.005)
            store.go.set()
            after, _ = await first
            await host.actors[match_id].mailbox.settled()
            kinds = [(e.kind, e.action.get("do")) for e in await store.inner.log(match_id) if e.change > seq]
            assert ("command", "resign") not in kinds, kinds
            assert (await seats[0].view())[1]["status"] == "in_progress"
            await goes_on(seats, after)

    run(body, timeout=60)


def test_a_commit_whose_answer_was_lost_is_found_in_the_log_and_answered(backend: Backend) -> None:
    async def body() -> None:
        async with served(backend) as (store, _host, client):
            match_id, seats = await playing(client)
            seq = (await seats[0].view())[0]
            seat, _, move = await to_act(seats)
            store.arm("fail_after")
            after, view = await seat.act(move)  # the store said it failed, but the log has it
            assert after == seq + 1 and view["status"] == "in_progress"
            assert [e.change for e in await store.inner.log(match_id)][-1] >= seq + 1
            await goes_on(seats, after)

    run(body, timeout=60)


def test_a_failed_commit_is_refused_as_unavailable_and_the_match_goes_on(backend: Backend) -> None:
    async def body() -> None:
        async with served(backend) as (store, host, client):
            match_id, seats = await playing(client)
            seq = (await seats[0].view())[0]
            seat, _, move = await to_act(seats)
            store.arm("fail_before")
            with pytest.raises(TablehallError) as refused:
                await seat.act(move)
            assert refused.value.status is grpc.StatusCode.UNAVAILABLE, refused.value
            assert "send it again" in str(refused.value)
            assert [e.change for e in await store.inner.log(match_id)][-1] == seq  # nothing written
            again, _ = await seat.act(move)  # sent again: applied
            assert again == seq + 1
            record_view = json.loads((await host.view(_view_request(match_id))).view_json)
            assert record_view["status"] == "in_progress"

    run(body, timeout=60)


def _view_request(match_id: str) -> Any:
    from protos.tablehall.v1 import host_pb2

    return host_pb2.HostViewRequest(match_id=match_id)
