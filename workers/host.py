"""A worker's matches: claims its partitions, recovers their unfinished matches, routes each request
to its match's actor, and refuses matches it does not own.

Requests and replies are the internal API's messages (protos/tablehall/v1/host.proto), so the gateway
calls this the same way in process (embedded mode) and over gRPC (separate worker processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from google.protobuf.json_format import MessageToDict

from protos.tablehall.v1 import host_pb2, matches_pb2
from workers import metrics
from workers.actor import MatchActor, unix_ms
from workers.errors import NotFound, NotOwner
from workers.games.catalog import game_named
from workers.games.engine import JSON, Game, Millis, Seat
from workers.games.errors import MalformedAction
from workers.partitions import PARTITIONS, partition_of
from workers.storage import FencedOut, MatchEntry, MemoryStorage, Storage
from workers.voids import VoidReason

log = logging.getLogger("tablehall.worker")


def check_table(game: Game[Any, Any, Any], players: tuple[str, ...]) -> None:
    """Seats and names of one table (the gateway checks a whole batch with this before sending it)."""
    if not game.min_seats <= len(players) <= game.max_seats:
        raise MalformedAction(f"{game.name} takes {game.min_seats} to {game.max_seats} players, not {len(players)}")
    if any(not p.strip() or len(p) > 64 for p in players):
        raise MalformedAction("every player needs a name of 1 to 64 characters")


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
        on_ended: Callable[[str], None] | None = None,
        clock: Callable[[], int] = unix_ms,
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
        self.on_ended = on_ended
        """Hook for tournaments: called with a match id when a match ends, with a result or voided."""
        self.clock = clock
        """The wall clock in unix ms (tests inject one): starts of scheduled matches, deadlines."""
        metrics.track(self)

    async def start(self) -> None:
        """Claim this worker's partitions and carry on their unfinished matches (SB-11 on a long outage)."""
        last_alive = await self.storage.last_heartbeat(self.partitions)
        self.epochs = await self.storage.claim(self.owner, self.partitions)
        now = self.clock()
        await self.storage.heartbeat(self.owner, now)
        outage = None if last_alive is None else now - last_alive
        recovered = voided = 0
        # Recovery builds many long-lived objects at once; with the cyclic collector on, each burst of
        # allocations rescans all of them (a third of the time for 10,000 matches). Nothing built here is
        # cyclic garbage, so it runs without it; the collector is back on once recovery is done.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for stored in await self.storage.unfinished(self.partitions):
                game = game_named(stored.entry.game)
                assert game is not None
                epoch = self.epochs[stored.entry.partition]
                actor = MatchActor.restore(stored, game, self.storage, epoch, **self._actor_kw())
                self.actors[actor.match_id] = actor
                recovered += 1
                if stored.progress.clock_running and outage is not None and outage > self.tolerance_ms:
                    metrics.FAULTS.labels("worker_down").inc()
                    await actor.void(VoidReason.WORKER_DOWN, Millis(now - actor.entry.created_unix_ms))
                    voided += 1
                actor.arm()
        finally:
            if collecting:
                gc.enable()
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
        return {
            "tolerance_ms": self.tolerance_ms, "on_fenced": self._fenced, "on_finished": self.on_finished,
            "on_ended": self.on_ended, "clock": self.clock,
        }

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

    def _entry(self, request: host_pb2.HostCreateRequest) -> MatchEntry:
        """A validated new match (owned partition, known game, seats, names, tokens, the engine's options)."""
        partition = self._owned(request.match_id)
        game = game_named(request.game)
        if game is None:
            raise MalformedAction(f"unknown game {request.game!r}: spectacular-bid or 501")
        players = tuple(request.players)
        check_table(game, players)
        if len(request.token_sha256) != len(players):
            raise MalformedAction("one token per seat")
        options = json.loads(request.options_json) if request.options_json else {}
        if not isinstance(options, dict):
            raise MalformedAction("options must be an object")
        lot = secrets.randbelow(len(players))
        game.start(len(players), options, Seat(lot))  # the engine validates the options
        return MatchEntry(
            request.match_id, game.name, players, options, tuple(request.token_sha256),
            request.created_unix_ms, lot, partition,
        )

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        entry = self._entry(request)
        if request.match_id in self.actors:
            raise MalformedAction(f"match {request.match_id} exists already")
        game = game_named(entry.game)
        assert game is not None
        epoch = self.epochs.get(entry.partition, 0)
        actor = await MatchActor.create(entry, game, self.storage, epoch, **self._actor_kw())
        self.actors[entry.match_id] = actor
        return host_pb2.HostCreateResponse()

    async def create_tables(self, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse:
        """Every table validated before any is written, then all in one transaction (see host.proto).
        A match id already here with the same game, players and tokens is a retried batch: accepted."""
        entries: list[MatchEntry] = []
        seen: set[str] = set()
        for index, table in enumerate(request.tables):
            try:
                entry = self._entry(table)
            except MalformedAction as error:
                raise MalformedAction(f"table {index + 1} ({table.match_id}): {error}") from None
            if entry.match_id in seen:
                raise MalformedAction(f"table {index + 1}: match id {entry.match_id} twice in the batch")
            seen.add(entry.match_id)
            known = self.actors.get(entry.match_id)
            if known is None:
                entries.append(entry)
            elif (known.entry.game, known.entry.players, known.entry.token_sha256) != (
                entry.game, entry.players, entry.token_sha256
            ):
                raise MalformedAction(f"table {index + 1}: match {entry.match_id} exists already, with other seats")
        await self.storage.create_many(entries, {e.partition: self.epochs.get(e.partition, 0) for e in entries})
        kw = self._actor_kw()

        async def open_one(entry: MatchEntry) -> None:
            game = game_named(entry.game)
            assert game is not None
            epoch = self.epochs.get(entry.partition, 0)
            self.actors[entry.match_id] = await MatchActor.opened(entry, game, self.storage, epoch, **kw)

        await asyncio.gather(*(open_one(entry) for entry in entries))
        return self._states([t.match_id for t in request.tables])

    async def start_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        """Start these held matches now (their time counts from now); started ones are left alone."""
        actors = [self.actor(match_id) for match_id in request.match_ids]
        now = self.clock()
        await asyncio.gather(*(actor.start(now) for actor in actors if actor.scheduled))
        return self._states(list(request.match_ids))

    async def cancel_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        """Void these matches (a batch that could not be created everywhere); unknown ids are skipped."""
        reason = request.reason or VoidReason.CANCELLED
        known = [self.actors[m] for m in request.match_ids if self._owned(m) is not None and m in self.actors]
        await asyncio.gather(*(a.void(reason, Millis(self.clock() - a.entry.created_unix_ms)) for a in known))
        return self._states([a.match_id for a in known])

    def _states(self, match_ids: list[str]) -> host_pb2.HostTablesResponse:
        states = []
        for match_id in match_ids:
            actor = self.actor(match_id)
            status = "scheduled" if actor.scheduled else actor.progress(actor.match).status
            states.append(host_pb2.HostTableState(
                match_id=match_id, status=status, starts_unix_ms=actor.entry.created_unix_ms
            ))
        return host_pb2.HostTablesResponse(tables=states)

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
                await actor.void(request.abandon_reason, Millis(self.clock() - actor.entry.created_unix_ms))
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
