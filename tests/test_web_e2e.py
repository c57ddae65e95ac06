"""End to end in a real browser: Debian's Chromium, driven by playwright-core (web/e2e/play-sb.mjs), plays a
whole Spectacular Bid match through the page against a bot, over the gateway's HTTP door. The page's result
is the service's, the record replays to it, a screenshot is kept in test-artifacts/, and every byte the page
received carries that seat's view only."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protos.tablehall.v1 import matches_pb2
from tablehall.bots import run_bot
from tablehall.client import Client
from tests.over_grpc import quoted, sb_hidden, sb_own
from tests.web_support import ARTIFACTS, LiveService, Raw, frames, live_service, require_browser_tools
from workers.games.records import replay

BROWSER_TIMEOUT_S = 300.0


@pytest.fixture
def service() -> Iterator[LiveService]:
    yield from live_service()


def browser_match(service: LiveService, protocol: str, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs the page's player and, once it hands over the second seat's token, a bot on it."""
    web = require_browser_tools()
    out.mkdir(parents=True, exist_ok=True)
    command = ["node", "e2e/play-sb.mjs", service.url, str(out), "30", protocol]
    with (out / "node.log").open("w") as errors:
        node = subprocess.Popen(command, cwd=web, stdout=subprocess.PIPE, stderr=errors, text=True)
        watchdog = threading.Timer(BROWSER_TIMEOUT_S, node.kill)  # a hung browser fails the test, never the run
        watchdog.start()
        bot = None
        result: dict[str, Any] | None = None
        try:
            assert node.stdout is not None
            for line in node.stdout:
                if line.startswith("INVITE "):
                    invite = json.loads(line.removeprefix("INVITE "))
                    seat = run_bot(service.address, invite["match"], invite["token"], greedy=True, seed=7)
                    bot = service.submit(seat)
                elif line.startswith("RESULT "):
                    result = json.loads(line.removeprefix("RESULT "))
            code = node.wait(30)
        finally:
            watchdog.cancel()
            if node.poll() is None:
                node.kill()
                node.wait(10)
    log = (out / "node.log").read_text()
    assert code == 0 and result is not None, f"the browser did not finish the match (exit {code}):\n{log}"
    assert bot is not None, "the page never showed the second seat's invitation"
    final: dict[str, Any] = bot.result(30)
    return result, final


def received_by_the_page(out: Path, match_id: str) -> list[tuple[str, Raw]]:
    """Every view-carrying message the browser got, by method: each Watch frame, each Act and GetView reply."""
    kinds = {"Watch": matches_pb2.Update, "GetView": matches_pb2.Update, "Act": matches_pb2.ActResponse}
    messages = []
    for entry in json.loads((out / "received.json").read_text()):
        assert "unreadable" not in entry, entry
        method = entry["path"].rsplit("/", 1)[1]
        if method not in kinds:
            continue
        for payload in payloads(entry["type"], base64.b64decode(entry["body"])):
            message = kinds[method].FromString(payload)
            assert getattr(message, "match_id", match_id) == match_id
            messages.append((method, Raw(message.seq, payload)))
    return messages


def payloads(content_type: str, body: bytes) -> list[bytes]:
    """The messages of one response body: enveloped frames for streams and gRPC-Web (minus the end frame
    with its status), the body itself for a Connect unary reply."""
    if not (content_type.startswith("application/grpc-web") or content_type.startswith("application/connect+")):
        return [body]
    out = []
    for flags, payload in frames(body):
        if flags & 0x80 or flags & 0x02:
            continue
        out.append(gzip.decompress(payload) if flags & 0x01 else payload)
    return out


def assert_seat_view_only(messages: list[Raw], snapshots: list[Any], seat: int) -> None:
    """The byte-level check of tests/over_grpc.py on what the page received: no hidden tile, quoted in
    either orientation, anywhere in a message; and its own hand is there (the check sees what it seeks)."""
    for message in messages:
        state = snapshots[message.seq - 1].state
        leaked = [name for name in quoted(sb_hidden(state, seat)) if name in message.raw]
        assert not leaked, f"the page received hidden {leaked} at seq {message.seq}"
        assert all(name in message.raw for name in quoted(sb_own(state, seat))), f"seq {message.seq}: no own hand"


@pytest.mark.parametrize("protocol", ["connect", "grpc-web"])
def test_a_browser_plays_a_whole_spectacular_bid_match_against_a_bot(service: LiveService, protocol: str) -> None:
    out = ARTIFACTS / f"web-e2e-{protocol}"
    result, final = browser_match(service, protocol, out)
    match_id = result["match"]

    # the page shows the service's result: the bot's own final view agrees, and so does the record
    assert final["status"] == "finished" and final["reason"] == "points"
    assert result["points"] == final["points"] and sum(final["points"]) == 60
    winner = ["Ana", "Bot"][final["winner"]]
    assert result["result"].startswith(f"{winner} wins on points")

    async def record() -> dict[str, Any]:
        async with Client(service.address) as client:
            return await client.record(match_id)

    played = service.run(record())
    outcome = replay(played).to_json()
    assert (outcome["winner"], outcome["points"]) == (final["winner"], final["points"])
    assert sum(1 for e in played["events"] if e["seat"] == 0) == result["moves"] - len(result["refusals"]) > 0
    for picture in ("web-sb-match.png", "web-sb-midgame.png"):
        assert (out / picture).read_bytes().startswith(b"\x89PNG"), f"{picture} was not saved"

    # everything the page received is seat 0's view: every update on its Watch stream, in order, once
    snapshots = service.host.actors[match_id].snapshots
    messages = received_by_the_page(out, match_id)
    watched = [m.seq for method, m in messages if method == "Watch"]
    assert watched == list(range(1, len(snapshots) + 1)), "the page's stream brought every change exactly once"
    assert_seat_view_only([m for _, m in messages], snapshots, seat=0)
