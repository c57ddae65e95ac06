"""Bulk tables through the real gateway: the organizer key, all or nothing (a bad or duplicate player, a
worker failing mid-batch), idempotent creation per match id, `start_at` holding every clock (time injected
into the worker: no sleeps), and the organizer's start-now."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import select

from gateway.tournaments import schema
from gateway.tournaments.organizers import create_organizer
from protos.tablehall.v1 import host_pb2, matches_pb2, tournaments_pb2
from tablehall.client import TablehallError
from tests.tournament_hall import Hall, run_hall
from workers.actor import unix_ms
from workers.games.errors import MalformedAction
from workers.host import MatchHost
from workers.partitions import owner_of
from workers.sql import models as m

SB = "spectacular-bid"


def tables_request(pairs: list[list[str]], start: int | None = None, **options: Any) -> Any:
    request = tournaments_pb2.CreateTablesRequest(
        game=SB, tables=[tournaments_pb2.TableRequest(players=p) for p in pairs], options=matches_pb2.Options(**options)
    )
    if start is not None:
        request.start_unix_ms = start
    return request


def pairs(n: int, prefix: str = "p") -> list[list[str]]:
    return [[f"{prefix}{2 * i}", f"{prefix}{2 * i + 1}"] for i in range(n)]


class FrozenClock:
    """The workers' wall clock, moved by the test."""

    def __init__(self) -> None:
        self.now = unix_ms()

    def __call__(self) -> int:
        return self.now


async def refused(call: Any) -> TablehallError:
    """The refusal of a call (an SDK call, or a raw stub call whose gRPC error is read the same way)."""
    try:
        await call
    except TablehallError as error:
        return error
    except grpc.aio.AioRpcError as error:
        return TablehallError.of(error)
    raise AssertionError("the call was not refused")


