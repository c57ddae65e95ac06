"""Whole tournaments played by bots through the real gateway: each entrant fetches its assignment with its
player token and plays the table with its seat token; rounds move on by themselves when their last table
ends (the workers' on_ended hook). Standings are checked against an independent computation from the
exported records, each replayed by the rules engine."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import grpc
import pytest

from protos.tablehall.v1 import matches_pb2, tournaments_pb2
from tablehall.client import TablehallError
from tablehall.entrant import assignment, play_tournament
from tests.storage_backends import postgres_database
from tests.tournament_hall import Hall, run_hall
from workers.games.records import replay

SB_FAST = matches_pb2.Options(start_points=20, bank_s=60, delay_s=10)
F501_FAST = matches_pb2.Options(start_score=60)


async def create(hall: Hall, **fields: Any) -> tournaments_pb2.CreateTournamentResponse:
    fields.setdefault("round_pause_s", 0)
    reply: tournaments_pb2.CreateTournamentResponse = await hall.call(
        "CreateTournament", tournaments_pb2.CreateTournamentRequest(name="Test cup", **fields)
    )
    return reply


async def play_all(hall: Hall, created: tournaments_pb2.CreateTournamentResponse) -> list[tournaments_pb2.Assignment]:
    entrants = [
        play_tournament(hall.client, created.tournament_id, p.token, seed=p.seed) for p in created.players
    ]
    return list(await asyncio.gather(*entrants))


async def exported(hall: Hall, tournament_id: str) -> list[tournaments_pb2.TableRecord]:
    request = tournaments_pb2.ExportRecordsRequest(tournament_id=tournament_id)
    return [r async for r in hall.tournaments.ExportRecords(request, metadata=hall.auth())]


def sb_expected(records: list[tournaments_pb2.TableRecord], players: list[str]) -> dict[str, tuple[Any, ...]]:
    """Wins, net points and Buchholz per player, straight from the records replayed by the engine."""
    wins: dict[str, Fraction] = {p: Fraction(0) for p in players}
    points = dict.fromkeys(players, 0)
    met: dict[str, list[str]] = defaultdict(list)
    for r in records:
        record = json.loads(r.record_json)
        outcome = replay(record).outcome
        assert outcome["status"] == "finished", "bots' tables end with a result"
        names = record["players"]
        wins[names[outcome["winner"]]] += 1
        for seat, name in enumerate(names):
            points[name] += outcome["points"][seat] - 20
            met[name].append(names[1 - seat])
    return {p: (wins[p], points[p], sum((wins[o] for o in met[p]), Fraction(0))) for p in players}


def test_an_8_player_swiss_played_by_bots_has_correct_standings(tmp_path: Path) -> None:
    players = [f"player{i}" for i in range(1, 9)]

    async def body(hall: Hall) -> None:
        created = await create(hall, game="spectacular-bid", players=players, format="swiss", rounds=3,
                               options=SB_FAST)  # fmt: skip
        assert [(p.seed, p.player) for p in created.players] == list(enumerate(players, 1))
        finals = await play_all(hall, created)
        tournament = await hall.call(
            "GetTournament", tournaments_pb2.GetTournamentRequest(tournament_id=created.tournament_id, with_tables=True)
        )
        assert (tournament.status, tournament.current_round) == ("finished", 3)
        rounds = [(r.status, r.tables, r.ended, list(r.byes)) for r in tournament.round_states]
        assert rounds == [("ended", 4, 4, [])] * 3

        records = await exported(hall, created.tournament_id)
        assert len(records) == 12 and {r.status for r in records} == {"finished"}
        expected = sb_expected(list(records), players)

        # Swiss: every round seats everyone once, no pairing repeats, and (8 players, 3 rounds) every table
        # is inside a score group
        seen: set[frozenset[str]] = set()
        wins_before: dict[str, int] = dict.fromkeys(players, 0)
        for number in (1, 2, 3):
            tables = [t for t in tournament.tables if t.round == number]
            assert sorted(p for t in tables for p in t.players) == sorted(players)
            for t in tables:
                pair = frozenset(t.players)
                assert pair not in seen, f"round {number} repeats {sorted(pair)}"
                seen.add(pair)
                assert wins_before[t.players[0]] == wins_before[t.players[1]], f"round {number}: {list(t.players)}"
            for t in tables:
                winner = json.loads(t.result_json)["winner"]
                wins_before[t.players[winner]] += 1

        standings = await hall.call(
            "GetStandings", tournaments_pb2.GetStandingsRequest(tournament_id=created.tournament_id)
        )
        assert standings.after_round == 3 and "Buchholz" in standings.tie_breaks
        got = {s.player: (Fraction(s.wins), s.points, Fraction(s.buchholz)) for s in standings.standings}
        assert got == expected
        assert sum(w for w, _, _ in got.values()) == 12
        ordered = [s.player for s in standings.standings]
        keys = [(-expected[p][0], -expected[p][1], -expected[p][2]) for p in ordered]
        assert keys == sorted(keys), "ranked by wins, then points, then Buchholz"
        assert [s.rank for s in standings.standings] == list(range(1, 9))
        ranks = {s.player: s.rank for s in standings.standings}
        assert {f.player: f.rank for f in finals} == ranks  # each entrant's final assignment says its rank

    run_hall(tmp_path, body, timeout=240)


def test_a_501_seating_tournament_of_10_players_on_postgresql(tmp_path: Path) -> None:
    """Tables of 3, 3 and 4 each round, balanced by standings; placement points as documented."""
    players = [f"p{i:02}" for i in range(10)]

    async def body(hall: Hall) -> None:
        created = await create(hall, game="501", players=players, format="seating", rounds=2, options=F501_FAST)
        await play_all(hall, created)
        request = tournaments_pb2.GetTournamentRequest(tournament_id=created.tournament_id, with_tables=True)
        tournament = await hall.call("GetTournament", request)
        assert tournament.status == "finished"
        for number in (1, 2):
            sizes = sorted(len(t.players) for t in tournament.tables if t.round == number)
            assert sizes == [3, 3, 4]
        ask = tournaments_pb2.GetStandingsRequest(tournament_id=created.tournament_id)
        standings = await hall.call("GetStandings", ask)
        total = sum(Fraction(s.placement_points) for s in standings.standings)
        assert total == Fraction(3, 2) * 10 * 2  # every table averages 1½ a player, whatever its size
        assert all(s.games == 2 for s in standings.standings)
        keys = [(-s.placement_points, s.score) for s in standings.standings]
        assert keys == sorted(keys)

    with postgres_database() as url:
        run_hall(tmp_path, body, timeout=240, url=url)


def test_players_and_organizers_see_only_what_is_theirs(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        created = await create(hall, game="spectacular-bid", players=["ann", "bob", "cid"], format="round-robin",
                               options=SB_FAST, manual=True)  # fmt: skip
        stub = hall.tournaments
        ann, bob, cid = (p.token for p in created.players)
        found = [await assignment(stub, created.tournament_id, t) for t in (ann, bob, cid)]
        while any(f.status == "waiting" for f in found):  # round 1's tables are created in the background
            await asyncio.sleep(0.02)
            found = [await assignment(stub, created.tournament_id, t) for t in (ann, bob, cid)]
        statuses = sorted(f.status for f in found)
        assert statuses == ["bye", "table", "table"]  # three players: one bye per round
        table = [f for f in found if f.status == "table"]
        assert table[0].match_id == table[1].match_id and {table[0].seat, table[1].seat} == {0, 1}
        assert table[0].seat_token != table[1].seat_token
        seat = hall.client.seat(table[0].match_id, table[0].seat_token)
        _, view = await seat.view()
        assert view["seat"] == table[0].seat  # the seat token (the player's own token) is that seat's

        with pytest.raises(TablehallError) as caught:
            await assignment(stub, created.tournament_id, "not-a-token")
        assert caught.value.status is grpc.StatusCode.UNAUTHENTICATED
        standings = await hall.call(
            "GetStandings", tournaments_pb2.GetStandingsRequest(tournament_id=created.tournament_id), key=ann
        )  # a player may read the standings
        assert len(standings.standings) == 3
        with pytest.raises(TablehallError) as caught:
            await hall.call("GetTournament", tournaments_pb2.GetTournamentRequest(tournament_id=created.tournament_id),
                            key=ann)  # fmt: skip
        assert caught.value.status is grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(TablehallError) as caught:  # manual: the organizer moves on, once the round ended
            await hall.call("NextRound", tournaments_pb2.NextRoundRequest(tournament_id=created.tournament_id))
        assert (caught.value.status, caught.value.code) == (grpc.StatusCode.FAILED_PRECONDITION, "round_not_over")

    run_hall(tmp_path, body)
