"""Helpers for the service tests: a real gateway on a free port, SDK clients that keep every message they
receive, random legal-action bots, and what each seat may not see at each step of a match."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from gateway.server import Gateway, start_gateway
from gateway.workers import Router
from protos.tablehall.v1 import matches_pb2, matches_pb2_grpc
from tablehall.client import Client, SeatClient, TablehallError
from workers.actor import MatchActor
from workers.host import MatchHost

T = TypeVar("T")

FAILED = grpc.StatusCode.FAILED_PRECONDITION
NEVER_BY_BOTS = {"resign", "abandon"}


@dataclass
class Service:
    """One running service: the in-process worker (to look behind the wire), the gateway and an SDK client."""

    host: MatchHost
    gateway: Gateway
    client: Client

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gateway.port}"

    @property
    def stub(self) -> matches_pb2_grpc.MatchesStub:
        return self.client.stub

    def actor(self, match_id: str) -> MatchActor:
        return self.host.actors[match_id]

    def recorded(self, match_id: str, token: str | None) -> Recorded:
        """A seat (or, without a token, a spectator) whose every received message is kept."""
        recorder = Recorder(self.client.stub)
        return Recorded(recorder, SeatClient(recorder, match_id, token))  # type: ignore[arg-type]


def serve(
    body: Callable[[Service], Awaitable[T]], timeout: float = 20.0, clock: Callable[[], int] | None = None
) -> T:
    """Runs `body` against a fresh service in a fresh event loop; the whole test is bounded by `timeout`.
    `clock` (unix ms) replaces the worker's wall clock: the test moves time and the timers follow."""

    async def main() -> T:
        host = MatchHost() if clock is None else MatchHost(clock=clock)
        gateway = await start_gateway(Router([host]), "127.0.0.1", 0)
        try:
            async with Client(f"127.0.0.1:{gateway.port}") as client:
                return await asyncio.wait_for(body(Service(host, gateway, client)), timeout)
        finally:
            host.close()
            await gateway.stop(grace=0.5)

    return asyncio.run(main())


BOTH = matches_pb2.VIEW_FORMAT_BOTH


class Recorder:
    """Stands in for the SDK's stub and keeps every Update and ActResponse it hands back."""

    def __init__(self, stub: matches_pb2_grpc.MatchesStub) -> None:
        self.stub = stub
        self.received: list[matches_pb2.Update | matches_pb2.ActResponse] = []

    async def Act(self, request: matches_pb2.ActRequest, **kw: Any) -> matches_pb2.ActResponse:
        request.views = BOTH  # recorded in both forms: the tests read view_json and the leak tests both
        reply: matches_pb2.ActResponse = await self.stub.Act(request, **kw)
        self.received.append(reply)
        return reply

    async def GetView(self, request: matches_pb2.GetViewRequest, **kw: Any) -> matches_pb2.Update:
        request.views = BOTH
        reply: matches_pb2.Update = await self.stub.GetView(request, **kw)
        self.received.append(reply)
        return reply

    def Watch(self, request: matches_pb2.WatchRequest, **kw: Any) -> AsyncIterator[matches_pb2.Update]:
        call = self.stub.Watch(request, **kw)

        async def updates() -> AsyncIterator[matches_pb2.Update]:
            try:
                async for update in call:
                    self.received.append(update)
                    yield update
            finally:
                call.cancel()

        return updates()


@dataclass
class Recorded:
    recorder: Recorder
    seat: SeatClient

    @property
    def received(self) -> list[matches_pb2.Update | matches_pb2.ActResponse]:
        return self.recorder.received


# --- bots ------------------------------------------------------------------------------------------


def choose(view: dict[str, Any], rng: random.Random, modest: bool = False) -> dict[str, Any] | None:
    """A random legal action of the seat whose view this is (never resign or abandon); None if it has none.
    A `modest` bot bids and raises only the least it may (long Spectacular Bid matches)."""
    legal = [a for a in view["legal"] if a["do"] not in NEVER_BY_BOTS]
    if modest:
        for kind in ("bid", "raise"):
            amounts = [a for a in legal if a["do"] == kind and isinstance(a["amount"], int)]
            if amounts:
                least = min(amounts, key=lambda a: a["amount"])
                legal = [a for a in legal if a["do"] != kind] + [least]
    if not legal:
        return None
    action = dict(rng.choice(legal))
    if action["do"] == "bid" and isinstance(action["amount"], dict):  # 501 summarizes bids as a range
        low, high = action["amount"]["min"], action["amount"]["max"]
        action["amount"] = rng.randint(low, min(high, low + 4))
    elif action["do"] == "declare":  # 501: trump, target and one card to each opponent, all chosen here
        to = action["give"]["to"]
        cards = rng.sample(view["hand"], len(to))
        action = {
            "do": "declare",
            "trump": rng.choice(action["trump"]),
            "target": action["target"]["min"],
            "give": {str(seat): card for seat, card in zip(to, cards, strict=True)},
        }
    return action


@dataclass
class BotLog:
    accepted: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    final: dict[str, Any] | None = None
    final_seq: int = 0


