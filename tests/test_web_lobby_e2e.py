"""End to end in a real browser (Chromium, driven by web/e2e/lobby.mjs): two people register on the page,
export their keys, press "Play" (or one invites the other by a friend link) and end up at the same table,
each at their own seat, over the gateway's HTTP door with the Lobby's pairing loop running; neither page
ever receives the other's key. One person presses "Play a bot" and the bot's seat plays at once."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from gateway.lobby.hall import LobbyHall, LobbySettings
from gateway.lobby.service import LobbyService
from gateway.server import Gateway, public_servicers, start_gateway
from gateway.web import WebDoor, start_web_door
from gateway.workers import Router
from tablehall.client import Client
from tests.web_support import ARTIFACTS, require_browser_tools
from workers.host import MatchHost
from workers.sql import SqlStorage
from workers.sql.migrate import engine_for

BROWSER_TIMEOUT_S = 180.0


@dataclass
class Served:
    url: str
    hall: LobbyHall
    address: str  # the gRPC door


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A gateway with its HTTP door, an in-process worker on SQLite and the pairing loop, in a background
    event loop (the browser reaches it over real sockets)."""
    url = f"sqlite:///{tmp_path / 'web-lobby.db'}"
    saved = os.environ.get("TABLEHALL_DATABASE_URL")
    os.environ["TABLEHALL_DATABASE_URL"] = url
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="tablehall-web-lobby", daemon=True)
    thread.start()

    async def start() -> tuple[SqlStorage, MatchHost, Gateway, WebDoor, LobbyHall, asyncio.Task[None]]:
        storage = await SqlStorage.open(url)
        host = MatchHost(storage, 0, 1)
        await host.start()
        router = Router([host])
        hall = LobbyHall(await asyncio.to_thread(engine_for, url), router, LobbySettings(beat_s=0.1))
        servicers = public_servicers(router, lobby=LobbyService(router, hall))
        gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
        door = await start_web_door(servicers, "127.0.0.1", 0, ())
        return storage, host, gateway, door, hall, asyncio.create_task(hall.run())

    storage, host, gateway, door, hall, pairing = asyncio.run_coroutine_threadsafe(start(), loop).result(30)

    async def stop() -> None:
        pairing.cancel()
        await host.stop()
        await door.stop(grace=1.0)
        await gateway.stop(grace=0.5)
        await storage.close()

    try:
        yield Served(door.url, hall, f"127.0.0.1:{gateway.port}")
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        if saved is None:
            os.environ.pop("TABLEHALL_DATABASE_URL", None)
        else:
            os.environ["TABLEHALL_DATABASE_URL"] = saved


@pytest.mark.parametrize("mode", ["queue", "link"])
def test_two_browsers_press_play_and_sit_at_the_same_table(served: Served, mode: str) -> None:
    """`queue`: both press Play; `link`: Ana presses "Invite a friend", Bia opens the link and takes it."""
    web = require_browser_tools()
    out = ARTIFACTS / f"web-e2e-lobby-{mode}"
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["node", "e2e/lobby.mjs", served.url, str(out), "Ana", "Bia", "spectacular-bid", mode],
        cwd=web, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S,
    )  # fmt: skip
    (out / "node.log").write_text(done.stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    pages = json.loads(line.removeprefix("RESULT "))["pages"]
    assert [p["name"] for p in pages] == ["Ana", "Bia"]
    assert len({p["match"] for p in pages}) == 1 and len(pages[0]["match"]) == 16, "the same table"
    assert sorted(p["me"] for p in pages) == ["0", "1"], "each at their own seat"
    for page in pages:
        assert page["exported"].startswith("thp_") and page["exported"] == page["stored"]["key"]
        assert page["file"] == f"tablehall-{page['name']}.key"
    received = json.loads((out / "received.json").read_text())
    keys = {p["name"]: p["exported"].encode() for p in pages}
    for body in received:
        other = keys["Bia" if body["page"] == "Ana" else "Ana"]
        assert other not in base64.b64decode(body["body"]), "a page never receives another player's key"


def test_a_browser_plays_a_greedy_bot_and_the_bot_acts(served: Served) -> None:
    """Ana registers, picks `greedy` under "Bot level" and presses "Play a bot" with the keyboard: she lands
    at once at a table with "Bot (greedy)"; the bot's seat presses Continue by itself (seen over gRPC from
    Ana's own seat before she does anything), and once she continues the page shows the match past the
    ready step, which needs both seats."""
    web = require_browser_tools()
    out = ARTIFACTS / "web-e2e-lobby-bot"
    out.mkdir(parents=True, exist_ok=True)
    with (out / "node.log").open("w") as log:
        script = subprocess.Popen(
            ["node", "e2e/bot.mjs", served.url, str(out), "Ana", "spectacular-bid", "greedy"],
            cwd=web, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
        try:
            assert script.stdin is not None and script.stdout is not None
            seated = _reported(script.stdout, "SEATED ", out)
            assert seated["offered"] == ["random", "greedy", "search"] and seated["preset"] == "search"
            assert seated["focused"] == "Play a bot", "Tab from the level reaches the button"
            names = seated["header"].split(" — ")[0].split(" · ")  # the header: the players, then who you play
            assert sorted(names) == ["Ana", "Bot (greedy)"] and names[int(seated["me"])] == "Ana", seated["header"]
            assert len(seated["match"]) == 16 and seated["key"].startswith("thp_")
            bot = 1 - int(seated["me"])
            asyncio.run(_bot_continues(served.address, seated["match"], seated["key"], bot))
            script.stdin.write("continue\n")
            script.stdin.flush()
            result = _reported(script.stdout, "RESULT ", out)
            assert script.wait(BROWSER_TIMEOUT_S) == 0, (out / "node.log").read_text()[-2000:]
        finally:
            if script.poll() is None:
                script.kill()
                script.wait()
    assert result["match"] == seated["match"] and result["phase"] not in ("ready", ""), result


def _reported(stdout: IO[str], prefix: str, out: Path) -> dict[str, Any]:
    """The script's next line with `prefix`, as JSON (it ends with its own step deadlines if stuck)."""
    for line in stdout:
        if line.startswith(prefix):
            reported: dict[str, Any] = json.loads(line.removeprefix(prefix))
            return reported
    raise AssertionError(f"the script ended before {prefix.strip()}: {(out / 'node.log').read_text()[-2000:]}")


async def _bot_continues(address: str, match_id: str, key: str, bot: int) -> None:
    """Follow Ana's seat until its view says the bot's seat has pressed Continue (Ana has not yet)."""
    async with Client(address) as client:
        async with asyncio.timeout(BROWSER_TIMEOUT_S):  # a deadline against hanging, not a measurement
            async for _seq, view in client.seat(match_id, key).watch():
                assert view["phase"] == "ready", f"the ready step ended without the bot: {view['phase']}"
                if bot in view["ready"]:
                    assert view["seat"] not in view["ready"], "only the bot has continued"
                    return
    raise AssertionError("the watch ended before the bot continued")
