"""The gateway's HTTP door over real sockets: Connect and gRPC-Web answer the same calls as the native gRPC door
with the same results for the same match (one implementation behind both), refusals included; what a
browser receives there is its seat's view only, byte for byte; CORS only for the configured origins."""

from __future__ import annotations

import asyncio
import http.client
import json
import random
import socket
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import grpc
import pytest
from connectrpc.client import ResponseMetadata
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType

from gateway.connect_door import connect_code, snake_case
from gateway.web import cors_origins
from protos.tablehall.v1 import matches_connect, matches_pb2, tournaments_connect, tournaments_pb2, tournaments_pb2_grpc
from tablehall.client import Client, action_message
from tests.over_grpc import choose, drive, five_hidden, five_own, sb_hidden, sb_own
from tests.test_service_matches import assert_no_leak
from tests.web_support import (
    CONNECT_STREAM,
    GRPC_WEB,
    LiveService,
    Raw,
    connect_end,
    envelope,
    live_service,
    raw_stream,
    raw_unary,
    updates,
)

SB = "spectacular-bid"
UNKNOWN_ID = "0123456789abcdef"


@pytest.fixture
def service() -> Iterator[LiveService]:
    yield from live_service(origins=("http://allowed.example",))


@dataclass(frozen=True)
class Answer:
    """What a door answered: the reply's bytes, or the refusal as status, stable code and message."""

    reply: bytes | None = None
    stream: tuple[bytes, ...] = ()
    status: str | None = None
    code: str | None = None
    message: str | None = None


Call = Callable[[str, Any, str | None], Awaitable[Answer]]


def timeless(reply: Any) -> bytes:
    """A reply as bytes, an Update without the service's clock reading (`match_time_ms`): two doors asked one
    after the other read the clock apart, never the match. While a match is played the reading is there.
    Serialized deterministically: a map's entries (a layout's open ends) have no order on the wire, and a
    door that reads and writes the message again may send them in another."""
    if reply.DESCRIPTOR.name == "Update":
        view = json.loads(reply.view_json)
        if view["status"] != "in_progress":
            assert reply.match_time_ms == 0, "an ended match has no clock to read"
        reply.ClearField("match_time_ms")
    data: bytes = reply.SerializeToString(deterministic=True)
    return data


def native_door(stub: Any) -> Call:
    async def call(method: str, request: Any, token: str | None) -> Answer:
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        try:
            if method == "Watch":
                replies = [timeless(u) async for u in stub.Watch(request, metadata=metadata)]
                return Answer(stream=tuple(replies))
            reply = await getattr(stub, method)(request, metadata=metadata)
            return Answer(reply=timeless(reply))
        except grpc.aio.AioRpcError as error:
            code = next((str(v) for k, v in error.trailing_metadata() or () if k == "tablehall-error"), None)
            return Answer(status=error.code().name, code=code, message=error.details())

    return call


def connect_door(client: Any) -> Call:
    async def call(method: str, request: Any, token: str | None) -> Answer:
        headers = {"authorization": f"Bearer {token}"} if token else None
        with ResponseMetadata() as metadata:
            try:
                if method == "Watch":
                    replies = [timeless(u) async for u in client.watch(request, headers=headers)]
                    return Answer(stream=tuple(replies))
                reply = await getattr(client, snake_case(method))(request, headers=headers)
                return Answer(reply=timeless(reply))
            except ConnectError as error:
                code = metadata.trailers().get("tablehall-error") if metadata.trailers() else None
                return Answer(status=_grpc_name(error.code.name), code=code, message=error.message)

    return call


def _grpc_name(connect_name: str) -> str:
    return "CANCELLED" if connect_name == "CANCELED" else connect_name


def doors(service: LiveService, client: Client) -> tuple[dict[str, Call], list[matches_connect.MatchesClient]]:
    base = service.url.rstrip("/")
    clients = [
        matches_connect.MatchesClient(base, protocol=ProtocolType.CONNECT),
        matches_connect.MatchesClient(base, protocol=ProtocolType.GRPC_WEB),
    ]
    calls = {
        "grpc": native_door(client.stub),
        "connect": connect_door(clients[0]),
        "grpc-web": connect_door(clients[1]),
    }
    return calls, clients


async def same(calls: dict[str, Call], method: str, request: Any, token: str | None) -> Answer:
    """Asks every door the same; all must answer alike. Returns the answer."""
    answers = {name: await call(method, request, token) for name, call in calls.items()}
    first = answers["grpc"]
    for name, answer in answers.items():
        assert answer == first, f"{method}: {name} answered {answer}, the native door {first}"
    return first