async def bot(seat: SeatClient, rng: random.Random, log: BotLog) -> None:
    """Plays one seat from its watch stream: a random legal action after every change it may act on."""
    acted = 0
    async for update in seat.updates():
        view = json.loads(update.view_json)
        if update.over:
            log.final, log.final_seq = view, update.seq
            return
        if update.seq < acted:
            continue  # this seat has acted since: a newer view is on its way
        action = choose(view, rng)
        if action is None:
            continue
        try:
            acted, _ = await seat.act(action)
        except TablehallError as error:
            now, _ = await seat.view()
            if error.status == FAILED and now > update.seq:
                continue  # another seat moved first: the view we acted on was stale
            raise AssertionError(f"{action} was legal at seq {update.seq} but was refused: {error}") from None
        log.accepted.append((acted, action))
    raise AssertionError("the watch stream ended before the match did")


async def spectate(seat: SeatClient) -> list[matches_pb2.Update]:
    seen = [update async for update in seat.updates()]
    assert seen and seen[-1].over, "a spectator's stream ends only after the match's last update"
    return seen


@dataclass
class PlayedMatch:
    match_id: str
    players: list[str]
    tokens: tuple[str, ...]
    seats: list[Recorded]
    spectator: Recorded
    logs: list[BotLog]
    watched: list[matches_pb2.Update]
    record: dict[str, Any]


async def bot_match(
    service: Service, game: str, players: list[str], seed: int, options: dict[str, Any] | None = None
) -> PlayedMatch:
    """A whole match over gRPC: one random bot per seat on its own stream, and a spectator watching."""
    created = await service.client.create_match(game, players, options)
    seats = [service.recorded(created.match_id, token) for token in created.tokens]
    spectator = service.recorded(created.match_id, None)
    logs = [BotLog() for _ in players]
    rngs = [random.Random(seed * 100 + i) for i in range(len(players))]
    bots = [bot(s.seat, rng, log) for s, rng, log in zip(seats, rngs, logs, strict=True)]
    _, watched = await asyncio.gather(asyncio.gather(*bots), spectate(spectator.seat))
    record = await service.client.record(created.match_id)
    return PlayedMatch(created.match_id, players, created.tokens, seats, spectator, logs, watched, record)


async def drive(
    seats: Iterable[SeatClient], rng: random.Random, until: Callable[[int], bool], modest: bool = False
) -> int:
    """Plays random legal actions one at a time (no streams) until `until(seq)` or the match is over."""
    seats = list(seats)
    while True:
        moved = False
        for seat in seats:
            seq, view = await seat.view()
            if view["phase"] == "over" or until(seq):
                return seq
            action = choose(view, rng, modest)
            if action is not None:
                await seat.act(action)
                moved = True
        assert moved, "no seat has a legal action but the match is not over"


async def first_to_move(seats: list[SeatClient]) -> tuple[int, dict[str, Any]]:
    """The seat whose turn it is and its view."""
    for i, seat in enumerate(seats):
        _, view = await seat.view()
        if view["turn"] == i:
            return i, view
    raise AssertionError("nobody is to move")


# --- what a seat may not see -----------------------------------------------------------------------


def sb_hidden(state: Any, seat: int | None) -> set[str]:
    """Spectacular Bid: the opponent's tiles and the boneyard, each in both orientations."""
    round = state.round
    if round is None:
        return set()
    tiles = set(round.boneyard)
    for other in (0, 1):
        if other != seat:
            tiles |= round.hands[other]
    return {f"{t.high}-{t.low}" for t in tiles} | {f"{t.low}-{t.high}" for t in tiles}


def sb_own(state: Any, seat: int | None) -> set[str]:
    round = state.round
    if round is None or seat is None:
        return set()
    return {str(t) for t in round.hands[seat]}


def five_hidden(state: Any, seat: int | None) -> set[str]:
    """501♠: other hands, the talon until it is exposed, and one's own cards while blind."""
    from workers.games.five_oh_one.state import Bidding

    hand = state.hand
    if hand is None:
        return set()
    cards = set()
    for other, held in enumerate(hand.hands):
        if other != seat:
            cards |= held
    if isinstance(hand, Bidding):
        cards |= set(hand.talon)
        if seat is not None and seat not in hand.looked:
            cards |= hand.hands[seat]
    else:  # exposed: the talon is public, wherever its cards went
        talon = hand.talon if hasattr(hand, "talon") else hand.terms.talon
        cards -= set(talon)
    return {c.code for c in cards}


def five_own(state: Any, seat: int | None) -> set[str]:
    from workers.games.five_oh_one.state import Bidding

    hand = state.hand
    if hand is None or seat is None or (isinstance(hand, Bidding) and seat not in hand.looked):
        return set()
    return {c.code for c in hand.hands[seat]}


def quoted(names: Iterable[str]) -> list[bytes]:
    return [json.dumps(name).encode() for name in names]


def framed(names: Iterable[str]) -> list[bytes]:
    """Each name as the bytes of a protobuf string field holding it (the typed views): its length, then
    itself (tiles and cards are short)."""
    return [bytes([len(name)]) + name.encode() for name in names]
