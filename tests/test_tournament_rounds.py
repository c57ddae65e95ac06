"""How rounds move on, through the real gateway and workers: a voided table replayed (twice at most, then
left out) or counted as a draw as the organizer chose; a manual tournament waiting for NextRound; a round
held until its start time. Tables are voided the way the service voids them (the actor's void step)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from gateway.tournaments import schema
from protos.tablehall.v1 import matches_pb2, tournaments_pb2
from tablehall.client import TablehallError
from tests.tournament_hall import Hall, run_hall
from workers.games.engine import Millis

SB_FAST = matches_pb2.Options(start_points=20, bank_s=60, delay_s=10)


async def create(hall: Hall, players: list[str], **fields: object) -> str:
    fields.setdefault("round_pause_s", 0)
    request = tournaments_pb2.CreateTournamentRequest(
        name="Rounds", game="spectacular-bid", players=players, format="round-robin", options=SB_FAST, **fields
    )
    reply: tournaments_pb2.CreateTournamentResponse = await hall.call("CreateTournament", request)
    return reply.tournament_id


async def until(
    hall: Hall, tournament_id: str, done: Callable[[tournaments_pb2.Tournament], bool]
) -> tournaments_pb2.Tournament:
    """The tournament once `done` holds (it moves on in the background); the test's timeout bounds it."""
    request = tournaments_pb2.GetTournamentRequest(tournament_id=tournament_id, with_tables=True)
    while True:
        tournament: tournaments_pb2.Tournament = await hall.call("GetTournament", request)
        if done(tournament):
            return tournament
        await asyncio.sleep(0.02)


def playing(t: tournaments_pb2.Tournament, number: int, attempt: int = 0) -> list[tournaments_pb2.TournamentTable]:
    """The round's tables of that attempt, once all of them exist on their workers."""
    tables = [x for x in t.tables if x.round == number and x.attempt == attempt]
    scheduling = any(r.number == number and r.status == "scheduling" for r in t.round_states)
    return [] if scheduling else tables


async def void(hall: Hall, match_id: str) -> None:
    await hall.actor(match_id).void("abandoned", Millis(0))


async def standings(hall: Hall, tournament_id: str) -> dict[str, tournaments_pb2.Standing]:
    reply = await hall.call("GetStandings", tournaments_pb2.GetStandingsRequest(tournament_id=tournament_id))
    return {s.player: s for s in reply.standings}


def test_a_voided_table_is_replayed_twice_at_most_then_left_out(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        tid = await create(hall, ["ann", "bob"], voided="replay")
        for attempt in (0, 1, 2):
            t = await until(hall, tid, lambda t, a=attempt: bool(playing(t, 1, a)))  # type: ignore[misc]
            (table,) = playing(t, 1, attempt)
            assert (table.table, list(table.players), table.status) == (1, ["ann", "bob"], "in_progress")
            await void(hall, table.match_id)
        t = await until(hall, tid, lambda t: t.status == "finished")
        assert [(x.attempt, x.status) for x in t.tables] == [(0, "voided"), (1, "voided"), (2, "voided")]
        assert len({x.match_id for x in t.tables}) == 3
        table = await standings(hall, tid)
        assert [(table[p].games, table[p].wins) for p in ("ann", "bob")] == [(0, 0), (0, 0)]  # left out

    run_hall(tmp_path, body)


def test_a_voided_table_counts_as_a_draw_when_the_organizer_says_so(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        tid = await create(hall, ["ann", "bob"], voided="draw")
        (table,) = playing(await until(hall, tid, lambda t: bool(playing(t, 1))), 1)
        await void(hall, table.match_id)
        t = await until(hall, tid, lambda t: t.status == "finished")
        assert len(t.tables) == 1
        table_of = await standings(hall, tid)
        assert [(table_of[p].games, table_of[p].wins, table_of[p].points) for p in ("ann", "bob")] == [(1, 0.5, 0)] * 2

    run_hall(tmp_path, body)


def test_a_manual_tournament_waits_for_the_organizer(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        assert hall.director is not None
        tid = await create(hall, ["ann", "bob", "cid", "dee"], voided="draw", manual=True)
        t = await until(hall, tid, lambda t: len(playing(t, 1)) == 2)
        with pytest.raises(TablehallError) as caught:
            await hall.call("NextRound", tournaments_pb2.NextRoundRequest(tournament_id=tid))
        assert (caught.value.code, str(caught.value)) == ("round_not_over", "round 1 still has 2 table(s) playing")
        for table in playing(t, 1):
            await void(hall, table.match_id)
        await until(hall, tid, lambda t: t.round_states[0].status == "ended")
        await hall.director.advance_all()  # what the hook and the periodic pass do: nothing, when manual
        assert (await until(hall, tid, lambda t: True)).current_round == 1
        moved = await hall.call("NextRound", tournaments_pb2.NextRoundRequest(tournament_id=tid))
        assert moved.current_round == 2
        t = await until(hall, tid, lambda t: len(playing(t, 2)) == 2)
        met = {frozenset(x.players) for x in t.tables}
        assert len(met) == 4  # round robin: round 2 pairs everyone with someone new

    run_hall(tmp_path, body)


def test_round_one_is_held_until_the_tournament_starts(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        start = hall.hosts[0].clock() + 3_600_000
        tid = await create(hall, ["ann", "bob"], start_unix_ms=start)
        t = await until(hall, tid, lambda t: bool(playing(t, 1)))
        assert t.starts_unix_ms == t.round_states[0].starts_unix_ms == start
        assert t.round_states[0].status == "scheduled"
        (table,) = playing(t, 1)
        actor = hall.actor(table.match_id)
        assert actor.scheduled and actor.entry.created_unix_ms == start
        with pytest.raises(TablehallError) as caught:
            await hall.call("NextRound", tournaments_pb2.NextRoundRequest(tournament_id=tid))
        assert caught.value.status is grpc.StatusCode.FAILED_PRECONDITION

    run_hall(tmp_path, body)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"players": ["ann", "bob", "ann"]}, "player 'ann' is listed twice"),
        ({"players": ["ann"]}, "takes 2 to 10000 players, not 1"),
        ({"format": "seating"}, "spectacular-bid tournaments are swiss or round-robin, not 'seating'"),
        ({"rounds": 9}, "a round-robin of 4 players has 1 to 3 rounds, not 9"),
        ({"voided": "ignore"}, "not 'ignore'"),
        ({"options": matches_pb2.Options(bank_s=-1)}, "options"),
    ],
)
def test_a_bad_tournament_is_refused_and_nothing_is_stored(
    tmp_path: Path, fields: dict[str, object], says: str
) -> None:
    async def body(hall: Hall) -> None:
        request = tournaments_pb2.CreateTournamentRequest(
            name="Bad", game="spectacular-bid", players=["ann", "bob", "cid", "dee"], format="round-robin"
        )
        for name, value in fields.items():
            if name == "options":
                request.options.CopyFrom(value)  # type: ignore[arg-type]
            elif name == "players":
                del request.players[:]
                request.players.extend(value)  # type: ignore[arg-type]
            else:
                setattr(request, name, value)
        with pytest.raises(TablehallError) as caught:
            await hall.call("CreateTournament", request)
        assert (caught.value.status, caught.value.code) == (grpc.StatusCode.INVALID_ARGUMENT, "batch_rejected")
        assert says in str(caught.value)
        assert hall.matches() == 0 and hall.batches() == 0 and hall.count(schema.tournaments) == 0

    run_hall(tmp_path, body)