def act(match_id: str, action: dict[str, Any], seat: int | None = None) -> matches_pb2.ActRequest:
    request = matches_pb2.ActRequest(match_id=match_id, action=action_message(action))
    if seat is not None:
        request.seat = seat
    return request


def test_connect_and_grpc_web_answer_like_the_native_door_for_the_same_match(service: LiveService) -> None:
    async def body() -> None:
        async with Client(service.address) as client:
            calls, clients = doors(service, client)
            try:
                await same_match(calls, client)
            finally:
                for c in clients:
                    await c.close()

    service.run(body(), timeout=120)


async def same_match(calls: dict[str, Call], client: Client) -> None:
    created = await client.create_match(SB, ["Ana", "Bia"], {"start_points": 20})  # the shortest match: 9 calls a move
    match_id, tokens = created.match_id, created.tokens
    views = [matches_pb2.GetViewRequest(match_id=match_id)] * 3
    who = [tokens[0], tokens[1], None]

    async def frozen() -> list[bytes]:
        return [(await same(calls, "GetView", r, t)).reply or b"" for r, t in zip(views, who, strict=True)]

    # the calls that touch no match
    assert (await same(calls, "Ping", matches_pb2.PingRequest(), None)).reply == b""
    for game in (SB, "501"):
        answer = await same(calls, "GetRules", matches_pb2.GetRulesRequest(game=game), None)
        rules = matches_pb2.Rules.FromString(answer.reply or b"")
        assert rules.game == game and len(rules.text) > 200
    nothing = await same(calls, "GetRules", matches_pb2.GetRulesRequest(game="chess"), None)
    assert (nothing.status, nothing.code) == ("NOT_FOUND", "not_found")
    bad_game = await same(calls, "CreateMatch", matches_pb2.CreateMatchRequest(game="chess", players=["a", "b"]), None)
    assert (bad_game.status, bad_game.code) == ("INVALID_ARGUMENT", "malformed_input")
    assert "chess" in (bad_game.message or "")

    # refusals: the same status, stable code and message from every door, and the match unchanged
    before = await frozen()
    refusals = [
        (act(match_id, {"do": "draw"}), tokens[0], "FAILED_PRECONDITION", "illegal_action"),
        (act(match_id, {"do": "ready"}), None, "UNAUTHENTICATED", "unauthenticated"),
        (act(match_id, {"do": "ready"}), "not-a-seat-token", "UNAUTHENTICATED", "unauthenticated"),
        (act(match_id, {"do": "ready"}, seat=1), tokens[0], "PERMISSION_DENIED", "permission_denied"),
        (act("not-an-id", {"do": "ready"}), tokens[0], "INVALID_ARGUMENT", "malformed_input"),
        (act(UNKNOWN_ID, {"do": "ready"}), tokens[0], "NOT_FOUND", "not_found"),
        (act(match_id, {"do": "play", "tile": "9-9"}), tokens[0], "INVALID_ARGUMENT", "malformed_input"),
        (matches_pb2.ActRequest(match_id=match_id), tokens[0], "INVALID_ARGUMENT", "malformed_input"),
    ]
    for request, token, status, code in refusals:
        answer = await same(calls, "Act", request, token)
        assert (answer.status, answer.code) == (status, code) and answer.message, answer
    unfinished = await same(calls, "GetRecord", matches_pb2.GetRecordRequest(match_id=match_id), None)
    assert (unfinished.status, unfinished.code) == ("FAILED_PRECONDITION", "not_finished")
    assert await frozen() == before, "a refused call changed the match"

    # the whole match, its commands sent through the three doors in turn; every view read alike at each step
    rng = random.Random(10)
    names = list(calls)
    moves = 0
    while True:
        replies = await frozen()
        view0, view1 = (matches_pb2.Update.FromString(r) for r in replies[:2])
        if view0.over:
            break
        for seat, update in enumerate((view0, view1)):
            action = choose(json.loads(update.view_json), rng, modest=True)
            if action is None:
                continue
            name = names[moves % len(names)]
            answer = await calls[name]("Act", act(match_id, action), tokens[seat])
            assert answer.status is None, f"{name} refused the legal {action}: {answer}"
            moves += 1
            break
    # the deal is the service's own draw, so the match's length varies; the doors take turns, so every door
    # carried commands once there were as many as doors
    assert moves >= len(names), moves

    # the finished match: the same record, and the same stream of updates from the start
    record = await same(calls, "GetRecord", matches_pb2.GetRecordRequest(match_id=match_id), None)
    assert b'"events"' in (record.reply or b"")
    for token in (tokens[0], tokens[1], None):
        stream = await same(calls, "Watch", matches_pb2.WatchRequest(match_id=match_id), token)
        seqs = [matches_pb2.Update.FromString(u).seq for u in stream.stream]
        assert seqs == list(range(1, len(seqs) + 1)) and seqs[-1] >= moves
    assert await created_elsewhere_plays_here(calls, client)


