"""A delayed tournament's results through a real gateway (gRPC, in-process worker, SQLite, the tournament
jobs), on an injected clock: the public page (WatchTournament), a non-seat player's GetStandings and the
public GetRecord carry a table's result only once its end is as old as the spectator delay (checked on the
serialized bytes), and the round paired from it only then; the page is pushed when the delay passes. The
organizer and the table's seats have it at once; a tournament without a delay stays live. Also the pure
view (`gateway/tournaments/public.py`) and `tablehall record --token` against a real `tablehall serve`."""

from __future__ import annotations

import asyncio
import csv
import json
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import select

from gateway.tournaments import public
from gateway.tournaments.store import Batch, Snapshot, TableRow, Tournament
from protos.tablehall.v1 import matches_pb2, tournaments_pb2, tournaments_pb2_grpc
from tablehall.client import Client, TablehallError, action_message
from tests import test_tournament_cli
from tests.test_tournament_cli import tablehall
from tests.tournament_hall import Hall, run_hall
from workers.sql import models as m

DELAY_S = 60
PLAYERS = ["Ana", "Bia", "Caio"]
"""Round robin of three: one table a round and a bye."""


served = test_tournament_cli.served
"""A `tablehall serve` on a new SQLite file, and that database's URL."""


class Clock:
    def __init__(self) -> None:
        self.now = time.time_ns() // 1_000_000

    def __call__(self) -> int:
        return self.now


async def follow(stream: Any, queue: asyncio.Queue[Any]) -> None:
    async for message in stream:
        queue.put_nowait(message)


async def until(queue: asyncio.Queue[Any], ok: Any) -> Any:
    """The first pushed message that satisfies `ok` (the stream's own messages, nothing polled)."""
    while True:
        message = await asyncio.wait_for(queue.get(), 30)
        if ok(message):
            return message


def round_one(page: tournaments_pb2.TournamentPage) -> list[tournaments_pb2.TournamentTable]:
    return [x for x in page.tournament.tables if x.round == 1]


def ended_round_one(page: tournaments_pb2.TournamentPage) -> bool:
    return any(x.result_json for x in round_one(page))


async def record(hall: Hall, match_id: str, key: str | None) -> matches_pb2.Record:
    metadata = hall.auth(key) if key else None
    reply: matches_pb2.Record = await hall.client.stub.GetRecord(
        matches_pb2.GetRecordRequest(match_id=match_id), metadata=metadata
    )
    return reply


async def a_tournament_table_starts(
    hall: Hall, delay_s: int, round_pause_s: float = 0
) -> tuple[str, dict[str, str], str, dict[str, str]]:
    """A round robin of three whose round 1's table is playing. Returns the tournament id, the tokens by role
    (`resigned`, `won`: the table's seats, the one to resign and the other; `bye`: the third player), the
    table's match id, and the players' names by role."""
    created = await hall.call("CreateTournament", tournaments_pb2.CreateTournamentRequest(
        name="Delayed results", game="spectacular-bid", players=PLAYERS, format="round-robin",
        options=matches_pb2.Options(start_points=20, bank_s=600, delay_s=0), round_pause_s=round_pause_s,
        spectator_delay_s=delay_s,
    ))  # fmt: skip
    roles: dict[str, str] = {}
    names: dict[str, str] = {}
    table: tournaments_pb2.Assignment | None = None
    for p in created.players:
        stream = hall.tournaments.WatchAssignment(tournaments_pb2.GetAssignmentRequest(), metadata=hall.auth(p.token))
        async for assignment in stream:
            if assignment.status in ("table", "bye"):
                stream.cancel()
                break
        if assignment.status == "bye":
            role = "bye"
        elif "resigned" not in roles:
            role, table = "resigned", assignment
        else:
            role = "won"
        roles[role], names[role] = p.token, p.player
    assert table is not None and set(roles) == {"bye", "resigned", "won"}
    return created.tournament_id, roles, table.match_id, names


async def resign(hall: Hall, roles: dict[str, str], match_id: str) -> None:
    """The `resigned` seat resigns the table (the command's arrival stamped by the gateway's clock)."""
    act = matches_pb2.ActRequest(match_id=match_id, action=action_message({"do": "resign"}))
    await hall.client.stub.Act(act, metadata=hall.auth(roles["resigned"]))


async def a_tournament_table_ends(
    hall: Hall, delay_s: int, round_pause_s: float = 0
) -> tuple[str, dict[str, str], str]:
    """A round robin of three; round 1's table ends by a resignation at the clock's reading. Returns the
    tournament id, the tokens by role (`resigned`, `won`: the table's seats; `bye`: the third player) and
    the table's match id."""
    tournament_id, roles, match_id, _ = await a_tournament_table_starts(hall, delay_s, round_pause_s)
    await resign(hall, roles, match_id)
    return tournament_id, roles, match_id


