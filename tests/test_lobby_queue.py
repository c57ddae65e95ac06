"""The Lobby over a real gateway and a real database: identity, quick pairing by rating with time
injected, 501♠ tables of 3 and 4, leave and re-join, a duplicate join refused, seats pushed on Seated
(and again on a reconnect), a restart of the pairing loop with players queued."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import grpc
import pytest
from sqlalchemy import event, select

from gateway.lobby import queue, schema
from gateway.lobby.pairing import Table
from protos.tablehall.v1 import lobby_pb2
from tablehall.client import TablehallError
from tablehall.lobby_client import LobbyClient, register
from tests.lobby_support import Lobby, lobby_hall, run_lobby
from workers.sql import models as m

SB = "spectacular-bid"


async def seat_of(player: LobbyClient, ticket: str) -> lobby_pb2.Seat:
    return await asyncio.wait_for(player.seated(ticket), 10)


def test_a_player_registers_once_and_only_the_key_s_hash_is_kept(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        me = await register(lobby.client, "Ana Lima")
        assert me.key.startswith("thp_") and me.name == "Ana Lima"
        with lobby.engine.connect() as conn:
            stored: bytes = conn.execute(select(schema.player_keys.c.key_sha256)).scalar_one()
        assert stored == hashlib.sha256(me.key.encode()).digest()
        info = await LobbyClient(lobby.client, me.key).me()
        assert (info.player_id, info.name) == (me.player_id, "Ana Lima")
        with pytest.raises(TablehallError) as taken:
            await register(lobby.client, "Ana Lima")
        assert (taken.value.status, taken.value.code) == (grpc.StatusCode.ALREADY_EXISTS, "name_taken")
        for bad in ("", " Ana", "x" * 33, "Ana\nBia", "<b>"):
            with pytest.raises(TablehallError) as refused:
                await register(lobby.client, bad)
            assert refused.value.status == grpc.StatusCode.INVALID_ARGUMENT and len(str(refused.value)) < 200
        with pytest.raises(TablehallError) as nobody:
            await LobbyClient(lobby.client, "thp_nobody").join(SB)
        assert nobody.value.status == grpc.StatusCode.UNAUTHENTICATED
        assert lobby.count(m.players) == 1

    run_lobby(tmp_path, body)


async def listening(lobby: Lobby, players: list[LobbyClient]) -> list[asyncio.Task[lobby_pb2.Seat]]:
    """Each player's Seated stream, open on the gateway (its listener registered) before this returns."""
    before = len(lobby.hall.listeners)
    tasks = [asyncio.create_task(asyncio.wait_for(p.seated(), 20)) for p in players]
    while len(lobby.hall.listeners) < before + len(players):  # the streams' own readiness, not a clock
        await asyncio.sleep(0.005)
    return tasks


