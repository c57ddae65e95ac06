"""Nothing delays a clock (issue 16, item 4): a 1,000-player Swiss is created in a real `tablehall serve` while
200 Spectacular Bid tables have running clocks and bots play matches. CreateTournament comes back while the
round is still being paired (its state says `pairing`: the pairing runs in a process pool, not in the
clocks' process), and no timer fires late enough to void a match. A hang fails through the bound."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from gateway.tournaments.organizers import create_organizer
from protos.tablehall.v1 import matches_pb2, tournaments_pb2, tournaments_pb2_grpc
from tablehall.bench_service import Tally, one_match, players_of
from tablehall.client import Client
from tablehall.processes import children
from tests.metrics_support import Served, serve_with_metrics, value
from tests.tournament_hall import Hall, run_hall
from workers import offload
from workers.sql.migrate import engine_for

BOUND_S = 300.0
PAUSES_S = (5, 6, 7, 8)
"""The clock tables' Continue pauses: their clocks start 5–8 s after creation and flag 10 s later."""
TABLES_PER_PAUSE = 50
PLAYERS = 1000
BROKEN = 200
"""Players of the tournament whose pairing process is killed (it is paired again, so not too many)."""


async def clock_tables(stub: tournaments_pb2_grpc.TournamentsStub, auth: Any) -> list[str]:
    ids: list[str] = []
    for pause in PAUSES_S:
        seating = [tournaments_pb2.TableRequest(players=[f"a{pause}-{n}", f"b{pause}-{n}"])
                   for n in range(TABLES_PER_PAUSE)]  # fmt: skip
        options = matches_pb2.Options(ready_timeout_s=pause, bank_s=10, delay_s=0)
        request = tournaments_pb2.CreateTablesRequest(game="spectacular-bid", tables=seating, options=options)
        made = await stub.CreateTables(request, metadata=auth)
        ids += [t.match_id for t in made.tables]
    return ids


async def until_ended(client: Client, match_ids: list[str]) -> list[dict[str, Any]]:
    while True:
        views = [(await client.spectator(m).view())[1] for m in match_ids]
        if all(v["status"] != "in_progress" for v in views):
            return views
        await asyncio.sleep(0.5)


def test_a_1000_player_swiss_is_paired_while_clocks_run_and_none_is_voided_late(tmp_path: Path) -> None:
    with serve_with_metrics(tmp_path) as served:
        key = create_organizer(engine_for(f"sqlite:///{tmp_path / 'tablehall.db'}"), "Arbiter")
        first, tournament, views, tally = asyncio.run(asyncio.wait_for(_body(served, key), BOUND_S))
        found = served.samples()
    assert first.status == "pairing" and first.current_round == 0 and not first.round_states, first
    assert first.detail == "round 1 is being paired"
    assert tournament.status == "running" and tournament.round_states[0].tables == PLAYERS // 2
    assert len(views) == len(PAUSES_S) * TABLES_PER_PAUSE
    assert [v for v in views if v["status"] != "finished"] == [], "a clock table was voided"
    assert tally.finished == 4 and tally.command_s
    assert not value(found, "tablehall_service_faults_total", kind="timer_late")
    assert not value(found, "tablehall_matches_voided_total", reason="timer_late")


async def _body(served: Served, key: str) -> tuple[Any, Any, list[dict[str, Any]], Tally]:
    auth = (("authorization", f"Bearer {key}"),)
    async with Client(served.address) as client:
        stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
        tables = await clock_tables(stub, auth)
        tally = Tally()
        rng = random.Random(1)
        seats = [players_of("spectacular-bid", n, "bots", same=False) for n in range(4)]
        bots = asyncio.gather(*(one_match(client, "spectacular-bid", who, rng, tally) for who in seats))
        request = tournaments_pb2.CreateTournamentRequest(
            name="Big Swiss", game="spectacular-bid", players=[f"p{n:04d}" for n in range(PLAYERS)], format="swiss",
            rounds=1, start_unix_ms=int(time.time() * 1000) + 3_600_000,
        )  # fmt: skip
        created = await stub.CreateTournament(request, metadata=auth)
        ask = tournaments_pb2.GetTournamentRequest(tournament_id=created.tournament_id)
        first = state = await stub.GetTournament(ask, metadata=auth)
        while state.status == "pairing" or not state.round_states or state.round_states[0].status == "scheduling":
            await asyncio.sleep(0.2)
            state = await stub.GetTournament(ask, metadata=auth)
        await bots
        return first, state, await until_ended(client, tables), tally


def pool_children() -> list[int]:
    """This process's children running a `spawn` start (the pairing pool's process), from /proc."""
    found = []
    for child in children(os.getpid()):
        with contextlib.suppress(OSError):  # a child may end while it is read
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
    return found


def test_a_pairing_process_that_dies_shows_on_the_tournament_and_the_round_is_paired_again(tmp_path: Path) -> None:
    """The pool's process killed mid-pairing: the tournament says `pairing_failed` and why; the periodic pass
    pairs the round again in a new pool process."""

    async def body(hall: Hall) -> tuple[Any, Any]:
        request = tournaments_pb2.CreateTournamentRequest(
            name="Broken", game="spectacular-bid", players=[f"p{n:04d}" for n in range(BROKEN)], format="swiss",
            rounds=1, start_unix_ms=int(time.time() * 1000) + 3_600_000,
        )  # fmt: skip
        offload.shutdown()  # a pairing pool an earlier test in this process left would serve this round
        before = set(pool_children())  # nor are the pools of earlier tests (ratings, bots) still ending it
        created = await hall.call("CreateTournament", request)
        ask = tournaments_pb2.GetTournamentRequest(tournament_id=created.tournament_id)
        while not set(pool_children()) - before:
            await asyncio.sleep(0.05)
        for pid in set(pool_children()) - before:
            os.kill(pid, signal.SIGKILL)
        state = await hall.call("GetTournament", ask)
        while state.status == "pairing":
            await asyncio.sleep(0.05)
            state = await hall.call("GetTournament", ask)
        failed = state
        while state.status != "running" or not state.round_states:
            await asyncio.sleep(0.2)
            state = await hall.call("GetTournament", ask)
        return failed, state

    failed, paired = run_hall(tmp_path, body, timeout=BOUND_S)
    assert failed.status == "pairing_failed" and failed.current_round == 0, failed
    assert failed.detail == "round 1: the pairing process stopped; the next pass pairs it again"
    assert paired.round_states[0].tables == BROKEN // 2
