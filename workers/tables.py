"""Many tables on one worker (bulk tables, tournament rounds; the gateway's side is
gateway/tournaments/tables.py): every table of the share validated before any is written, all written in
one transaction, idempotent per match id; started now; voided when the batch could not be made everywhere."""

from __future__ import annotations

import asyncio
import gc
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from protos.tablehall.v1 import host_pb2
from workers.actor import Hosting, MatchActor
from workers.games.engine import Game, Millis
from workers.games.errors import MalformedAction
from workers.storage import MatchEntry, Storage
from workers.voids import VoidReason

T = TypeVar("T")


class MatchHost(Protocol):
    """What bulk tables use of their worker's match host (workers/host.py), which hands its table calls to
    this module: named here, so the two modules do not import each other."""

    storage: Storage
    actors: dict[str, MatchActor]
    ended: OrderedDict[str, MatchActor]
    clock: Callable[[], int]

    async def entry_of(self, request: host_pb2.HostCreateRequest) -> MatchEntry: ...

    async def owned(self, match_id: str) -> int: ...

    async def actor(self, match_id: str) -> MatchActor: ...

    async def while_held(self, partitions: set[int], work: Awaitable[T]) -> T: ...

    def epoch(self, partition: int) -> int: ...

    def game_of(self, entry: MatchEntry) -> Game[Any, Any, Any]: ...

    def hosting(self) -> Hosting: ...

SLICE = 16
"""Tables created or started between two turns of the event loop: a chunk of 250 in one stretch held every
other match's timer for 100–300 ms. After a chunk its matches are frozen out of the cyclic collector
(`gc.freeze`): with 10,000 matches in memory a full collection took 0.3–3.7 s, every timer waiting
(measured with `tablehall bench clocks`; hundreds of `timer_late` voids). Frozen objects are never
collected as cyclic garbage; a match's state and log are not cyclic, so what that keeps is small."""


async def create(host: MatchHost, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse:
    """Every table validated before any is written, then all in one transaction (see host.proto).
    A match id already here with the same game, players and tokens is a retried batch: accepted.
    The clocks of the worker's other matches come first: the work yields to them every `SLICE` tables."""
    entries: list[MatchEntry] = []
    seen: set[str] = set()
    for index, table in enumerate(request.tables):
        if index % SLICE == SLICE - 1:
            await asyncio.sleep(0)  # due timers run before the next tables are checked
        try:
            entry = await host.entry_of(table)
        except MalformedAction as error:
            raise MalformedAction(f"table {index + 1} ({table.match_id}): {error}") from None
        if entry.match_id in seen:
            raise MalformedAction(f"table {index + 1}: match id {entry.match_id} twice in the batch")
        seen.add(entry.match_id)
        known = host.actors.get(entry.match_id) or host.ended.get(entry.match_id)
        if known is None:
            entries.append(entry)
        elif (known.entry.game, known.entry.players, known.entry.token_sha256) != (
            entry.game, entry.players, entry.token_sha256
        ):
            raise MalformedAction(f"table {index + 1}: match {entry.match_id} exists already, with other seats")
    writing = host.storage.create_many(entries, {e.partition: host.epoch(e.partition) for e in entries})
    await host.while_held({e.partition for e in entries}, writing)
    hosting = host.hosting()

    async def open_one(entry: MatchEntry) -> None:
        epoch = host.epoch(entry.partition)
        host.actors[entry.match_id] = await MatchActor.opened(entry, host.game_of(entry), host.storage, epoch, hosting)

    for first in range(0, len(entries), SLICE):
        await asyncio.gather(*(open_one(entry) for entry in entries[first : first + SLICE]))
        await asyncio.sleep(0)
    gc.freeze()  # the new matches live long: the collector's full passes need not scan them again (see SLICE)
    return await states(host, [t.match_id for t in request.tables])

async def start(host: MatchHost, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
    """Start these held matches now (their time counts from now); started ones are left alone."""
    actors = [await host.actor(match_id) for match_id in request.match_ids]
    now = host.clock()
    held = [actor for actor in actors if actor.scheduled]
    for first in range(0, len(held), SLICE):
        await asyncio.gather(*(actor.start(now) for actor in held[first : first + SLICE]))
        await asyncio.sleep(0)  # due timers of other matches run between slices
    return await states(host, list(request.match_ids))

async def cancel(host: MatchHost, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
    """Void these matches (a batch that could not be created everywhere); unknown ids are skipped."""
    reason = request.reason or VoidReason.CANCELLED
    for match_id in request.match_ids:
        await host.owned(match_id)
    known = [host.actors[m] for m in request.match_ids if m in host.actors]
    await asyncio.gather(*(a.void(reason, Millis(host.clock() - a.entry.created_unix_ms)) for a in known))
    return await states(host, [a.match_id for a in known])

async def states(host: MatchHost, match_ids: list[str]) -> host_pb2.HostTablesResponse:
    states = []
    for match_id in match_ids:
        actor = await host.actor(match_id)
        status = "scheduled" if actor.scheduled else actor.progress(actor.match).status
        states.append(host_pb2.HostTableState(
            match_id=match_id, status=status, starts_unix_ms=actor.entry.created_unix_ms
        ))
    return host_pb2.HostTablesResponse(tables=states)

