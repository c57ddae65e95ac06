"""Tournament pages in a real browser (Debian's Chromium driven by web/e2e/tournament.mjs) against a real
service (gateway, HTTP door, in-process worker on SQLite, the tournament jobs): the organizer creates a
tournament on the page from a pasted player list, bots play each table as it is pushed to them
(WatchAssignment), a spectator follows the live table from the public page with a 5 s delay, the
organizer starts round 2 from the page and exports the records, and each player's page offers their next
table. Real time is unavoidable here: the age of every state the spectator's page showed is checked
against the gateway's own arrival time of that state (the clock of the browser and of the service is the
machine's), with no threshold on speed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.server import Gateway, public_servicers, start_gateway
from gateway.spectators import Spectators
from gateway.tournaments.delays import TournamentDelays
from gateway.tournaments.jobs import EndedTables, tournament_jobs
from gateway.tournaments.organizers import create_organizer
from gateway.web import WebDoor, start_web_door
from gateway.workers import Router
from protos.tablehall.v1 import tournaments_pb2, tournaments_pb2_grpc
from tablehall.bots import run_bot
from tablehall.client import Client
from tablehall.entrant import pushed
from tests.web_support import ARTIFACTS, require_browser_tools
from workers.actor import unix_ms
from workers.host import MatchHost
from workers.sql import SqlStorage
from workers.sql.migrate import engine_for

BROWSER_TIMEOUT_S = 300.0
DELAY_MS = 5_000
THINK_S = 0.3
"""The bots' pause before each move: the table lasts long enough for the spectator to open it live."""


@dataclass
class Hall:
    loop: asyncio.AbstractEventLoop
    gateway: Gateway
    door: WebDoor
    spectators: Spectators
    key: str

    def submit(self, coro: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[Hall]:
    url = f"sqlite:///{tmp_path / 'web.db'}"
    saved = os.environ.get("TABLEHALL_DATABASE_URL")
    os.environ["TABLEHALL_DATABASE_URL"] = url
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="tablehall-web-tournament", daemon=True)
    thread.start()
    stack = contextlib.AsyncExitStack()

    async def start() -> Hall:
        storage = await SqlStorage.open(url)
        ended = EndedTables()
        host = MatchHost(storage, 0, 1, on_ended=ended.notify)
        await host.start()
        stack.push_async_callback(storage.close)
        stack.callback(host.close)
        router = Router([host])
        key = await asyncio.to_thread(create_organizer, await asyncio.to_thread(engine_for, url), "Arbiter")
        spectators = Spectators(unix_ms, TournamentDelays())
        stack.callback(spectators.close)
        servicers = public_servicers(router, spectators=spectators)
        gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
        stack.push_async_callback(gateway.stop, 0.5)
        door = await start_web_door(servicers, "127.0.0.1", 0)
        stack.push_async_callback(door.stop, 1.0)
        await stack.enter_async_context(tournament_jobs(url, router, ended))
        return Hall(loop, gateway, door, spectators, key)

    try:
        yield asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    finally:
        asyncio.run_coroutine_threadsafe(stack.aclose(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        if saved is None:
            os.environ.pop("TABLEHALL_DATABASE_URL", None)
        else:
            os.environ["TABLEHALL_DATABASE_URL"] = saved


async def entrant(address: str, tournament_id: str, token: str, seat: int) -> list[str]:
    """A bot that plays each table pushed to this player (thinking THINK_S a move); the tables it played."""
    played: list[str] = []
    async with Client(address) as client:
        stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
        async for now in pushed(stub, tournament_id, token):
            if now.status == "finished":
                return played
            if now.status == "table" and now.match_id not in played:
                played.append(now.match_id)
                await run_bot(address, now.match_id, now.seat_token, greedy=True, seed=seat, think_s=THINK_S,
                              client=client)  # fmt: skip
    return played


def test_a_spectator_page_never_shows_a_state_younger_than_the_delay(hall: Hall) -> None:
    web = require_browser_tools()
    out = ARTIFACTS / "web-tournament"
    out.mkdir(parents=True, exist_ok=True)
    address = f"127.0.0.1:{hall.gateway.port}"
    said: dict[str, Any] = {}
    bots: list[Future[list[str]]] = []
    with (out / "node.log").open("w") as errors:
        node = subprocess.Popen(["node", "e2e/tournament.mjs", hall.door.url, str(out), hall.key], cwd=web,
                                stdout=subprocess.PIPE, stderr=errors, text=True)  # fmt: skip
        watchdog = threading.Timer(BROWSER_TIMEOUT_S, node.kill)  # a hung browser fails the test, never the run
        watchdog.start()
        try:
            assert node.stdout is not None
            for line in node.stdout:
                tag, _, value = line.partition(" ")
                said[tag] = json.loads(value)
                if tag == "CREATED":
                    tokens = said["CREATED"]["players"]
                    for seat, token in enumerate(tokens.values()):
                        bots.append(hall.submit(entrant(address, said["CREATED"]["tournament"], token, seat)))
            code = node.wait(30)
        finally:
            watchdog.cancel()
            if node.poll() is None:
                node.kill()
                node.wait(10)
    assert code == 0, (out / "node.log").read_text()[-3000:]

    # the spectator: every state shown was at least DELAY_MS old by the gateway's arrival times, the end too
    match_id = said["SHOWN"]["match"]
    buffer = hall.spectators.tables[match_id]
    arrived = {a.update.seq: (a.at_ms, a.update.over) for a in buffer.arrived}
    shown = said["SHOWN"]["shown"]
    assert shown, "the spectator's page showed the table"
    for state in shown:
        at, _ = arrived[state["seq"]]
        assert state["at"] - at >= DELAY_MS, f"seq {state['seq']} shown {state['at'] - at} ms after it arrived"
    ages = [state["at"] - arrived[state["seq"]][0] for state in shown]
    (out / "ages.json").write_text(json.dumps({"states": len(ages), "min_ms": min(ages), "max_ms": max(ages)}))
    last = max(s["seq"] for s in shown)
    assert arrived[last][1], "the page showed the match's end (held back like every other state)"

    # the organizer's round 2 from the page, the export, the players' pages
    assert said["ROUND"]["round"] == 2 and len(said["ROUND"]["tables"]) == 1
    assert said["EXPORTED"]["records"] >= 1
    tokens = said["CREATED"]["players"]
    players = said["PLAYER"]
    round2 = {name: [s for s in p["seen"] if s["round"] == 2 and s["status"] in ("table", "bye")]
              for name, p in players.items()}  # fmt: skip
    assert sorted(seen[0]["status"] for seen in round2.values() if seen) == ["bye", "table", "table"]
    for name, p in players.items():
        assert "token" not in p["address"], "the token leaves the address bar"
        assert p["seen"][-1]["status"] == "finished"
        for shown in round2[name]:
            if shown["status"] == "table":
                assert shown["go"] == said["ROUND"]["tables"][0] and f"token={tokens[name]}" in shown["href"]
    for bot in bots:
        assert len(bot.result(120)) >= 1
    tournament_id = said["CREATED"]["tournament"]

    async def final() -> tournaments_pb2.Tournament:
        async with Client(address) as client:
            stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
            request = tournaments_pb2.GetTournamentRequest(tournament_id=tournament_id)
            reply: tournaments_pb2.Tournament = await stub.GetTournament(
                request, metadata=(("authorization", f"Bearer {hall.key}"),)
            )
            return reply

    finished = hall.submit(final()).result(30)
    assert finished.status == "finished" and finished.current_round == 2
