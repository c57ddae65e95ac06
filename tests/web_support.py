"""Helpers for the browser-door tests: a real service (gateway, HTTP door, in-process worker) on free ports in
an event loop of its own thread, raw HTTP calls that keep every byte the service sent, and the tools the
end-to-end test needs (node, the built page, Debian's Chromium)."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import struct
import threading
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest

from gateway.server import Gateway, public_servicers, start_gateway
from gateway.web import WebDoor, start_web_door
from gateway.workers import Router
from protos.tablehall.v1 import matches_pb2
from workers.host import MatchHost

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
WEB = REPO / "web"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SERVICE = "/tablehall.v1.Matches/"


@dataclass
class LiveService:
    """One service in a background event loop: what the tests and a browser reach over real sockets."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    host: MatchHost
    gateway: Gateway
    door: WebDoor

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gateway.port}"

    @property
    def url(self) -> str:
        return self.door.url

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Runs `coro` in the service's loop and waits for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


@dataclass
class _Started:
    host: MatchHost
    gateway: Gateway
    door: WebDoor


async def _start(origins: tuple[str, ...]) -> _Started:
    host = MatchHost()
    router = Router([host])
    servicers = public_servicers(router)
    gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
    door = await start_web_door(servicers, "127.0.0.1", 0, origins)
    return _Started(host, gateway, door)


async def _stop(started: _Started) -> None:
    await started.host.stop()
    await started.door.stop(grace=1.0)
    await started.gateway.stop(grace=0.5)


def live_service(origins: tuple[str, ...] = ()) -> Iterator[LiveService]:
    """A generator for fixtures: the service runs until the test is done, then everything is stopped."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="tablehall-web-test", daemon=True)
    thread.start()
    started = asyncio.run_coroutine_threadsafe(_start(origins), loop).result(30)
    try:
        yield LiveService(loop, thread, started.host, started.gateway, started.door)
    finally:
        asyncio.run_coroutine_threadsafe(_stop(started), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


# --- raw HTTP: exactly the bytes on the wire -------------------------------------------------------

CONNECT_STREAM = "application/connect+proto"
GRPC_WEB = "application/grpc-web+proto"


@dataclass
class Raw:
    """One message as received: its payload bytes exactly, and the seq it carries (duck-types the
    protobuf messages that tests/over_grpc.py's leak check reads)."""

    seq: int
    raw: bytes

    def SerializeToString(self) -> bytes:  # the protobuf name the leak check calls
        return self.raw


@dataclass
class RawStream:
    messages: list[bytes] = field(default_factory=list)
    end: bytes = b""
    """The end-of-stream frame: Connect's JSON, or gRPC-Web's trailers."""
    headers: dict[str, str] = field(default_factory=dict)


def envelope(message: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(message)) + message


def frames(body: bytes) -> Iterator[tuple[int, bytes]]:
    """The (flags, payload) frames of an enveloped stream body (Connect streaming and gRPC-Web)."""
    at = 0
    while at < len(body):
        flags, size = struct.unpack(">BI", body[at : at + 5])
        yield flags, body[at + 5 : at + 5 + size]
        at += 5 + size


def raw_stream(url: str, method: str, request: bytes, content_type: str, token: str | None = None) -> RawStream:
    """A server-streaming call over HTTP/1.1 with no compression, read to its end, frames kept apart."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)
    headers = {"content-type": content_type}
    if content_type == GRPC_WEB:
        headers["x-grpc-web"] = "1"
    else:
        headers["connect-protocol-version"] = "1"
    if token:
        headers["authorization"] = f"Bearer {token}"
    try:
        connection.request("POST", SERVICE + method, body=envelope(request), headers=headers)
        response = connection.getresponse()
        body = response.read()
        stream = RawStream(headers={k.lower(): v for k, v in response.getheaders()})
        for flags, payload in frames(body):
            assert not flags & 0x01, "nothing was asked compressed, nothing may come compressed"
            if flags & 0x80 or flags & 0x02:
                stream.end = payload
            else:
                stream.messages.append(payload)
        return stream
    finally:
        connection.close()


def raw_unary(url: str, method: str, request: bytes, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A Connect unary call in binary protobuf, as the page makes it; status, headers, body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    headers = {"content-type": "application/proto", "connect-protocol-version": "1"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    try:
        connection.request("POST", SERVICE + method, body=request, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def updates(stream: RawStream) -> list[Raw]:
    return [Raw(matches_pb2.Update.FromString(m).seq, m) for m in stream.messages]


def connect_end(stream: RawStream) -> dict[str, Any]:
    end: dict[str, Any] = json.loads(stream.end or b"{}")
    return end


# --- what the end-to-end test needs ----------------------------------------------------------------


def require_browser_tools() -> Path:
    """node, the built page, the npm packages and Chromium; missing ones fail under CI, else skip."""
    missing = []
    if shutil.which("node") is None:
        missing.append("node")
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        missing.append("web/node_modules (cd web && npm ci)")
    if not (WEB / "dist" / "index.html").is_file():
        missing.append("web/dist (cd web && npm run build)")
    if not Path(CHROMIUM).is_file():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    if missing:
        message = "the browser test needs " + ", ".join(missing) + "; .ci/run installs them"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return WEB


# --- what a summary on the page must say: the match's record, replayed ---------------------------


def replayed_rounds(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Spectacular Bid: each round of a record replayed through the rules engine (as `tablehall replay`
    does), as the page's summary shows it: how it ended, the auction, a block's two hand totals and the
    points after it."""
    from workers.games.records import Match, _read, replay
    from workers.games.spectacular_bid.state import Phase
    from workers.games.spectacular_bid.tiles import round_to_five

    recorded = _read(record)
    game, commands = recorded.game, recorded.commands
    match = Match.start(game, recorded.players, recorded.options, recorded.lot)
    pending = iter(recorded.deals)
    rounds: list[dict[str, Any]] = []

    def settle(match: Match) -> Match:
        state = match.state
        ended = [*state.past, *([state.round] if state.phase is Phase.OVER and state.round is not None else [])]
        while len(rounds) < len(ended):
            r = ended[len(rounds)]
            entry: dict[str, Any] = {**r.summary(), "points_after": list(state.points)}
            if r.end == "block":
                sums = [sum(t.pips for t in hand) for hand in r.hands]
                to = None if sums[0] == sums[1] else int(sums[1] < sums[0])
                entry["block"] = {"sums": sums, "to": to, "owed": 0 if to is None else round_to_five(sums[1 - to])}
            rounds.append(entry)
        while game.needs_deal(match.state):
            match, _ = match.deal(next(pending), match.now)
        return match

    match = settle(match)
    for command in commands:
        match, _ = match.advance(command.t)
        match = settle(match)
        match, _ = match.apply(command.seat, command.action, command.t)
        match = settle(match)
    outcome = replay(record).to_json()
    assert [{k: v for k, v in r.items() if k not in ("points_after", "block")} for r in rounds] == outcome["rounds"]
    return rounds
