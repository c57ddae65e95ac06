"""Ownership across processes: split brain is fenced by the epoch in the database, and the gateway sends
each match to the worker that owns its partition while every other worker refuses it.

Real processes over one database (SQLite file, PostgreSQL)."""

from __future__ import annotations

import asyncio
import collections
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from protos.tablehall.v1 import host_pb2
from tablehall.client import Client, CreatedMatch, TablehallError, action_message
from tablehall.ports import free_ports
from tests.durability import DB_BACKENDS, Db, Internal, Refusal, cluster, normal, pg_or_sqlite, run, unix_ms
from workers.partitions import owner_of, partition_of

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from pg_or_sqlite(request, tmp_path)


def sha(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def move(view: dict[str, Any], avoid: dict[str, Any] | None = None) -> dict[str, Any]:
    """A legal action of this view's seat (another than `avoid` when there is one)."""
    legal = [a for a in view["legal"] if a["do"] not in ("resign", "abandon")]
    assert legal, view
    return next((a for a in legal if a != avoid), legal[0])


def test_split_brain_only_the_newest_claimant_writes(db_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        with cluster(db_url, 1, tmp_path, tolerance_s=30) as c:
            await c.start()  # worker A (ordinal 0) and a gateway that routes to it
            stale = c.worker_procs[0]
            async with Client(c.address) as client:
                created = await client.create_match("spectacular-bid", ["Ana", "Bia"], {"start_points": 50})
                match_id = created.match_id
                seats = [client.seat(match_id, t) for t in created.tokens]
                acked = []
                for seat in seats:
                    seq, after = await seat.act({"do": "ready"})
                    acked.append((seq, after["seat"], {"do": "ready"}))
                _, view = await seats[0].view()
                turn = view["turn"]
                _, own = await seats[turn].view()

                async def follow() -> list[int]:
                    return [u.seq async for u in seats[0].updates(after_seq=acked[-1][0])]

                watching = asyncio.create_task(follow())

                # a second worker with the same ordinal, on another port, on the same database
                fresh = await c.spawn_worker(0, port=free_ports(1)).started()
                assert "recovered 1 matches (0 voided" in fresh.log()

                # the stale worker's write is refused, with the code and a clear line in its log
                stale_action = move(own)
                with pytest.raises(TablehallError) as refused:
                    await seats[turn].act(stale_action)
                assert (refused.value.status, refused.value.code) == (UNAVAILABLE, "wrong_owner"), refused.value
                log = stale.log()
                partition = partition_of(match_id)
                assert f"partition {partition} is owned by another worker now; no longer serving it" in log
                assert f"match {match_id}: partition {partition} was claimed by worker-0-{fresh.popen.pid}-" in log
                # ... and it serves that match no more: an open stream is cut as unavailable (the watcher
                # reconnects), not ended as if the match were over; reads are refused
                with pytest.raises(TablehallError) as cut:
                    await asyncio.wait_for(watching, 10)
                assert cut.value.status is UNAVAILABLE, cut.value
                for call in (lambda: seats[turn].act(stale_action), seats[0].view):
                    with pytest.raises(TablehallError) as again:
                        await call()
                    assert (again.value.status, again.value.code) == (UNAVAILABLE, "wrong_owner")

                # a new match routed to the stale worker cannot be created there either
                with pytest.raises(TablehallError) as no_create:
                    await client.create_match("501", ["A", "B", "C"])
                assert (no_create.value.status, no_create.value.code) == (UNAVAILABLE, "wrong_owner")

                # the new owner has the match as it was acknowledged, and goes on
                direct = Internal(f"127.0.0.1:{fresh.port}")
                try:
                    reply = await direct.view(match_id)
                    assert not isinstance(reply, Refusal), reply
                    assert reply.seq == acked[-1][0]
                    fresh_action = move(own, avoid=stale_action)
                    request = host_pb2.HostCommandRequest(
                        match_id=match_id, token_sha256=sha(created.tokens[turn]),
                        action=action_message(fresh_action), arrival_unix_ms=unix_ms(),
                    )  # fmt: skip
                    answer = await direct.call("Command", request)
                    assert not isinstance(answer, Refusal), answer
                    acked.append((answer.seq, turn, fresh_action))
                finally:
                    await direct.close()

            db = Db(db_url)
            try:
                log_entries = db.log(match_id)
                epoch, owner = db.epochs()[partition]
            finally:
                db.close()
            assert epoch == 2 and owner.startswith(f"worker-0-{fresh.popen.pid}-")
            commands = [
                (e.change, e.seat, normal("spectacular-bid", e.action)) for e in log_entries if e.kind == "command"
            ]
            # exactly what was acknowledged: the stale worker's attempt is not there
            assert commands == [(seq, seat, normal("spectacular-bid", a)) for seq, seat, a in acked]
            assert [e.seq for e in log_entries] == list(range(1, len(log_entries) + 1))
            assert "void" not in {e.kind for e in log_entries}

    run(body, timeout=60)


def test_gateway_routes_to_the_owner_and_other_workers_refuse(db_url: str, tmp_path: Path) -> None:
    workers = 3

    async def body() -> None:
        with cluster(db_url, workers, tmp_path, tolerance_s=30) as c:
            await c.start()
            internals = [Internal(c.worker_address(k)) for k in range(workers)]
            try:
                async with Client(c.address) as client:
                    created: list[tuple[str, CreatedMatch]] = []
                    per_worker: collections.Counter[int] = collections.Counter()
                    give_up = time.monotonic() + 20
                    while min(per_worker[k] for k in range(workers)) < 3:
                        assert time.monotonic() < give_up
                        game, players = (
                            ("501", ["A", "B", "C"]) if len(created) % 2 else ("spectacular-bid", ["A", "B"])
                        )
                        m = await client.create_match(game, players)
                        created.append((game, m))
                        per_worker[owner_of(m.match_id, workers)] += 1

                    db = Db(c.url)
                    try:
                        for game, m in created:
                            owner = owner_of(m.match_id, workers)
                            for token in m.tokens:  # a seat that has something to do
                                seat = client.seat(m.match_id, token)
                                _, view = await seat.view()
                                if [a for a in view["legal"] if a["do"] not in ("resign", "abandon")]:
                                    break
                            seq, _ = await seat.act(move(view))
                            # the owner has the command ...
                            assert await internals[owner].seq(m.match_id) == seq
                            assert db.match_row(m.match_id).partition == partition_of(m.match_id)
                            logged = db.log(m.match_id)
                            assert logged[-1].kind == "command" and logged[-1].change == seq
                            # ... every other worker refuses the match, and nothing changes
                            for k in set(range(workers)) - {owner}:
                                assert_refused(await internals[k].view(m.match_id))
                                request = host_pb2.HostCommandRequest(
                                    match_id=m.match_id, token_sha256=sha(m.tokens[view["seat"]]),
                                    action=action_message(move(view)), arrival_unix_ms=unix_ms(),
                                )  # fmt: skip
                                assert_refused(await internals[k].call("Command", request))
                                create = host_pb2.HostCreateRequest(
                                    match_id=m.match_id, game=game, players=["X"] * len(m.tokens),
                                    token_sha256=[sha("t")] * len(m.tokens), created_unix_ms=unix_ms(),
                                )  # fmt: skip
                                assert_refused(await internals[k].call("Create", create))
                                assert_refused(
                                    await internals[k].call("Record", host_pb2.HostRecordRequest(match_id=m.match_id))
                                )
                            assert await internals[owner].seq(m.match_id) == seq
                            assert db.log(m.match_id) == logged
                    finally:
                        db.close()
            finally:
                for internal in internals:
                    await internal.close()

    run(body, timeout=60)


def assert_refused(reply: Any) -> None:
    assert isinstance(reply, Refusal), reply
    assert (reply.status, reply.code) == (UNAVAILABLE, "wrong_owner"), reply
    assert "does not own" in reply.message, reply