async def created_elsewhere_plays_here(calls: dict[str, Call], client: Client) -> bool:
    """A match created through the HTTP door is the same service's match: its tokens act on the native door."""
    for name in ("connect", "grpc-web"):
        request = matches_pb2.CreateMatchRequest(game="501", players=["a", "b", "c"])
        answer = await calls[name]("CreateMatch", request, None)
        created = matches_pb2.CreateMatchResponse.FromString(answer.reply or b"")
        _, view = await client.seat(created.match_id, created.seats[0].token).view()
        assert view["game"] == "501" and view["seat"] == 0 and len(created.seats) == 3
    return True


def test_the_tournaments_service_answers_on_the_http_door_too(
    service: LiveService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLEHALL_DATABASE_URL", "memory")  # no tournament database: a refusal, alike everywhere

    async def body() -> Answer:
        base = service.url.rstrip("/")
        async with grpc.aio.insecure_channel(service.address) as channel:
            kinds = (ProtocolType.CONNECT, ProtocolType.GRPC_WEB)
            clients = [tournaments_connect.TournamentsClient(base, protocol=kind) for kind in kinds]
            calls = {"grpc": native_door(tournaments_pb2_grpc.TournamentsStub(channel))}
            calls |= {f"http-{i}": connect_door(c) for i, c in enumerate(clients)}
            try:
                return await same(calls, "GetStandings", tournaments_pb2.GetStandingsRequest(), "an-organizer-key")
            finally:
                for c in clients:
                    await c.close()

    refused = service.run(body())
    assert refused.status == "FAILED_PRECONDITION" and "need a database" in (refused.message or ""), refused


def test_the_bridge_names_every_rpc_as_the_generated_code_does() -> None:
    generated = ((matches_connect, matches_pb2, "Matches"), (tournaments_connect, tournaments_pb2, "Tournaments"))
    for module, messages, name in generated:
        rpcs = [m.name for m in messages.DESCRIPTOR.services_by_name[name].methods]
        client = getattr(module, f"{name}Client")
        assert rpcs and all(hasattr(client, snake_case(rpc)) for rpc in rpcs), name


def test_cors_origins_setting() -> None:
    assert cors_origins("http://a.example/, https://b.example:8443 ,,*") == (
        "http://a.example",
        "https://b.example:8443",
        "*",
    )
    assert cors_origins("") == ()


def test_every_grpc_status_has_its_connect_code() -> None:
    for status in grpc.StatusCode:
        if status is not grpc.StatusCode.OK:
            assert _grpc_name(connect_code(status).name) == status.name


# --- what a browser receives: the seat's view only, byte for byte -------------------------------------


@pytest.mark.parametrize(
    ("game", "players", "options", "hidden", "own"),
    [
        (SB, ["Ana", "Bia"], {"start_points": 60}, sb_hidden, sb_own),
        ("501", ["Ana", "Bia", "Cid"], {"start_score": 200}, five_hidden, five_own),
    ],
)
def test_the_http_door_sends_each_seat_its_own_view_only(
    service: LiveService, game: str, players: list[str], options: dict[str, Any], hidden: Any, own: Any
) -> None:
    async def create() -> tuple[str, tuple[str, ...]]:
        async with Client(service.address) as client:
            created = await client.create_match(game, players, options)
            return created.match_id, created.tokens

    match_id, tokens = service.run(create())
    request = matches_pb2.WatchRequest(match_id=match_id).SerializeToString()
    watchers: list[tuple[int | None, str]] = [(seat, CONNECT_STREAM) for seat in range(len(players))]
    watchers += [(None, CONNECT_STREAM), (0, GRPC_WEB), (None, GRPC_WEB)]
    with ThreadPoolExecutor(len(watchers)) as pool:  # live streams, open while the match is played
        streams = [
            pool.submit(raw_stream, service.url, "Watch", request, kind, tokens[seat] if seat is not None else None)
            for seat, kind in watchers
        ]

        async def play() -> None:
            async with Client(service.address) as client:
                seats = [client.seat(match_id, token) for token in tokens]
                await drive(seats, random.Random(11), until=lambda seq: False, modest=True)

        service.run(play(), timeout=120)
        received = [updates(stream.result(120)) for stream in streams]
    for (_, kind), stream in zip(watchers, streams, strict=True):
        result = stream.result()
        assert result.headers["content-type"] == kind, result.headers
        if kind == CONNECT_STREAM:
            assert connect_end(result) == {}, "the stream ended cleanly with the match"
        else:
            assert b"grpc-status: 0" in result.end
    # and the unary reads a page makes, for every seat and a spectator
    for seat, token in [*enumerate(tokens), (None, None)]:
        ask = matches_pb2.GetViewRequest(match_id=match_id).SerializeToString()
        status, headers, body = raw_unary(service.url, "GetView", ask, token)
        assert status == 200 and headers["content-type"] == "application/proto"
        index = watchers.index((seat, CONNECT_STREAM))
        received[index].append(Raw(matches_pb2.Update.FromString(body).seq, body))

    snapshots = service.host.actors[match_id].snapshots
    for got in received:
        assert [m.seq for m in got[: len(snapshots)]] == list(range(1, len(snapshots) + 1)), "every change, once"

    def watched(kind: str) -> Any:  # the shape tests/test_service_matches.py's byte-level check reads
        seats = [received[watchers.index((s, kind))] for s, k in watchers if k == kind and s is not None]
        spectator = received[watchers.index((None, kind))]
        return SimpleNamespace(
            seats=[SimpleNamespace(received=r) for r in seats], spectator=SimpleNamespace(received=spectator)
        )

    assert_no_leak(watched(CONNECT_STREAM), snapshots, hidden, own)
    assert_no_leak(watched(GRPC_WEB), snapshots, hidden, own)


# --- a closed tab: its stream ends at once ----------------------------------------------------------------


def test_a_client_that_goes_away_ends_its_watch_at_once(service: LiveService) -> None:
    """Without it a closed tab would hold its watcher until the match's next change (connect-python alone
    notices a disconnect only when it has the next message to send)."""

    async def create() -> str:
        async with Client(service.address) as client:
            return (await client.create_match(SB, ["Ana", "Bia"])).match_id

    match_id = service.run(create())
    actor = service.host.actors[match_id]
    request = envelope(matches_pb2.WatchRequest(match_id=match_id).SerializeToString())
    parts = urlsplit(service.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as tab:
        head = (
            f"POST /tablehall.v1.Matches/Watch HTTP/1.1\r\nhost: {parts.netloc}\r\n"
            f"content-type: {CONNECT_STREAM}\r\nconnect-protocol-version: 1\r\ncontent-length: {len(request)}\r\n\r\n"
        )
        tab.sendall(head.encode() + request)
        first = b""
        while match_id.encode() not in first:  # the headers, then the first update's frame
            chunk = tab.recv(65536)
            assert chunk, f"the stream closed before its first update: {first!r}"
            first += chunk
        assert first.startswith(b"HTTP/1.1 200")
        assert len(actor.watchers) == 1

    async def dropped() -> None:
        while actor.watchers:  # no change happens meanwhile: only the disconnect can end the watch
            await asyncio.sleep(0.01)

    service.run(asyncio.wait_for(dropped(), 10))


# --- CORS: by the setting, nothing more ----------------------------------------------------------------


def preflight(url: str, origin: str) -> dict[str, str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        headers = {
            "origin": origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization,content-type,connect-protocol-version",
        }
        connection.request("OPTIONS", "/tablehall.v1.Matches/Act", headers=headers)
        response = connection.getresponse()
        response.read()
        return {k.lower(): v for k, v in response.getheaders()} | {":status": str(response.status)}
    finally:
        connection.close()


def test_cross_origin_calls_only_from_the_configured_origins(service: LiveService) -> None:
    allowed = preflight(service.url, "http://allowed.example")
    assert allowed[":status"] == "200" and allowed["access-control-allow-origin"] == "http://allowed.example"
    assert "authorization" in allowed["access-control-allow-headers"].lower()
    other = preflight(service.url, "http://elsewhere.example")
    assert other[":status"] == "400" and "access-control-allow-origin" not in other
    status, _, body = raw_unary(service.url, "Ping", b"")
    assert status == 200 and body == b""