def test_every_call_needs_a_known_organizer_key(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        request = tables_request(pairs(2))
        bare = await refused(hall.tournaments.CreateTables(request))
        assert bare.status is grpc.StatusCode.UNAUTHENTICATED
        assert "organizer key" in str(bare)
        wrong = await refused(hall.call("CreateTables", request, key="tho_not-a-key"))
        assert (wrong.status, wrong.code) == (grpc.StatusCode.UNAUTHENTICATED, "unauthenticated")
        assert hall.matches() == 0 and hall.batches() == 0
        made = await hall.call("CreateTables", request)
        other = await asyncio.to_thread(create_organizer, hall.engine, "Someone else")
        start = tournaments_pb2.StartTablesRequest(batch_id=made.batch_id)
        denied = await refused(hall.call("StartTables", start, other))
        assert (denied.status, denied.code) == (grpc.StatusCode.PERMISSION_DENIED, "permission_denied")
        for method, message in [
            ("CreateTournament", tournaments_pb2.CreateTournamentRequest(name="x", game=SB, players=["a", "b"])),
            ("GetTournament", tournaments_pb2.GetTournamentRequest(tournament_id="x")),
            ("NextRound", tournaments_pb2.NextRoundRequest(tournament_id="x")),
            ("StartTables", tournaments_pb2.StartTablesRequest(batch_id=made.batch_id)),
        ]:
            error = await refused(getattr(hall.tournaments, method)(message))
            assert error.status is grpc.StatusCode.UNAUTHENTICATED, method
        assert hall.batches() == 1

    run_hall(tmp_path, body)


@pytest.mark.parametrize(
    ("tables", "options", "says"),
    [
        ([*pairs(3), ["p4", "zed"]], {}, "player 'p4' is also at table 3"),
        ([["ann", "ann"], ["bob", "cid"]], {}, "player 'ann' is twice at that table"),
        ([["ann", "bob"], ["cid", ""]], {}, "table 2: every player needs a name"),
        ([["ann", "bob"], ["cid", "dee", "eve"]], {}, "table 2: spectacular-bid takes 2 to 2 players, not 3"),
        (pairs(2), {"bank_s": -5}, "options"),
    ],
)
def test_a_bad_or_duplicate_player_rejects_the_whole_batch(
    tmp_path: Path, tables: list[list[str]], options: dict[str, Any], says: str
) -> None:
    async def body(hall: Hall) -> None:
        error = await refused(hall.call("CreateTables", tables_request(tables, **options)))
        assert (error.status, error.code) == (grpc.StatusCode.INVALID_ARGUMENT, "batch_rejected")
        assert says in str(error)
        assert hall.matches() == 0 and hall.batches() == 0 and not hall.hosts[0].actors

    run_hall(tmp_path, body)


def test_an_unknown_game_or_an_empty_batch_is_rejected(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        request = tables_request(pairs(1))
        request.game = "chess"
        assert (await refused(hall.call("CreateTables", request))).code == "batch_rejected"
        assert (await refused(hall.call("CreateTables", tables_request([])))).code == "batch_rejected"
        assert hall.matches() == 0

    run_hall(tmp_path, body)


def test_tables_start_now_with_one_token_per_seat(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        made = await hall.call("CreateTables", tables_request(pairs(5), bank_s=60))
        assert len(made.tables) == 5 and hall.matches() == 5
        for table, players in zip(made.tables, pairs(5), strict=True):
            assert [s.player for s in table.seats] == players
            seat = hall.client.seat(table.match_id, table.seats[1].token)
            seq, view = await seat.view()
            assert (seq, view["seat"], view["phase"], view["banks_ms"]) == (1, 1, "ready", [60_000, 60_000])
            assert (await seat.act({"do": "ready"}))[0] == 2
        with hall.engine.connect() as conn:
            stored = conn.execute(select(schema.batch_tables.c.token_sha256)).scalars().all()
        tokens = {hashlib.sha256(s.token.encode()).hexdigest() for t in made.tables for s in t.seats}
        assert {h for hashes in stored for h in hashes} == tokens  # hashes only

    run_hall(tmp_path, body)


def test_start_at_holds_every_clock_until_then_and_starts_them_together(tmp_path: Path) -> None:
    clock = FrozenClock()
    start = clock.now + 600_000  # ten minutes ahead

    async def body(hall: Hall) -> None:
        made = await hall.call("CreateTables", tables_request(pairs(4), start, bank_s=120, delay_s=10))
        assert made.starts_unix_ms == start
        ids = [t.match_id for t in made.tables]
        seats = [[hall.client.seat(t.match_id, s.token) for s in t.seats] for t in made.tables]
        for table in seats:
            update = await table[0].stub.GetView(
                matches_pb2.GetViewRequest(match_id=table[0].match_id), metadata=table[0].metadata
            )
            view = json.loads(update.view_json)
            assert (update.seq, update.starts_unix_ms, view["phase"], view["hand"]) == (0, start, "deal", None)
            error = await refused(table[0].act({"do": "ready"}))
            assert (error.status, error.code) == (grpc.StatusCode.FAILED_PRECONDITION, "not_started")
            assert "is scheduled: it starts at" in str(error)
        with hall.engine.connect() as conn:  # nothing dealt, nothing logged, no clock (no deadline)
            assert conn.execute(select(m.events.c.seq).where(m.events.c.match_id.in_(ids))).first() is None
            deadlines = conn.execute(select(m.matches.c.deadline_unix_ms).where(m.matches.c.id.in_(ids))).scalars()
            assert set(deadlines) == {None}

        clock.now = start  # the start: each held match's timer fires (run here, as the timer would)
        for match_id in ids:
            await hall.actor(match_id).settle()
        for match_id in ids:
            actor = hall.actor(match_id)
            assert (actor.seq, actor.entry.created_unix_ms, actor.match.now) == (1, start, 0)  # dealt at t=0
        # 16 s after the start both pressed Continue at 1 s: the first decision used 15 s, 10 s of it delay
        actor = hall.actor(ids[0])
        for seat in (0, 1):
            token = seats[0][seat].metadata[0][1].split()[1]
            await actor.command(hashlib.sha256(token.encode()).digest(), None, {"do": "ready"}, start + 1_000)
        first = json.loads(actor.view_json(None, actor.seq))
        assert first["banks_ms"] == [120_000, 120_000] and first["clock_running"] is not None
        legal = json.loads(actor.view_json(first["turn"], actor.seq))["legal"]
        token = seats[0][first["turn"]].metadata[0][1].split()[1]
        play = next(a for a in legal if a["do"] == "play")
        await actor.command(hashlib.sha256(token.encode()).digest(), None, play, start + 16_000)
        banks = json.loads(actor.view_json(None, actor.seq))["banks_ms"]
        assert sorted(banks) == [115_000, 120_000]  # counted from the start, not from the creation

    run_hall(tmp_path, body, clock=clock)


def test_the_organizer_starts_held_tables_now(tmp_path: Path) -> None:
    clock = FrozenClock()

    async def body(hall: Hall) -> None:
        made = await hall.call("CreateTables", tables_request(pairs(3), clock.now + 3_600_000))
        clock.now += 5_000
        started = await hall.call("StartTables", tournaments_pb2.StartTablesRequest(batch_id=made.batch_id))
        assert started.started == 3
        for table in made.tables:
            actor = hall.actor(table.match_id)
            assert (actor.seq, actor.entry.created_unix_ms) == (1, clock.now)  # its time counts from now
            seq, _ = await hall.client.seat(table.match_id, table.seats[0].token).act({"do": "ready"})
            assert seq == 2
        with hall.engine.connect() as conn:
            origins = conn.execute(select(m.matches.c.created_unix_ms)).scalars().all()
        assert set(origins) == {clock.now}  # the new origin is durable (recovery counts from it)
        again = await hall.call("StartTables", tournaments_pb2.StartTablesRequest(batch_id=made.batch_id))
        assert again.started == 0 and hall.actor(made.tables[0].match_id).seq == 2  # nothing held, nothing restarted
        assert again.started_unix_ms == started.started_unix_ms  # when their clocks started
        unknown = await refused(hall.call("StartTables", tournaments_pb2.StartTablesRequest(batch_id="nope")))
        assert unknown.status is grpc.StatusCode.NOT_FOUND

    run_hall(tmp_path, body, clock=clock)


def test_start_counts_only_the_tables_it_started(tmp_path: Path) -> None:
    """`started` is the tables held and started by this call (tournaments.proto): none for a batch that
    started at creation, none when two calls race on one held batch except the one that started it."""
    clock = FrozenClock()

    async def body(hall: Hall) -> None:
        start = tournaments_pb2.StartTablesRequest
        now = await hall.call("CreateTables", tables_request(pairs(3, "n")))
        assert (await hall.call("StartTables", start(batch_id=now.batch_id))).started == 0
        held = await hall.call("CreateTables", tables_request(pairs(4, "h"), clock.now + 3_600_000))
        both = await asyncio.gather(*(hall.call("StartTables", start(batch_id=held.batch_id)) for _ in range(2)))
        assert sorted(reply.started for reply in both) == [0, 4]
        assert all(hall.actor(table.match_id).seq == 1 for table in held.tables)  # each dealt once

    run_hall(tmp_path, body, clock=clock)


def test_a_worker_failing_mid_batch_leaves_nothing_playable(tmp_path: Path) -> None:
    """Two workers; the second is down. The first one's tables are voided `cancelled`, the call fails."""
    async def body(hall: Hall) -> None:
        tables = pairs(40)
        error = await refused(hall.call("CreateTables", tables_request(tables)))
        assert (error.status, error.code) == (grpc.StatusCode.UNAVAILABLE, "unavailable")
        assert "nothing can be played" in str(error)
        made = hall.hosts[0].actors
        assert made, "the live worker had created its share before the other one failed"
        assert all(a.match.void_reason == "cancelled" and a.match.over for a in made.values())
        with hall.engine.connect() as conn:
            assert set(conn.execute(select(schema.batches.c.status)).scalars()) == {"cancelled"}
            assert set(conn.execute(select(m.matches.c.status)).scalars()) == {"voided"}

    run_hall(tmp_path, body, remote_workers=("127.0.0.1:9",))  # nothing listens on the discard port


def test_creation_is_idempotent_per_match_id() -> None:
    """A batch sent again (its reply was lost) is accepted; the same id with other seats is refused."""

    async def body() -> None:
        host = MatchHost()
        await host.start()
        ids = [secrets.token_hex(8) for _ in range(6)]
        tables = [
            host_pb2.HostCreateRequest(
                match_id=i, game=SB, players=[f"a{k}", f"b{k}"], options_json="{}",
                token_sha256=[bytes([k]) * 32, bytes([k + 100]) * 32], created_unix_ms=unix_ms(),
            )
            for k, i in enumerate(ids)
        ]
        first = await host.create_tables(host_pb2.HostCreateTablesRequest(tables=tables))
        actors = dict(host.actors)
        again = await host.create_tables(host_pb2.HostCreateTablesRequest(tables=tables))
        assert first == again and host.actors == actors and all(a.seq == 1 for a in actors.values())
        tables[2].players[1] = "intruder"
        with pytest.raises(MalformedAction, match="exists already, with other seats"):
            await host.create_tables(host_pb2.HostCreateTablesRequest(tables=tables))
        bad = host_pb2.HostCreateRequest(match_id=secrets.token_hex(8), game=SB, players=["x"], created_unix_ms=1)
        with pytest.raises(MalformedAction, match="table 1"):
            await host.create_tables(host_pb2.HostCreateTablesRequest(tables=[bad, *tables[:2]]))
        assert host.actors == actors
        host.close()

    asyncio.run(body())


def test_owners_split_a_batch_like_the_router() -> None:
    ids = [secrets.token_hex(8) for _ in range(200)]
    assert {owner_of(i, 2) for i in ids} == {0, 1}  # the failing-worker test needs both workers hit


def test_a_held_match_survives_a_worker_restart_and_the_sweeps(tmp_path: Path) -> None:
    """Recovery keeps a held match held (same start), then its timer starts it; the sweeps never call a
    held table abandoned or overdue before its start."""
    from ratings.sweep import due
    from workers.sql import SqlStorage
    from workers.sql.migrate import engine_for

    url = f"sqlite:///{tmp_path / 'restart.db'}"
    clock = FrozenClock()
    start = clock.now + 3_600_000

    async def body() -> None:
        storage = await SqlStorage.open(url)
        first = MatchHost(storage, clock=clock)
        await first.start()
        tables = [
            host_pb2.HostCreateRequest(
                match_id=secrets.token_hex(8), game=SB, players=[f"a{k}", f"b{k}"], options_json="{}",
                token_sha256=[bytes([k]) * 32, bytes([k + 50]) * 32], created_unix_ms=start,
            )
            for k in range(3)
        ]
        await first.create_tables(host_pb2.HostCreateTablesRequest(tables=tables))
        first.close()
        assert due(engine_for(url), clock.now + 600_000) == []  # long after creation, before the start
        second = MatchHost(storage, clock=clock)
        await second.start()
        for t in tables:
            actor = second.actors[t.match_id]
            assert actor.scheduled and actor.entry.created_unix_ms == start and actor.timer is not None
        clock.now = start + 200  # the timer fires a little late: no fault, time still counts from the start
        for t in tables:
            await second.actors[t.match_id].settle()
            assert (second.actors[t.match_id].seq, second.actors[t.match_id].entry.created_unix_ms) == (1, start)
        second.close()
        await storage.close()

    asyncio.run(body())


def test_a_start_found_late_beyond_the_tolerance_counts_from_the_deal() -> None:
    """The worker was down at the start (or its timer fired far too late): the match starts now, and its
    time origin moves with it, so the ready pause and the clocks are whole."""
    clock = FrozenClock()

    async def body() -> None:
        host = MatchHost(clock=clock, tolerance_ms=1000)
        await host.start()
        table = host_pb2.HostCreateRequest(
            match_id=secrets.token_hex(8), game=SB, players=["a", "b"], options_json="{}",
            token_sha256=[b"\1" * 32, b"\2" * 32], created_unix_ms=clock.now + 1000,
        )
        await host.create_tables(host_pb2.HostCreateTablesRequest(tables=[table]))
        clock.now += 6_000
        actor = host.actors[table.match_id]
        await actor.settle()
        assert (actor.seq, actor.entry.created_unix_ms, actor.match.now) == (1, clock.now, 0)
        view = json.loads(actor.view_json(None, 1))
        assert view["phase"] == "ready" and view["banks_ms"] == [120_000, 120_000]
        host.close()

    asyncio.run(body())


def test_without_a_database_tournament_calls_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.server import start_gateway
    from gateway.workers import Router
    from protos.tablehall.v1 import tournaments_pb2_grpc
    from tablehall.client import Client

    monkeypatch.setenv("TABLEHALL_DATABASE_URL", "memory")

    async def body() -> TablehallError:
        host = MatchHost()
        gateway = await start_gateway(Router([host]), "127.0.0.1", 0)
        try:
            async with Client(f"127.0.0.1:{gateway.port}") as client:
                stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
                key = (("authorization", "Bearer tho_any"),)
                return await refused(stub.CreateTables(tables_request(pairs(1)), metadata=key))
        finally:
            host.close()
            await gateway.stop(grace=0.5)

    error = asyncio.run(body())
    assert (error.status, error.code) == (grpc.StatusCode.FAILED_PRECONDITION, "no_database")
    assert "need a database" in str(error)