def test_close_ratings_pair_at_once_and_far_ones_when_their_gap_has_widened(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana", 0.0), await lobby.player("Bia", 1.0)
        cid, dan = await lobby.player("Cid", 40.0), await lobby.player("Dan", 60.0)
        seats = await listening(lobby, [ana, bia, cid, dan])
        tickets = [await p.join(SB) for p in (ana, bia, cid, dan)]
        assert tickets[1].ordinal == 1.0
        (first,) = await lobby.hall.tick()
        a, b = await seats[0], await seats[1]
        assert a.match_id == b.match_id == first and {a.seat, b.seat} == {0, 1}
        assert (a.ticket, b.ticket) == (tickets[0].ticket, tickets[1].ticket)
        assert list(a.players) == ["Ana", "Bia"]
        for _ in range(179):  # the clock moves a beat at a time: allowed 2 + 17.9 < 20
            lobby.clock.advance(0.1)
            assert await lobby.hall.tick() == []
        lobby.clock.advance(0.1)
        (second,) = await lobby.hall.tick()
        c, d = await seats[2], await seats[3]
        assert c.match_id == d.match_id == second
        # the seat token is the player's key: it acts for that seat
        _seq, view = await lobby.client.seat(first, lobby.players["Ana"].key).view()
        assert view["seat"] == a.seat
        assert lobby.count(schema.lobby_queue) == 0

    run_lobby(tmp_path, body)


def test_a_player_whose_stream_is_gone_is_not_paired_until_back_and_dropped_later(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia, cid = await lobby.player("Ana"), await lobby.player("Bia"), await lobby.player("Cid")
        await ana.join(SB)  # and closes the tab: no Seated stream
        lobby.clock.advance(16)  # past the presence window (15 s in SETTINGS' default)
        await listening(lobby, [bia])
        await bia.join(SB)
        assert await lobby.hall.tick() == [], "Ana is away: Bia is not paired with a ghost"
        (back,) = await listening(lobby, [ana])
        (made,) = await lobby.hall.tick()  # Ana's stream is open again: seen at this beat
        assert (await back).match_id == made
        await cid.join(SB)
        lobby.clock.advance(20 * 15 + 1)
        await lobby.hall.tick()
        assert lobby.count(schema.lobby_queue) == 0, "a place left that long is dropped"

    run_lobby(tmp_path, body)


@pytest.mark.parametrize(("players", "tables"), [(3, [3]), (4, [4]), (5, [4]), (7, [4, 3])])
def test_501_seats_three_or_four(tmp_path: Path, players: int, tables: list[int]) -> None:
    async def body(lobby: Lobby) -> None:
        clients = [await lobby.player(f"P{i}", float(i) / 10, "501") for i in range(players)]
        for c in clients:
            await c.join("501", {"start_score": 100})
        made = await lobby.hall.tick()
        with lobby.engine.connect() as conn:
            sizes = sorted(
                (len([s for s in conn.execute(select(schema.lobby_seats.c.match_id)) if s[0] == mid]) for mid in made),
                reverse=True,
            )
        assert sizes == tables
        assert lobby.count(schema.lobby_queue) == players - sum(tables)

    run_lobby(tmp_path, body)


def test_different_options_are_different_queues(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        await ana.join(SB, {"start_points": 50})
        await bia.join(SB, {"start_points": 100})
        assert await lobby.hall.tick() == []
        cid = await lobby.player("Cid")
        with pytest.raises(TablehallError) as bad:
            await cid.join(SB, {"start_points": 7})
        assert bad.value.status == grpc.StatusCode.INVALID_ARGUMENT

    run_lobby(tmp_path, body)


def test_a_duplicate_join_is_refused_and_leave_then_join_again_works(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        first = await ana.join(SB)
        with pytest.raises(TablehallError) as twice:
            await ana.join("501")
        assert (twice.value.status, twice.value.code) == (grpc.StatusCode.ALREADY_EXISTS, "already_queued")
        assert lobby.count(schema.lobby_queue) == 1
        await ana.leave()
        with pytest.raises(TablehallError) as again:
            await ana.leave()
        assert again.value.status == grpc.StatusCode.NOT_FOUND
        await bia.join(SB)
        assert await lobby.hall.tick() == [], "Ana left: Bia waits alone"
        second = await ana.join(SB)
        assert second.ticket != first.ticket
        (made,) = await lobby.hall.tick()
        assert (await seat_of(ana, second.ticket)).match_id == made

    run_lobby(tmp_path, body)


def test_a_reconnecting_player_gets_the_pending_seat(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        ticket = await ana.join(SB)
        await bia.join(SB)
        (made,) = await lobby.hall.tick()  # nobody was listening
        again = await seat_of(ana, ticket.ticket)
        assert again.match_id == made
        assert (await seat_of(ana, ticket.ticket)).match_id == made

    run_lobby(tmp_path, body)


def test_a_restarted_pairing_loop_loses_nobody_and_seats_nobody_twice(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        assert await lobby.hall.tick() == [] and lobby.hall.leading  # the first loop takes the lease
        clients = [await lobby.player(f"P{i}") for i in range(6)]
        for c in clients:
            await c.join(SB)
        # the first loop claims a table, then dies before its worker is asked to create it
        ((q, entries),) = (await asyncio.to_thread(queue.waiting, lobby.engine)).items()
        tickets = {w.player_id: t for w, t in entries}
        crashed = sorted((w for w, _ in entries), key=lambda w: w.joined_ms)[:2]
        claimed = queue.claim(lobby.engine, q, Table(tuple(crashed)), tickets, lobby.clock())
        assert claimed is not None and lobby.count(m.matches) == 0
        lobby.hall = lobby_hall(lobby.engine, lobby.router, lobby.clock)  # the restarted loop
        assert await lobby.hall.tick() == [] and not lobby.hall.leading, "the lease is still the dead loop's"
        assert lobby.count(schema.lobby_queue) == 4
        lobby.clock.advance(2.5)  # the lease (2 s) runs out
        made = await lobby.hall.tick()
        assert lobby.hall.leading and len(made) == 2
        with lobby.engine.connect() as conn:
            seats = [r[0] for r in conn.execute(select(schema.lobby_seats.c.player_id))]
            states = {r[0] for r in conn.execute(select(schema.lobby_tables.c.state))}
        assert sorted(seats) == sorted(lobby.players[f"P{i}"].player_id for i in range(6)), "everyone, once"
        assert states == {"ready"} and lobby.count(m.matches) == 3
        assert claimed in lobby.host.actors
        assert await lobby.hall.tick() == [] and lobby.count(m.matches) == 3

    run_lobby(tmp_path, body)


def test_a_seat_message_never_carries_a_key(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        ticket = await ana.join(SB)
        await bia.join(SB)
        await lobby.hall.tick()
        seat = await seat_of(ana, ticket.ticket)
        wire = seat.SerializeToString()
        for me in lobby.players.values():
            assert me.key.encode() not in wire and hashlib.sha256(me.key.encode()).digest() not in wire

    run_lobby(tmp_path, body)


def test_a_registered_name_is_seated_by_create_match_only_with_its_key(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        await lobby.player("Ana")
        with pytest.raises(TablehallError) as other:
            await lobby.client.create_match(SB, ["Ana", "Mallory"])
        assert other.value.status == grpc.StatusCode.PERMISSION_DENIED
        assert lobby.count(m.matches) == 0
        made = await lobby.client.create_match(SB, ["Guest", "Mallory"])  # unregistered names as before
        assert made.match_id

    run_lobby(tmp_path, body)


def test_the_metrics_count_pairings_gaps_waits_and_the_queue(tmp_path: Path) -> None:
    from prometheus_client import REGISTRY

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    async def body(lobby: Lobby) -> None:
        before = value("tablehall_lobby_pairings_total", game=SB, source="queue")
        gaps = value("tablehall_lobby_rating_gap_sum", game=SB)
        waits = value("tablehall_lobby_wait_seconds_count", game=SB)
        ana, bia, cid = await lobby.player("Ana", 0.0), await lobby.player("Bia", 1.5), await lobby.player("Cid", 90)
        for p in (ana, bia, cid):
            await p.join(SB)
        lobby.clock.advance(3)
        assert len(await lobby.hall.tick()) == 1
        assert value("tablehall_lobby_pairings_total", game=SB, source="queue") == before + 1
        assert value("tablehall_lobby_rating_gap_sum", game=SB) == pytest.approx(gaps + 1.5)
        assert value("tablehall_lobby_wait_seconds_count", game=SB) == waits + 2
        assert value("tablehall_lobby_queue_length", game=SB) == 1
        assert value("tablehall_lobby_oldest_wait_seconds", game=SB) == 3.0
        assert value("tablehall_lobby_queue_length", game="501") == 0

    run_lobby(tmp_path, body)


def test_an_idle_lobby_s_beat_reads_once_and_each_step_runs_once_its_rows_exist(tmp_path: Path) -> None:
    """The leader's beat runs its steps only where `queue.activity` finds rows: an idle beat is one read, and
    a queued player, an open challenge and a table in play each turn their step back on."""

    async def body(lobby: Lobby) -> None:
        statements: list[str] = []

        def executed(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
            if not statement.startswith(("BEGIN", "PRAGMA")):
                statements.append(statement)

        event.listen(lobby.engine, "before_cursor_execute", executed)

        async def beat() -> list[str]:
            statements.clear()
            return await lobby.hall.tick()

        def ran(table: str) -> bool:
            return any(f"FROM {table}" in statement for statement in statements[1:])  # after the one read

        assert await beat() == [] and lobby.hall.leading  # takes the lease (its own statements)
        assert await asyncio.to_thread(queue.activity, lobby.engine) == queue.Activity(False, False, False, False)
        assert await beat() == [] and len(statements) == 1, statements
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        await ana.join(SB)
        assert (await asyncio.to_thread(queue.activity, lobby.engine)).queued
        assert await beat() == [] and ran("lobby_queue") and not ran("lobby_challenges"), statements
        await (await lobby.player("Dan")).open_challenge(SB, {})
        assert (await asyncio.to_thread(queue.activity, lobby.engine)).challenges
        assert await beat() == [] and ran("lobby_challenges"), "an open challenge: the expiry step looks"
        await bia.join(SB)
        (match_id,) = await beat()
        found = await asyncio.to_thread(queue.activity, lobby.engine)
        assert (found.queued, found.creating, found.playing) == (False, False, True), "the table is made and played"
        assert match_id in lobby.host.actors
        assert await beat() == [] and ran("players JOIN player_keys"), "a table in play: its bot seats are looked for"

    run_lobby(tmp_path, body)
