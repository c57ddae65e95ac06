"""A worker's matches: serves the partitions it holds, loads their unfinished matches when it takes one
and lets them go when it hands one over, routes each request to its match's actor, loads an ended match
on demand from the log, and refuses matches of partitions it does not hold.

Which partitions it holds is decided outside: `start()` takes the static share p mod N = ordinal (the
embedded service and the static mode), `workers.leases.LeaseKeeper` takes and gives partitions by leases.

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
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from protos.tablehall.v1 import host_pb2, matches_pb2
from workers import metrics, tables
from workers.actor import Hosting, MatchActor, unix_ms
from workers.errors import NotFound, NotOwner, Unavailable
from workers.following import Sink, Unfollow
from workers.games.catalog import game_named, unknown_game
from workers.games.engine import JSON, Game, Millis, Rules, Seat
from workers.games.errors import MalformedAction
from workers.partitions import PARTITIONS, partition_of
from workers.storage import FencedOut, MatchEntry, MemoryStorage, Storage, Stored
from workers.typed_views.legal import action_dict
from workers.voids import VoidReason
from workers.wire import Posted

log = logging.getLogger("tablehall.worker")
T = TypeVar("T")

ENDED_CACHE = 10_000
"""Ended matches loaded on demand (reads after a restart or a hand-off) kept in memory, newest used last."""
ARRIVAL_WAIT_S = 3.0
"""A request for a partition this worker is taking over waits this long at most for it to be served."""
EXPECT_S = 2.0
"""A partition announced as coming (`expect`) is waited for this long at most."""


@dataclass
class Held:
    """A partition this worker serves: the epoch its writes carry; `leaving` once its hand-off began."""

    epoch: int
    leaving: bool = False


def check_table(game: Rules[Any, Any, Any], players: tuple[str, ...]) -> None:
    """Seats and names of one table (the gateway checks a whole batch with this before sending it)."""
    if not game.min_seats <= len(players) <= game.max_seats:
        raise MalformedAction(f"{game.name} takes {game.min_seats} to {game.max_seats} players, not {len(players)}")
    if any(not p.strip() or len(p) > 64 for p in players):
        raise MalformedAction("every player needs a name of 1 to 64 characters")


def action_json(action: matches_pb2.Action) -> dict[str, JSON]:
    """A typed wire action as the record event the engines read (`{"do": "play", "tile": "6-4", ...}`): its
    set fields under their own names, as protobuf's JSON form has them (tests/test_action_json.py)."""
    if action.WhichOneof("kind") is None:
        raise MalformedAction("the action is empty: set one of ready, play, bid, ...")
    return action_dict(action)


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
        hop: bool = True,
    ) -> None:
        self.storage: Storage = storage if storage is not None else MemoryStorage()
        self.hop = hop
        """Observe `tablehall_gateway_worker_hop_seconds` (False in the gateway's own process: no hop)."""
        self.ordinal = ordinal
        self.workers = workers
        self.tolerance_ms = tolerance_ms
        self.owner = owner or f"worker-{ordinal}-{os.getpid()}-{secrets.token_hex(3)}"
        self.held: dict[int, Held] = {p: Held(0) for p in range(PARTITIONS) if p % workers == ordinal}
        """The partitions served here. Until `start()` claims them (or a lease keeper takes over) this is
        the static share with epoch 0, which an unclaimed in-memory store accepts."""
        self.lost: dict[int, asyncio.Future[None]] = {}
        """Per partition, resolved when it is lost: calls waiting on the store for it stop waiting."""
        self.moved: dict[int, str] = {}
        """Where each partition handed over from here went (the new owner's address), told to whoever still
        asks here, until the gateways' routes say so too."""
        self.arriving: dict[int, asyncio.Event] = {}
        """Partitions being taken over: their requests wait for them (ARRIVAL_WAIT_S at most)."""
        self.valid_until: float | None = None
        """Leases: the loop time after which this worker may no longer serve (None: static, no lease)."""
        self.actors: dict[str, MatchActor] = {}
        self.ended: OrderedDict[str, MatchActor] = OrderedDict()
        """Ended matches loaded from the log on demand (bounded: ENDED_CACHE)."""
        self.beating: asyncio.Task[None] | None = None
        self.on_finished = on_finished
        """Hook for the rating job: called with a match id when a match finishes with a result."""
        self.on_ended = on_ended
        """Hook for tournaments: called with a match id when a match ends, with a result or voided."""
        self.clock = clock
        """The wall clock in unix ms (tests inject one): starts of scheduled matches, deadlines."""
        metrics.track(self)

    @property
    def partitions(self) -> list[int]:
        return sorted(self.held)

    async def start(self) -> None:
        """Static ownership: claim this worker's share (p mod N = ordinal) with new epochs, fencing out any
        earlier owner, and carry on their unfinished matches (SB-11 on a long outage)."""
        partitions = self.partitions
        last_alive = await self.storage.last_heartbeat(partitions)
        epochs = await self.storage.claim(self.owner, partitions)
        now = self.clock()
        await self.storage.heartbeat(self.owner, now)
        self.held = {}
        await self.acquire(epochs, dict.fromkeys(epochs, last_alive))
        self.beating = asyncio.create_task(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.tolerance_ms / 4000)
            with contextlib.suppress(Exception):
                await self.storage.heartbeat(self.owner, unix_ms())

    async def acquire(self, epochs: Mapping[int, int], last_alive: Mapping[int, int | None]) -> list[MatchActor]:
        """Serve these partitions, just claimed with these epochs: load their unfinished matches and go on.
        A running clock whose partition was unserved (since `last_alive`) longer than the tolerance is
        voided `worker_down` (SB-11); a shorter outage is the thinking time of whoever is to act."""
        for partition in epochs:
            self.arriving.setdefault(partition, asyncio.Event())
        try:
            restored = self._restore(await self.storage.unfinished(list(epochs)), epochs)
            now = self.clock()
            voided = 0
            for actor, stored in restored:
                alive = last_alive.get(actor.entry.partition)
                outage = None if alive is None else now - alive
                if stored.progress.clock_running and outage is not None and outage > self.tolerance_ms:
                    metrics.FAULTS.labels("worker_down").inc()
                    await actor.void(VoidReason.WORKER_DOWN, Millis(now - actor.entry.created_unix_ms))
                    voided += 1
                await actor.resume()
            for partition, epoch in epochs.items():
                self.held[partition] = Held(epoch)
                self.moved.pop(partition, None)
        finally:
            for partition in epochs:
                event = self.arriving.pop(partition, None)
                if event is not None:
                    event.set()
        outages = sorted({now - a for a in last_alive.values() if a is not None})
        log.log(
            logging.INFO if restored or len(epochs) > 1 else logging.DEBUG,
            "%s serves %d more partitions (%d held); recovered %d matches (%d voided: unserved %s ms)",
            self.owner, len(epochs), len(self.held), len(restored), voided, outages[-1] if outages else None,
        )
        return [actor for actor, _ in restored]

    def _restore(self, found: list[Stored], epochs: Mapping[int, int]) -> list[tuple[MatchActor, Stored]]:
        # Recovery builds many long-lived objects at once; with the cyclic collector on, each burst of
        # allocations rescans all of them (a third of the time for 10,000 matches). Nothing built here is
        # cyclic garbage, so it runs without it; the collector is back on once it is done.
        collecting = gc.isenabled()
        gc.disable()
        try:
            restored = []
            hosting = self.hosting()
            for stored in found:
                game = game_named(stored.entry.game)
                assert game is not None
                epoch = epochs[stored.entry.partition]
                actor = MatchActor.restore(stored, game, self.storage, epoch, hosting)
                self.actors[actor.match_id] = actor
                restored.append((actor, stored))
            return restored
        finally:
            gc.freeze()  # long-lived: full collections need not scan them again (workers/tables.py, SLICE)
            if collecting:
                gc.enable()

    def expect(self, partition: int) -> None:
        """A peer is about to hand this partition over: hold its requests until it arrives (`acquire`), for
        `EXPECT_S` at most, instead of refusing them."""
        if partition in self.held or partition in self.arriving:
            return
        event = self.arriving[partition] = asyncio.Event()

        def give_up() -> None:
            if self.arriving.get(partition) is event:
                del self.arriving[partition]
                event.set()

        asyncio.get_running_loop().call_later(EXPECT_S, give_up)

    async def release(self, partition: int, moved_to: str = "") -> None:
        """Stop serving a partition (a hand-off): refuse its new requests (`moved_to` says where to go),
        let every change already in its matches' mailboxes finish, then close them (their watchers are told
        to resume elsewhere). The lease itself is given up by the caller, after this."""
        held = self.held.get(partition)
        if held is None:
            return
        held.leaving = True
        if moved_to:
            self.moved[partition] = moved_to
        actors = [a for a in self.actors.values() if a.entry.partition == partition]
        # a deadline timer may queue a change in one mailbox while another is still settling: close only
        # once all of them are idle at the same moment, so that no change is cut off mid-commit
        while any(a.mailbox.busy for a in actors):
            await asyncio.gather(*(a.mailbox.settled() for a in actors))
        self._drop(partition)

    def lose(self, partition: int, why: str) -> None:
        """Stop serving a partition at once: its lease is gone (fenced, expired, cut off)."""
        if partition in self.held:
            log.error("%s: partition %d %s; no longer serving it", self.owner, partition, why)
        self._drop(partition)

    def _drop(self, partition: int) -> None:
        self.held.pop(partition, None)
        lost = self.lost.pop(partition, None)
        if lost is not None and not lost.done():
            lost.set_result(None)
        for table in (self.actors, self.ended):
            for match_id in [m for m, a in table.items() if a.entry.partition == partition]:
                table.pop(match_id).close()

    def hosting(self) -> Hosting:
        """What this host gives each of its actors (read when an actor is made: the host's settings now)."""
        return Hosting(
            clock=self.clock, tolerance_ms=self.tolerance_ms,
            on_fenced=self._fenced, on_finished=self.on_finished, on_ended=self.on_ended,
        )

    def _fenced(self, actor: MatchActor, error: FencedOut) -> None:
        """Another process claimed this partition: stop serving all of its matches here (unless the write
        came from an actor of an earlier lease of the partition, closed already: this worker holds it anew)."""
        held = self.held.get(actor.entry.partition)
        if held is not None and held.epoch == actor.epoch:
            self.lose(actor.entry.partition, "is owned by another worker now")

    def _refuse(self, match_id: str, partition: int) -> NotOwner:
        moved_to = self.moved.get(partition, "")
        where = f"; it moved to {moved_to}" if moved_to else ""
        return NotOwner(f"worker {self.owner} does not own match {match_id}{where}", moved_to)

    async def owned(self, match_id: str) -> int:
        """The match's partition, if this worker serves it now (a partition being taken over is waited for)."""
        partition = partition_of(match_id)
        if partition not in self.held and partition in self.arriving:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arriving[partition].wait(), ARRIVAL_WAIT_S)
        self._serving(match_id, partition)
        return partition

    def _serving(self, match_id: str, partition: int) -> None:
        """Refuse (NotOwner) unless this worker serves `partition` now."""
        held = self.held.get(partition)
        if held is None or held.leaving:
            raise self._refuse(match_id, partition)
        if self.valid_until is not None and asyncio.get_running_loop().time() > self.valid_until:
            raise NotOwner(f"worker {self.owner} does not own match {match_id}: its lease ran out")

    async def while_held(self, partitions: set[int], work: Awaitable[T]) -> T:
        """`work` (on the store, for these partitions), given up as unavailable if one of them is lost
        meanwhile: a worker cut off from its database answers now, not when the store would. Only for work
        that may be sent again (it is idempotent: creating a match, reading one)."""
        loop = asyncio.get_running_loop()
        losses = [self.lost.setdefault(p, loop.create_future()) for p in partitions if p in self.held]
        task = asyncio.ensure_future(work)
        if not losses:
            return await task
        waiting: list[asyncio.Future[Any]] = [task, *losses]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        raise Unavailable("this worker lost the match's partition during the call; it may be sent again")

    def epoch(self, partition: int) -> int:
        held = self.held.get(partition)
        return held.epoch if held is not None else 0

    async def actor(self, match_id: str) -> MatchActor:
        """The match's actor: a live one, or an ended one loaded from the log (NotFound if none)."""
        live = self._live(match_id)
        if live is not None:
            return live
        await self.owned(match_id)
        actor = self.actors.get(match_id) or self.ended.get(match_id)
        if actor is None:
            actor = await self._load(match_id)
        elif match_id in self.ended:
            self.ended.move_to_end(match_id)
        return actor

    def _live(self, match_id: str) -> MatchActor | None:
        """A running match's actor, its partition served here (NotOwner if no longer); None: not in memory,
        or its partition not held (`actor` then waits for an arriving one, or refuses). The command path:
        no hash of the id, no coroutine."""
        live = self.actors.get(match_id)
        if live is None or live.entry.partition not in self.held:
            return None
        self._serving(match_id, live.entry.partition)
        return live

    async def _load(self, match_id: str) -> MatchActor:
        stored = await self.while_held({partition_of(match_id)}, self.storage.load(match_id))
        known = self.actors.get(match_id) or self.ended.get(match_id)  # loaded meanwhile by another request
        if known is not None:
            return known
        if stored is None:
            raise NotFound(f"no match {match_id!r}")
        game = game_named(stored.entry.game)
        assert game is not None
        actor = MatchActor.restore(stored, game, self.storage, self.epoch(stored.entry.partition), self.hosting())
        if actor.match.over:
            self.ended[match_id] = actor
            while len(self.ended) > ENDED_CACHE:
                self.ended.popitem(last=False)[1].close()
        else:  # an unfinished match not yet in memory (created by another process meanwhile): serve it
            self.actors[match_id] = actor
            await actor.resume()
        return actor

    async def entry_of(self, request: host_pb2.HostCreateRequest) -> MatchEntry:
        """A validated new match (owned partition, known game, seats, names, tokens, the engine's options)."""
        partition = await self.owned(request.match_id)
        game = game_named(request.game)
        if game is None:
            raise MalformedAction(unknown_game(request.game))
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

    def game_of(self, entry: MatchEntry) -> Game[Any, Any, Any]:
        game = game_named(entry.game)
        assert game is not None
        return game

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        """Create a match. Sent again (its answer lost, its partition moved meanwhile) it is found with the
        same seats and accepted: creating is idempotent per match id."""
        entry = await self.entry_of(request)
        known = self.actors.get(request.match_id)
        if known is not None:
            if (known.entry.game, known.entry.players, known.entry.token_sha256) != (
                entry.game, entry.players, entry.token_sha256
            ):
                raise MalformedAction(f"match {request.match_id} exists already")
            return host_pb2.HostCreateResponse()
        epoch = self.epoch(entry.partition)
        creating = MatchActor.create(entry, self.game_of(entry), self.storage, epoch, self.hosting())
        actor = await self.while_held({entry.partition}, creating)
        self.actors[entry.match_id] = actor
        return host_pb2.HostCreateResponse()

    async def create_tables(self, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse:
        return await tables.create(self, request)

    async def start_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        return await tables.start(self, request)

    async def cancel_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        return await tables.cancel(self, request)

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        started = time.perf_counter()
        if request.arrival_unix_ms and self.hop:
            metrics.HOP.observe(max(0, time.time_ns() // 1_000_000 - request.arrival_unix_ms) / 1000)
        actor = self._live(request.match_id) or await self.actor(request.match_id)
        claimed = request.seat if request.HasField("seat") else None
        try:
            seq, seat = await actor.command(
                request.token_sha256, claimed, action_json(request.action), request.arrival_unix_ms
            )
        finally:
            kind = request.action.WhichOneof("kind") or "none"
            metrics.command_duration(actor.entry.game, kind.rstrip("_")).observe(time.perf_counter() - started)
        return actor.reply(seat, seq, request.views, with_view=not request.no_view)

    async def follow(self, request: host_pb2.HostWatchRequest, sink: Sink[Posted]) -> Unfollow:
        """Push the watch's updates to `sink` (workers/following.py); refused here, or ended on the sink."""
        actor = await self.actor(request.match_id)
        watcher = await actor.follow(request.token_sha256, request.after_seq, request.views, sink)
        return lambda: actor.unfollow(watcher)

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[Posted]:
        actor = await self.actor(request.match_id)
        async for posted in actor.watch(request.token_sha256, request.after_seq, request.views):
            yield posted

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update:
        actor = await self.actor(request.match_id)
        seat = actor.seat_of(request.token_sha256) if request.token_sha256 else None
        return actor.update(seat, actor.seq, request.views)

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record:
        record = (await self.actor(request.match_id)).record()
        return matches_pb2.Record(record_json=json.dumps(record))

    async def settle(self, request: host_pb2.HostSettleRequest) -> host_pb2.HostSettleResponse:
        """For the sweeps: run an overdue deadline, or close an abandoned table (ratings/sweep.py)."""
        actor = await self.actor(request.match_id)
        if request.abandon_reason:
            if not (request.only_if_untouched and actor.match.log is not None):
                await actor.void(request.abandon_reason, Millis(self.clock() - actor.entry.created_unix_ms))
        else:
            await actor.settle()
        progress = actor.progress(actor.match)
        return host_pb2.HostSettleResponse(status=progress.status, void_reason=progress.void_reason or "")

    def census(self) -> metrics.Census:
        """What the scrape-time gauges count here: live matches and their watchers by game, partitions."""
        active: Counter[str] = Counter()
        watching: Counter[str] = Counter()
        for actor in list(self.actors.values()):
            if actor.closed:
                continue
            watching[actor.entry.game] += len(actor.watchers)
            if not actor.match.over:
                active[actor.entry.game] += 1
        return metrics.Census(active, watching, len(self.held))

    async def stop(self) -> None:
        """Stop serving everything here (the process is ending)."""
        self.close()

    def close(self) -> None:
        metrics.untrack(self)
        if self.beating is not None:
            self.beating.cancel()
        for actor in [*self.actors.values(), *self.ended.values()]:
            actor.close()