async def end_of(hall: Hall, match_id: str) -> int:
    """When the match ended, as its record and its stored origin say (the organizer has the record at once;
    the match time of a command counts from its arrival at the gateway, on the machine's clock)."""
    end_t = json.loads((await record(hall, match_id, hall.key)).record_json)["end_t"]
    with hall.engine.connect() as conn:
        origin = conn.execute(select(m.matches.c.created_unix_ms).where(m.matches.c.id == match_id)).scalar_one()
    return int(origin) + round(end_t * 1000)


def test_the_public_sees_a_delayed_result_only_once_it_is_as_old_as_the_delay(tmp_path: Path) -> None:
    clock = Clock()

    async def body(hall: Hall) -> None:
        tid, tokens, match_id = await a_tournament_table_ends(hall, DELAY_S)
        watch = tournaments_pb2.WatchTournamentRequest(tournament_id=tid)
        organizer: asyncio.Queue[Any] = asyncio.Queue()
        crowd: asyncio.Queue[Any] = asyncio.Queue()
        streams = [
            asyncio.create_task(follow(hall.tournaments.WatchTournament(watch, metadata=hall.auth()), organizer)),
        ]
        live = await until(organizer, lambda p: ended_round_one(p) and p.tournament.current_round == 2)
        result_json = round_one(live)[0].result_json
        assert json.loads(result_json)["status"] == "finished"
        seated = set(round_one(live)[0].players)
        assert sum(s.wins for s in live.standings.standings if s.player in seated) >= 1, "the organizer: live"

        ended_at = await end_of(hall, match_id)
        clock.now = ended_at + DELAY_S * 1000 - 1
        # the public's stream opened once the result is recorded (and round 2 written): its first page is
        # built from them, and the next one only when what the public may see changes
        streams.append(asyncio.create_task(follow(hall.tournaments.WatchTournament(watch), crowd)))
        page = await until(crowd, lambda p: True)
        shown = page.SerializeToString()
        assert result_json.encode() not in shown and b"winner" not in shown, "the result is held back"
        assert [x.status for x in round_one(page)] == ["in_progress"] and not round_one(page)[0].result_json
        assert page.tournament.current_round == 1, "round 2, paired from the hidden result, is not shown"
        assert [r.status for r in page.tournament.round_states] == ["playing"]
        assert all(s.wins == 0 and s.points == 0 for s in page.standings.standings if s.player in seated)
        assert page.standings.after_round == 0 and page.tournament.status == "running"

        request = tournaments_pb2.GetStandingsRequest(tournament_id=tid)
        bye = await hall.call("GetStandings", request, tokens["bye"])  # a player, not at that table
        assert b"winner" not in bye.SerializeToString()
        assert all(s.wins == 0 for s in bye.standings if s.player in seated)
        seat = await hall.call("GetStandings", request, tokens["won"])  # a seat of it: at once
        by_organizer = await hall.call("GetStandings", request)
        assert seat == by_organizer == live.standings

        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await record(hall, match_id, None)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert TablehallError.of(refused.value).code == "spectator_delay"
        for key in (tokens["resigned"], tokens["won"], hall.key):  # the seats and the organizer: at once
            assert b'"events"' in (await record(hall, match_id, key)).record_json.encode()
        with pytest.raises(grpc.aio.AioRpcError):
            await record(hall, match_id, tokens["bye"])  # a player of another table waits like the public

        assert crowd.empty(), "nothing the public may see changed"
        clock.now = ended_at + DELAY_S * 1000  # no wake-up sent: the stream's own timer finds the clock moved
        after = await until(crowd, lambda p: True)
        assert round_one(after)[0].result_json == result_json
        assert after.standings == live.standings
        assert after.tournament.current_round == 2 and after.tournament.round_states[0].status == "ended"
        assert b'"events"' in (await record(hall, match_id, None)).record_json.encode()
        bye = await hall.call("GetStandings", request, tokens["bye"])
        assert bye == by_organizer
        for task in streams:
            task.cancel()

    run_hall(tmp_path, body, clock=clock)


def test_without_a_delay_results_are_public_at_once(tmp_path: Path) -> None:
    clock = Clock()

    async def body(hall: Hall) -> None:
        tid, tokens, match_id = await a_tournament_table_ends(hall, 0)
        crowd: asyncio.Queue[Any] = asyncio.Queue()
        watch = tournaments_pb2.WatchTournamentRequest(tournament_id=tid)
        task = asyncio.create_task(follow(hall.tournaments.WatchTournament(watch), crowd))
        page = await until(crowd, ended_round_one)  # the clock never moves
        assert b"winner" in page.SerializeToString()
        assert b'"events"' in (await record(hall, match_id, None)).record_json.encode()
        request = tournaments_pb2.GetStandingsRequest(tournament_id=tid)
        assert await hall.call("GetStandings", request, tokens["bye"]) == await hall.call("GetStandings", request)
        task.cancel()

    run_hall(tmp_path, body, clock=clock)


