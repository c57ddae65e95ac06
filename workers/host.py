"""A worker's matches: claims its partitions, recovers their unfinished matches, routes each request
to its match's actor, and refuses matches it does not own.

Requests and replies are the internal API's messages (protos/tablehall/v1/host.proto), so the gateway
calls this the same way in process (embedded mode) and over gRPC (separate worker processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable

from google.protobuf.json_format import MessageToDict

from protos.tablehall.v1 import host_pb2, matches_pb2
from workers import metrics
from workers.actor import MatchActor, unix_ms
from workers.errors import NotFound, NotOwner
from workers.games.catalog import game_named
from workers.games.engine import JSON, Millis, Seat
from workers.games.errors import MalformedAction
from workers.partitions import PARTITIONS, partition_of
from workers.storage import FencedOut, MatchEntry, MemoryStorage, Storage

log = logging.getLogger("tablehall.worker")


def action_json(action: matches_pb2.Action) -> dict[str, JSON]:
    """A typed wire action as the record event the engines read (`{"do": "play", "tile": "6-4", ...}`)."""
    kind = action.WhichOneof("kind")
    if kind is None:
        raise MalformedAction("the action is empty: set one of ready, play, bid, ...")
    fields = MessageToDict(getattr(action, kind), preserving_proto_field_name=True)
    return {"do": kind.rstrip("_"), **fields}


class MatchHost:
    def __init__(
        self,
        storage: Storage | None = None,
        ordinal: int = 0,
        workers: int = 1,
        *,
        tolerance_ms: int = 1000,
        owner: str | None = None,
        on_finished: Callable[[str], None] | None = None,
    ) -> None:
        self.storage: Storage = storage if storage is not None else MemoryStorage()
        self.ordinal = ordinal
        self.workers = workers
        self.tolerance_ms = tolerance_ms
        self.owner = owner or f"worker-{ordinal}-{os.getpid()}-{secrets.token_hex(3)}"
        self.partitions = [p for p in range(PARTITIONS) if p % workers == ordinal]
        self.epochs: dict[int, int] = {}
        self.lost: set[int] = set()
        self.actors: dict[str, MatchActor] = {}
        self.beating: asyncio.Task[None] | None = None
        self.on_finished = on_finished
        """Hook for the rating job: called with a match id when a match finishes with a result."""
        metrics.track(self)

    async def start(self) -> None:
        """Claim this worker's partitions and carry on their unfinished matches (SB-11 on a long outage)."""
        last_alive = await self.storage.last_heartbeat(self.partitions)
        self.epochs = await self.storage.claim(self.owner, self.partitions)
        now = unix_ms()
        await self.storage.heartbeat(self.owner, now)
        outage = None if last_alive is None else now - last_alive
        recovered = voided = 0
        for stored in await self.storage.unfinished(self.partitions):
            game = game_named(stored.entry.game)
            assert game is not None
            epoch = self.epochs[stored.entry.partition]
            actor = MatchActor.restore(stored, game, self.storage, epoch, **self._actor_kw())
            self.actors[actor.match_id] = actor
            recovered += 1
            if stored.progress.clock_running and outage is not None and outage > self.tolerance_ms:
                metrics.FAULTS.labels("worker_down").inc()
                await actor.void("worker_down", Millis(now - actor.entry.created_unix_ms))
                voided += 1
            actor.arm()
        self.beating = asyncio.create_task(self._beat())
        log.info(
            "%s owns %d partitions; recovered %d matches (%d voided: down %s ms)",
            self.owner, len(self.partitions), recovered, voided, outage,
        )

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.tolerance_ms / 4000)
            with contextlib.suppress(Exception):
                await self.storage.heartbeat(self.owner, unix_ms())

    def _actor_kw(self) -> dict[str, object]:
        return {"tolerance_ms": self.tolerance_ms, "on_fenced": self._fenced, "on_finished": self.on_finished}

    def _fenced(self, actor: MatchActor, error: FencedOut) -> None:
        """Another process claimed this partition: stop serving all of its matches here."""
        partition = actor.entry.partition
        if partition not in self.lost:
            log.error("%s: partition %d is owned by another worker now; no longer serving it", self.owner, partition)
        self.lost.add(partition)
        for match_id, other in list(self.actors.items()):
            if other.entry.partition == partition:
                other.close()
                del self.actors[match_id]

    def _owned(self, match_id: str) -> int:
        partition = partition_of(match_id)
        if partition % self.workers != self.ordinal or partition in self.lost:
            raise NotOwner(f"worker {self.ordinal} does not own match {match_id}")
        return partition

    def actor(self, match_id: str) -> MatchActor:
        self._owned(match_id)
        actor = self.actors.get(match_id)
        if actor is None:
            raise NotFound(f"no match {match_id!r}")
        return actor

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        partition = self._owned(request.match_id)
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
        if request.match_id in self.actors:
            raise MalformedAction(f"match {request.match_id} exists already")
        lot = secrets.randbelow(len(players))
        game.start(len(players), options, Seat(lot))  # the engine validates the options
        entry = MatchEntry(
            request.match_id, game.name, players, options, tuple(request.token_sha256),
            request.created_unix_ms, lot, partition,
        )
        actor = await MatchActor.create(entry, game, self.storage, self.epochs.get(partition, 0), **self._actor_kw())
        self.actors[entry.match_id] = actor
        return host_pb2.HostCreateResponse()

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        started = time.perf_counter()
        if request.arrival_unix_ms:
            metrics.HOP.observe(max(0, time.time_ns() // 1_000_000 - request.arrival_unix_ms) / 1000)
        actor = self.actor(request.match_id)
        claimed = request.seat if request.HasField("seat") else None
        try:
            seq, view = await actor.command(
                request.token_sha256, claimed, action_json(request.action), request.arrival_unix_ms
            )
        finally:
            kind = request.action.WhichOneof("kind") or "none"
            metrics.COMMAND.labels(actor.entry.game, kind.rstrip("_")).observe(time.perf_counter() - started)
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

    async def settle(self, request: host_pb2.HostSettleRequest) -> host_pb2.HostSettleResponse:
        """For the sweeps: run an overdue deadline, or close an abandoned table (ratings/sweep.py)."""
        actor = self.actor(request.match_id)
        if request.abandon_reason:
            if not (request.only_if_untouched and actor.match.log is not None):
                await actor.void(request.abandon_reason, Millis(unix_ms() - actor.entry.created_unix_ms))
        else:
            await actor.settle()
        progress = actor.progress(actor.match)
        return host_pb2.HostSettleResponse(status=progress.status, void_reason=progress.void_reason or "")

    async def stop(self) -> None:
        metrics.untrack(self)
        if self.beating is not None:
            self.beating.cancel()
        for actor in self.actors.values():
            actor.close()

    def close(self) -> None:
        metrics.untrack(self)
        if self.beating is not None:
            self.beating.cancel()
        for actor in self.actors.values():
            actor.close()
