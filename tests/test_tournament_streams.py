"""The pushed tournament streams through a real gateway: a player's next table (WatchAssignment) arrives as
soon as the organizer's next round is created, and the public page (WatchTournament, no key) follows rounds,
pairings, byes, live tables and standings to the end, never carrying a token; a held round has its countdown."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from protos.tablehall.v1 import matches_pb2, tournaments_pb2
from tablehall.bots import run_bot
from tests.tournament_hall import Hall, run_hall

SB_FAST = matches_pb2.Options(start_points=20, bank_s=60, delay_s=10)
PLAYERS = ["Ana", "Bia", "Caio", "Duda", "Enzo"]


async def next_table(queue: asyncio.Queue[tournaments_pb2.Assignment], played: set[str]) -> tournaments_pb2.Assignment:
    """The next pushed assignment that is a table not played yet (or a bye, or the end)."""
    while True:
        got = await queue.get()
        if got.status in ("bye", "finished") or (got.status == "table" and got.match_id not in played):
            return got


def test_assignments_and_the_page_are_pushed_round_by_round(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        created = await hall.call("CreateTournament", tournaments_pb2.CreateTournamentRequest(
            name="Pushed cup", game="spectacular-bid", players=PLAYERS, format="round-robin", rounds=2,
            options=SB_FAST, manual=True, round_pause_s=0,
        ))  # fmt: skip
        tid = created.tournament_id
        pages: list[tournaments_pb2.TournamentPage] = []
        pushed: asyncio.Queue[Any] = asyncio.Queue()
        page_task = asyncio.create_task(follow_queue(hall.tournaments.WatchTournament(
            tournaments_pb2.WatchTournamentRequest(tournament_id=tid)), pushed))  # fmt: skip  # no key: public
        queues: dict[str, asyncio.Queue[tournaments_pb2.Assignment]] = {}
        streams = []
        for p in created.players:
            queue: asyncio.Queue[tournaments_pb2.Assignment] = asyncio.Queue()
            queues[p.player] = queue
            ask = tournaments_pb2.GetAssignmentRequest()
            stream = hall.tournaments.WatchAssignment(ask, metadata=hall.auth(p.token))
            streams.append(asyncio.create_task(follow_queue(stream, queue)))
        tokens = {p.player: p.token for p in created.players}
        played: set[str] = set()
        for number in (1, 2):
            got = {name: await next_table(q, played) for name, q in queues.items()}
            assert {a.round for a in got.values()} == {number}
            byes = [n for n, a in got.items() if a.status == "bye"]
            assert len(byes) == 1, "five players: one bye a round"
            tables = {a.match_id for a in got.values() if a.status == "table"}
            assert len(tables) == 2
            for name, a in got.items():
                if a.status == "table":
                    assert a.seat_token == tokens[name] and a.players[a.seat] == name
            await asyncio.gather(*(
                run_bot("", a.match_id, a.seat_token, greedy=True, seed=1, client=hall.client)
                for a in got.values() if a.status == "table"
            ))  # fmt: skip
            played |= tables
            if number == 1:
                await until_page(pushed, pages, lambda p: [r.status for r in p.tournament.round_states] == ["ended"])
                await hall.call("NextRound", tournaments_pb2.NextRoundRequest(tournament_id=tid))
        finals = [await next_table(q, played) for q in queues.values()]
        assert {a.status for a in finals} == {"finished"}
        await asyncio.wait_for(page_task, 30)  # the page stream ends with the tournament
        while not pushed.empty():
            pages.append(pushed.get_nowait())
        await asyncio.gather(*streams)

        last = pages[-1]
        assert last.tournament.status == "finished" and len(last.tournament.tables) == 4
        standings = await hall.call("GetStandings", tournaments_pb2.GetStandingsRequest(tournament_id=tid))
        assert last.standings == standings
        assert {a.player: a.rank for a in finals} == {s.player: s.rank for s in standings.standings}
        assert [len(r.byes) for r in last.tournament.round_states] == [1, 1]
        live = [t for p in pages for t in p.tournament.tables if t.status == "in_progress"]
        assert {t.match_id for t in live} == played, "every table was shown live while it was played"
        shown = [without_clock(p) for p in pages]
        assert all(a != b for a, b in itertools.pairwise(shown)), "a page is pushed only when something changed"
        for page in pages:  # the public page never carries a token
            raw = page.SerializeToString()
            assert not any(token.encode() in raw for token in tokens.values())

    run_hall(tmp_path, body, timeout=180)


def without_clock(page: tournaments_pb2.TournamentPage) -> bytes:
    copy = tournaments_pb2.TournamentPage()
    copy.CopyFrom(page)
    copy.now_unix_ms = 0
    return copy.SerializeToString(deterministic=True)


async def follow_queue(stream: Any, queue: asyncio.Queue[Any]) -> None:
    async for message in stream:
        queue.put_nowait(message)


async def until_page(pushed: asyncio.Queue[Any], pages: list[Any], ok: Any) -> None:
    """Read pushed pages (kept in `pages`) until one satisfies `ok`: the stream's own messages, nothing polled."""
    while True:
        page = await pushed.get()
        pages.append(page)
        if ok(page):
            return


def test_a_held_round_has_its_countdown_and_an_unknown_tournament_is_not_found(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        start = time.time_ns() // 1_000_000 + 3_600_000
        created = await hall.call("CreateTournament", tournaments_pb2.CreateTournamentRequest(
            name="Later cup", game="spectacular-bid", players=PLAYERS[:4], format="round-robin",
            options=SB_FAST, start_unix_ms=start,
        ))  # fmt: skip
        ask = tournaments_pb2.WatchTournamentRequest(tournament_id=created.tournament_id)
        stream = hall.tournaments.WatchTournament(ask)
        async for page in stream:
            if page.tournament.round_states and page.tournament.round_states[0].status == "scheduled":
                assert page.next_round_unix_ms == start > page.now_unix_ms
                assert [len(t.players) for t in page.tournament.tables] == [2, 2]
                break
        stream.cancel()
        missing = hall.tournaments.WatchTournament(tournaments_pb2.WatchTournamentRequest(tournament_id="0" * 16))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await missing.read()
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND

    run_hall(tmp_path, body)
