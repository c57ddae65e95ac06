"""A worker's matches: creates actors, routes each request to its match's actor, refuses foreign matches.

Requests and replies are the internal API's messages (protos/tablehall/v1/host.proto), so the gateway
calls this the same way in process (embedded mode) and over gRPC (separate worker processes).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator

from google.protobuf.json_format import MessageToDict

from protos.tablehall.v1 import host_pb2, matches_pb2
from workers.actor import MatchActor
from workers.errors import NotFound, NotOwner
from workers.games.catalog import game_named
from workers.games.engine import JSON, Seat
from workers.games.errors import MalformedAction
from workers.partitions import owner_of
from workers.storage import MatchEntry, MemoryStorage, Storage


def action_json(action: matches_pb2.Action) -> dict[str, JSON]:
    """A typed wire action as the record event the engines read (`{"do": "play", "tile": "6-4", ...}`)."""
    kind = action.WhichOneof("kind")
    if kind is None:
        raise MalformedAction("the action is empty: set one of ready, play, bid, ...")
    fields = MessageToDict(getattr(action, kind), preserving_proto_field_name=True)
    return {"do": kind.rstrip("_"), **fields}


class MatchHost:
    def __init__(self, storage: Storage | None = None, ordinal: int = 0, workers: int = 1) -> None:
        self.storage = storage if storage is not None else MemoryStorage()
        self.ordinal = ordinal
        self.workers = workers
        self.actors: dict[str, MatchActor] = {}

    def actor(self, match_id: str) -> MatchActor:
        if owner_of(match_id, self.workers) != self.ordinal:
            raise NotOwner(f"worker {self.ordinal} does not own match {match_id}")
        actor = self.actors.get(match_id)
        if actor is None:
            raise NotFound(f"no match {match_id!r}")
        return actor

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        if owner_of(request.match_id, self.workers) != self.ordinal:
            raise NotOwner(f"worker {self.ordinal} does not own match {request.match_id}")
        game = game_named(request.game)
        if game is None:
            raise MalformedAction(f"unknown game {request.game!r}: spectacular-bid or 501")
        players = tuple(request.players)
        if not game.min_seats <= len(players) <= game.max_seats:
            raise MalformedAction(f"{game.name} takes {game.min_seats} to {game.max_seats} players, not {len(players)}")
        if any(not p.strip() or len(p) > 64 for p in players):
            raise MalformedAction("every player needs a name of 1 to 64 characters")
        if len(request.token_sha256) != len(players):
            raise MalformedAction("one token per seat")
        options = json.loads(request.options_json) if request.options_json else {}
        if not isinstance(options, dict):
            raise MalformedAction("options must be an object")
        entry = MatchEntry(
            request.match_id,
            game.name,
            players,
            options,
            tuple(request.token_sha256),
            request.created_unix_ms,
            secrets.randbelow(len(players)),
        )
        if entry.match_id in self.actors:
            raise MalformedAction(f"match {entry.match_id} exists already")
        game.start(len(players), options, Seat(entry.lot))  # the engine validates the options
        self.storage.create(entry)
        actor = MatchActor(entry, game, self.storage)
        self.actors[entry.match_id] = actor
        actor.arm()
        return host_pb2.HostCreateResponse()

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        actor = self.actor(request.match_id)
        claimed = request.seat if request.HasField("seat") else None
        seq, view = await actor.command(
            request.token_sha256, claimed, action_json(request.action), request.arrival_unix_ms
        )
        return matches_pb2.ActResponse(seq=seq, view_json=view)

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]:
        async for update in self.actor(request.match_id).watch(request.token_sha256, request.after_seq):
            yield update

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update:
        actor = self.actor(request.match_id)
        seat = actor.seat_of(request.token_sha256) if request.token_sha256 else None
        return actor.update(seat, actor.seq)

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record:
        record = self.actor(request.match_id).record()
        return matches_pb2.Record(record_json=json.dumps(record))

    def close(self) -> None:
        for actor in self.actors.values():
            actor.close()
