"""Many tables at once: check a whole batch before anything exists, then send each worker its share.

All or nothing: `check_batch` refuses the whole batch for any bad table (unknown game, seat count, a
name, a player at two tables, options the engine refuses) before a single match exists. `send` then
gives every worker its share in chunks (`HostCreateTables`: one transaction per chunk), workers in
parallel. Creation is idempotent per match id, so a share whose reply was lost, or whose partitions moved
meanwhile, is simply sent again where its matches are (`Router.each_worker`); a worker that still fails
makes `send` raise, and the caller either voids what was made (`cancel`: bulk tables, whose tokens nobody
has yet) or sends the same batch again later (tournament rounds, which are written to the database first).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.tournaments.errors import BatchRejected
from gateway.workers import Router, WorkerClient
from protos.tablehall.v1 import host_pb2
from workers.games.catalog import game_named, unknown_game
from workers.games.engine import Rules, Seat
from workers.games.errors import MalformedAction, quote
from workers.host import check_table
from workers.voids import VoidReason

log = logging.getLogger("tablehall.tournaments")

MAX_TABLES = 5000
"""Tables per call at most (Lichess's bulk pairing takes 500)."""
CHUNK = 250
"""Tables per internal CreateTables call: bounds a message and a transaction, and paces the progress bar."""


@dataclass(frozen=True, slots=True)
class PlannedTable:
    match_id: str
    players: tuple[str, ...]
    token_sha256: tuple[bytes, ...]


def new_match_id() -> str:
    return secrets.token_hex(8)


def check_batch(game_name: str, tables: Sequence[Sequence[str]], options: Mapping[str, Any]) -> Rules[Any, Any, Any]:
    """The whole batch is valid, or `BatchRejected` says which table and why."""
    game = game_named(game_name)
    if game is None:
        raise BatchRejected(unknown_game(game_name))
    if not 1 <= len(tables) <= MAX_TABLES:
        raise BatchRejected(f"a batch has 1 to {MAX_TABLES} tables, not {len(tables)}")
    seated: dict[str, int] = {}
    sizes: set[int] = set()
    for number, players in enumerate(tables, 1):
        try:
            check_table(game, tuple(players))
        except MalformedAction as error:
            raise BatchRejected(f"table {number}: {error}") from None
        for name in players:
            if name in seated:
                where = "twice at that table" if seated[name] == number else f"also at table {seated[name]}"
                raise BatchRejected(f"table {number}: player {quote(name)} is {where}; nothing was created")
            seated[name] = number
        sizes.add(len(players))
    for size in sorted(sizes):
        try:
            game.start(size, options, Seat(0))
        except MalformedAction as error:
            raise BatchRejected(f"options: {error}") from None
    return game


def requests(
    game: str, options_json: str, origin_unix_ms: int, tables: Sequence[PlannedTable]
) -> list[host_pb2.HostCreateRequest]:
    return [
        host_pb2.HostCreateRequest(
            match_id=t.match_id, game=game, players=list(t.players), options_json=options_json,
            token_sha256=list(t.token_sha256), created_unix_ms=origin_unix_ms,
        )
        for t in tables
    ]


async def send(
    router: Router,
    creates: Sequence[host_pb2.HostCreateRequest],
    progress: Callable[[int], Awaitable[None]] | None = None,
) -> None:
    """Create every match on its worker, chunk by chunk; `progress(n)` after each chunk of n new tables.
    A share whose worker moved or failed is sent again where its matches are now (creation is idempotent)."""
    by_id = {c.match_id: c for c in creates}
    done: set[str] = set()

    async def one_worker(worker: WorkerClient, match_ids: list[str]) -> None:
        for start in range(0, len(match_ids), CHUNK):
            chunk = host_pb2.HostCreateTablesRequest(tables=[by_id[m] for m in match_ids[start : start + CHUNK]])
            await worker.create_tables(chunk)
            fresh = [t.match_id for t in chunk.tables if t.match_id not in done]
            done.update(fresh)
            if progress is not None and fresh:
                await progress(len(fresh))

    await router.each_worker(list(by_id), one_worker)


async def start(router: Router, match_ids: Sequence[str]) -> list[host_pb2.HostTableState]:
    """Start held matches now; returns every table's state afterwards."""

    async def one_worker(worker: WorkerClient, ids: list[str]) -> list[host_pb2.HostTableState]:
        reply = await worker.start_tables(host_pb2.HostTablesRequest(match_ids=ids))
        return list(reply.tables)

    shares = await router.each_worker(match_ids, one_worker)
    return [state for share in shares for state in share]


async def cancel(router: Router, match_ids: Sequence[str], reason: str = VoidReason.CANCELLED.value) -> None:
    """Void whatever of these matches exists (best effort: a worker that is down voids nothing, and its
    tables, whose tokens nobody holds, end as abandoned through the sweeps)."""

    async def one_worker(worker: WorkerClient, ids: list[str]) -> None:
        await worker.cancel_tables(host_pb2.HostTablesRequest(match_ids=ids, reason=reason))

    try:
        await router.each_worker(match_ids, one_worker)
    except Exception as error:
        log.warning("could not cancel %d tables: %s", len(match_ids), error)
