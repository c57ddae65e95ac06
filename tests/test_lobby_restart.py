"""A real `tablehall serve` killed (SIGKILL) with a player queued, started again on the same database:
the queued player is still there, is paired with the next one by the new process's loop once the dead
loop's lease has run out, and both get their seat on `Seated` — nobody lost, nobody seated twice."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from gateway.lobby import schema
from tablehall.client import Client
from tablehall.lobby_client import LobbyClient, register
from tests.conftest import REPO
from tests.processes import stop_process
from workers.sql.migrate import engine_for


def serve(url: str) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--web-port", "off"]
    command += ["--database-url", url]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    assert "serving on" in line, line
    return server, line.split()[3]


def test_a_killed_serve_loses_no_queued_player(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    first, address = serve(url)
    try:
        async def before() -> str:
            async with Client(address) as client:
                ana = await register(client, "Ana")
                await LobbyClient(client, ana.key).join("spectacular-bid")
                return ana.key

        ana_key = asyncio.run(before())
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    second, address = serve(url)
    try:
        async def after() -> tuple[str, str]:
            async with Client(address) as client:
                bia = await register(client, "Bia")
                ana, bia_lobby = LobbyClient(client, ana_key), LobbyClient(client, bia.key)
                ana_waits = asyncio.create_task(asyncio.wait_for(ana.seated(), 30))  # Ana comes back
                ticket = await bia_lobby.join("spectacular-bid")
                bia_seat = await asyncio.wait_for(bia_lobby.seated(ticket.ticket), 30)
                return (await ana_waits).match_id, bia_seat.match_id

        ana_match, bia_match = asyncio.run(after())
        assert ana_match == bia_match
        with engine_for(url).connect() as conn:
            seats = conn.execute(select(func.count()).select_from(schema.lobby_seats)).scalar()
            waiting = conn.execute(select(func.count()).select_from(schema.lobby_queue)).scalar()
        assert (seats, waiting) == (2, 0)
    finally:
        stop_process(second)


def test_a_killed_serve_s_bots_play_on_after_the_restart(tmp_path: Path) -> None:
    """A 501♠ table against two bots (no decision limit: no clock runs, so the outage voids nothing):
    serve killed with SIGKILL mid-hand; the restarted serve's Lobby takes the bot seats up from the
    database and the player plays the match to its end with them."""
    from tests.test_lobby_bots import play_on, play_out_at

    url = f"sqlite:///{tmp_path / 'bots.db'}"
    first, address = serve(url)
    try:

        async def before() -> tuple[str, str, int]:
            async with Client(address) as client:
                ana = await register(client, "Ana")
                seat = await LobbyClient(client, ana.key).play_bot("501", "random", {"start_score": 60})
                await play_on(client, seat.match_id, ana.key, until="tricks")  # the bots have bid: they play
                return ana.key, seat.match_id, seat.seat

        key, match_id, _seat = asyncio.run(before())
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    second, address = serve(url)
    try:
        final = asyncio.run(asyncio.wait_for(play_out_at(address, match_id, key), 120))
        assert final.get("phase") == "over" and not final.get("void_reason"), final
    finally:
        stop_process(second)