# --- the pure view --------------------------------------------------------------------------------


def snapshot(delay_ms: int, round_two: bool, finished: bool = False) -> Snapshot:
    """Round 1 (Ana–Bia ended at 1,000; Caio–Duda ended at 5,000), and round 2 paired from it when asked."""
    t = Tournament("t", 1, "cup", "spectacular-bid", "swiss", 2, {}, "replay", False, 0, 0,
                   "finished" if finished else "running", 2 if round_two else 1, ("Ana", "Bia", "Caio", "Duda"),
                   delay_ms)  # fmt: skip
    won = {"status": "finished", "winner": 0, "final_points": [20, 0]}
    batches = [Batch("t-r1-a0", 1, t.game, {}, 0, 2, "t", 1, 0, "created", 2)]
    tables = [
        TableRow("m1", "t-r1-a0", 1, 1, 0, ("Ana", "Bia"), "finished", won, "created", 1_000),
        TableRow("m2", "t-r1-a0", 1, 2, 0, ("Caio", "Duda"), "finished", won, "created", 5_000),
    ]
    if round_two:
        batches.append(Batch("t-r2-a0", 1, t.game, {}, 6_000, 2, "t", 2, 0, "created", 2))
        tables.append(TableRow("m3", "t-r2-a0", 2, 1, 0, ("Ana", "Caio"), "playing", None, "created"))
    return Snapshot(t, tuple(batches), tuple(tables), {})


def test_the_pure_view_hides_each_result_until_its_end_plus_the_delay() -> None:
    snap = snapshot(10_000, round_two=True, finished=False)
    early = public.seen(snap, 10_999)
    assert [(x.match_id, x.status) for x in early.tables] == [("m1", "playing"), ("m2", "playing")]
    assert early.tournament.current_round == 1 and len(early.batches) == 1
    middle = public.seen(snap, 11_000)
    assert [(x.match_id, x.status) for x in middle.tables] == [("m1", "finished"), ("m2", "playing")]
    assert middle.tournament.current_round == 1, "round 2 waits for every result it was paired from"
    assert public.seen(snap, 15_000) is snap
    assert public.next_reveal_ms(snap, 10_999) == 11_000 and public.next_reveal_ms(snap, 11_000) == 15_000
    assert public.next_reveal_ms(snap, 15_000) is None
    assert public.seen(snap, 0, public.ORGANIZER) is snap and public.next_reveal_ms(snap, 0, public.ORGANIZER) is None
    caio = public.seen(snap, 11_000, public.Viewer(player="Caio"))
    assert [x.status for x in caio.tables] == ["finished", "finished", "playing"] and caio.tournament.current_round == 2
    live = snapshot(0, round_two=True)
    assert public.seen(live, 0) is live, "no delay: shown as it stands"
    last = public.seen(snapshot(10_000, round_two=False, finished=True), 14_999)
    assert last.tournament.status == "running", "the end is shown with the last result"


def test_the_record_command_has_a_delayed_table_with_a_seat_s_token(served: tuple[str, str], tmp_path: Path) -> None:
    """`tablehall record` against a real `tablehall serve`: a table of a tournament whose spectators are an
    hour late, just ended: refused in one line without a token, the record with the seat's token."""
    address, url = served
    key = tablehall("organizer", "create", "Arbiter", "--database-url", url).stdout.strip().splitlines()[-1]
    (tmp_path / "players.csv").write_text("Ann\nBob\n")
    tokens = tmp_path / "tokens.csv"
    tablehall("tournament", "create", "--name", "Late cup", "--game", "spectacular-bid", "--players",
              str(tmp_path / "players.csv"), "--format", "round-robin", "--points", "20", "--spectator-delay",
              "3600", "--out", str(tokens), "--address", address, "--key", key)  # fmt: skip
    ann = next(r["token"] for r in csv.DictReader(tokens.open()) if r["player"] == "Ann")

    async def resign() -> str:
        async with Client(address) as client:
            stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
            metadata = (("authorization", f"Bearer {ann}"),)
            async for assignment in stub.WatchAssignment(tournaments_pb2.GetAssignmentRequest(), metadata=metadata):
                if assignment.status == "table":
                    break
            act = matches_pb2.ActRequest(match_id=assignment.match_id, action=action_message({"do": "resign"}))
            await client.stub.Act(act, metadata=metadata)
            return str(assignment.match_id)

    match_id = asyncio.run(resign())
    public = tablehall("record", match_id, "--address", address, check=1)
    assert "spectator_delay" in public.stderr and public.stderr.count("\n") == 1 and not public.stdout
    for token in (ann, key):  # the seat, the organizer
        assert json.loads(tablehall("record", match_id, "--address", address, "--token", token).stdout)["events"]
