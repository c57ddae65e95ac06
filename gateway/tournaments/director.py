"""Runs batches and tournaments: validates, writes them to the database, creates their tables on the
workers, and moves each tournament on when its round has ended.

Stateless apart from a lock per tournament (one process never plans the same round twice at once); any
number of directors (gateway replicas, the embedded jobs, Celery tasks) may run side by side, since the
database decides which one writes a round (store.insert_batch). Blocking database work runs in threads.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from gateway.service import new_token
from gateway.tournaments import pairing, rounds, store, tables
from gateway.tournaments.changes import CHANGES
from gateway.tournaments.errors import BatchRejected, NotYours, RoundNotOver, TournamentOver
from gateway.tournaments.organizers import Organizer
from gateway.tournaments.tables import PlannedTable
from gateway.workers import Router
from workers.actor import unix_ms
from workers.errors import NotFound, ServiceError, Unavailable
from workers.games.catalog import game_named
from workers.games.engine import Seat
from workers.games.errors import MalformedAction, RulesError, quote

log = logging.getLogger("tablehall.tournaments")

MAX_AHEAD_MS = 366 * 24 * 3600 * 1000
DEFAULT_PAUSE_MS = 30_000
STALE_MS = 15_000
"""A batch still `creating` this long after its last progress is taken over (its creator stopped)."""
FRESH_MS = 250
"""How old a snapshot the players' assignment calls may read (every entrant polls between tables)."""


def sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def seat_hashes(tournament_id: str, players: Sequence[str], token_sha256: Mapping[str, bytes]) -> tuple[bytes, ...]:
    """The seat-token hashes of one tournament table: each player's tournament-token hash, as stored. Their
    seat token at the table is then their tournament token itself, and nothing kept anywhere makes one.
    One token tells seats apart only if its player sits at most once at the table: tournaments never plan
    a player twice at one table, and a table that did is refused here (ValueError) rather than created."""
    twice = sorted({p for p in players if players.count(p) > 1})
    if twice:
        raise ValueError(f"tournament {tournament_id}: {', '.join(twice)} planned twice at one table")
    return tuple(token_sha256[p] for p in players)


@dataclass(frozen=True, slots=True)
class CreatedTable:
    match_id: str
    players: tuple[str, ...]
    tokens: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CreatedBatch:
    batch_id: str
    starts_unix_ms: int
    tables: tuple[CreatedTable, ...]


@dataclass(frozen=True, slots=True)
class TournamentSpec:
    name: str
    game: str
    players: tuple[str, ...]
    format: str
    rounds: int = 0
    options: dict[str, Any] | None = None
    start_unix_ms: int | None = None
    voided: str = "replay"
    manual: bool = False
    round_pause_ms: int | None = None
    spectator_delay_s: int = 0


MAX_SPECTATOR_DELAY_S = 3600


class Director:
    def __init__(self, engine: Engine, router: Router, clock: Callable[[], int] = unix_ms) -> None:
        self.engine = engine
        self.router = router
        self.clock = clock
        self.locks: dict[str, asyncio.Lock] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.recent: dict[str, tuple[int, store.Snapshot]] = {}
        self.pairing: dict[str, int] = {}
        """Tournaments whose next round this process is pairing now, and that round."""
        self.problems: dict[str, tuple[int, str]] = {}
        """The round whose pairing failed here last, and why (shown until that round is written, by any
        director: the service's and the periodic pass's are different objects)."""

    async def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, self.engine, *args)

    def _origin(self, start_unix_ms: int | None) -> int:
        now = self.clock()
        if start_unix_ms is None or start_unix_ms <= now:
            return now
        if start_unix_ms - now > MAX_AHEAD_MS:
            raise BatchRejected("the start may be at most a year ahead")
        return start_unix_ms

    # --- bulk tables ---------------------------------------------------------------------------------

    async def create_tables(
        self,
        organizer: Organizer,
        game_name: str,
        seating: Sequence[Sequence[str]],
        options: dict[str, Any],
        start_unix_ms: int | None,
    ) -> CreatedBatch:
        """All or nothing (tables.py): checked in full, written, created on every worker; if a worker
        fails, what was made is voided `cancelled` (nobody has its tokens) and the call fails."""
        game = tables.check_batch(game_name, seating, options)
        origin = self._origin(start_unix_ms)
        created: list[CreatedTable] = []
        planned: list[PlannedTable] = []
        for players in seating:
            match_id = tables.new_match_id()
            tokens = tuple(new_token() for _ in players)
            created.append(CreatedTable(match_id, tuple(players), tokens))
            planned.append(PlannedTable(match_id, tuple(players), tuple(sha256(t) for t in tokens)))
        batch = store.Batch(secrets.token_hex(8), organizer.id, game.name, dict(options), origin, len(planned))
        await self._db(store.insert_batch, batch, planned)
        try:
            await tables.send(self.router, tables.requests(game.name, json.dumps(options), origin, planned))
        except Exception as error:
            await tables.cancel(self.router, [t.match_id for t in planned])
            await self._db(store.batch_status, batch.id, "cancelled")
            log.warning("batch %s cancelled: %s", batch.id, error)
            if isinstance(error, ServiceError | RulesError) and not isinstance(error, Unavailable):
                raise
            raise Unavailable(
                f"a worker failed while the tables were created ({error}); the tables already made were voided, "
                "nothing can be played: send the batch again"
            ) from None
        await self._db(store.batch_status, batch.id, "created")
        return CreatedBatch(batch.id, origin, tuple(created))

    async def owned_batch(self, organizer: Organizer, batch_id: str) -> tuple[store.Batch, list[PlannedTable]]:
        loaded = await self._db(store.load_batch, batch_id)
        if loaded is None or loaded[0].status == "cancelled":
            raise NotFound(f"no batch {quote(batch_id)}")
        if loaded[0].organizer_id != organizer.id:
            raise NotYours(f"batch {batch_id} belongs to another organizer")
        return loaded  # type: ignore[no-any-return]

    async def start_tables(self, organizer: Organizer, batch_id: str) -> tuple[int, int]:
        """Start a batch's held tables now: (how many this call started, when their clocks started).

        A batch is held while its start is ahead. Every call asks the workers to start its tables (started
        ones are left alone, so a call cut short is finished by the next); the one call that moves the
        batch's start to now in the database counts the tables it started. Any other call — a batch that
        started at creation or at its time, a second call, a concurrent one — started none."""
        batch, planned = await self.owned_batch(organizer, batch_id)
        if batch.status != "created":
            raise Unavailable(f"batch {batch_id} is still being created: start it once it is")
        held = batch.starts_unix_ms > self.clock()
        states = await tables.start(self.router, [t.match_id for t in planned])
        at = min(self.clock(), batch.starts_unix_ms)
        if held and await self._db(store.claim_early_start, batch_id, batch.starts_unix_ms, at):
            return sum(1 for s in states if s.status != "scheduled"), at
        return 0, at

    # --- tournaments -------------------------------------------------------------------------------

    async def create_tournament(
        self, organizer: Organizer, spec: TournamentSpec
    ) -> tuple[str, list[tuple[int, str, str]]]:
        """Store the tournament and round 1 (its tables are created in the background: `deliver`).
        Returns the tournament id and (seed, player, token) for each player, the tokens shown once."""
        count = rounds.check_settings(spec.game, spec.format, spec.rounds, spec.players)
        game = game_named(spec.game)
        assert game is not None
        options = dict(spec.options or {})
        for size in range(game.min_seats, game.max_seats + 1):
            try:
                game.start(size, options, Seat(0))
            except MalformedAction as error:
                raise BatchRejected(f"options: {error}") from None
        if spec.voided not in ("replay", "draw"):
            raise BatchRejected(f"voided tables are 'replay'ed or counted as a 'draw', not {quote(spec.voided)}")
        pause = DEFAULT_PAUSE_MS if spec.round_pause_ms is None else spec.round_pause_ms
        if not 0 <= pause <= 24 * 3600 * 1000:
            raise BatchRejected("the pause between rounds is 0 to 86400 s")
        if not 1 <= len(spec.name.strip()) <= 128:
            raise BatchRejected("a tournament needs a name of 1 to 128 characters")
        if not 0 <= spec.spectator_delay_s <= MAX_SPECTATOR_DELAY_S:
            raise BatchRejected(f"the spectator delay is 0 to {MAX_SPECTATOR_DELAY_S} s")
        tournament_id = secrets.token_hex(8)
        tournament = store.Tournament(
            tournament_id, organizer.id, spec.name.strip(), game.name, spec.format, count, options, spec.voided,
            spec.manual, pause, self._origin(spec.start_unix_ms), "running", 0, spec.players,
            spec.spectator_delay_s * 1000,
        )
        tokens = [new_token() for _ in spec.players]
        players = [
            store.NewPlayer(seed, name, sha256(token))
            for seed, (name, token) in enumerate(zip(spec.players, tokens, strict=True), 1)
        ]
        await self._db(store.insert_tournament, tournament, players)
        self.spawn(self._first_round(tournament_id))  # paired in the pool, then its tables created: `state`
        return tournament_id, [(p.seed, p.name, t) for p, t in zip(players, tokens, strict=True)]

    async def _first_round(self, tournament_id: str) -> None:
        try:
            await self.step(tournament_id)
        except Exception:
            log.exception("tournament %s: round 1 not created yet; the periodic pass tries again", tournament_id)

    async def snapshot(self, tournament_id: str, organizer: Organizer | None = None) -> store.Snapshot:
        """The tournament as it stands (results of tables that ended since recorded first)."""
        await self._db(store.refresh, tournament_id)
        snap: store.Snapshot | None = await self._db(store.snapshot, tournament_id)
        if snap is None:
            raise NotFound(f"no tournament {quote(tournament_id)}")
        if organizer is not None and snap.tournament.organizer_id != organizer.id:
            raise NotYours(f"tournament {tournament_id} belongs to another organizer")
        return snap

    async def recent_snapshot(self, tournament_id: str, max_age_ms: int | None = None) -> store.Snapshot:
        """A snapshot at most FRESH_MS (or `max_age_ms`) old, results not refreshed (the hook and the passes do
        that): what many polling players read, at the cost of one database read per tournament per FRESH_MS."""
        now = self.clock()
        cached = self.recent.get(tournament_id)
        if cached is not None and now - cached[0] < (FRESH_MS if max_age_ms is None else max_age_ms):
            return cached[1]
        snap: store.Snapshot | None = await self._db(store.snapshot, tournament_id)
        if snap is None:
            raise NotFound(f"no tournament {quote(tournament_id)}")
        self.recent[tournament_id] = (now, snap)
        return snap

    async def advance(self, tournament_id: str, by_organizer: bool = False) -> str | None:
        """The tournament's next step once its round has ended: replays of voided tables, the next round,
        or the end. Returns the id of a batch it wrote (to `deliver`), None if there was nothing to do.
        Automatically (`by_organizer` False) a `manual` tournament only records results and ends."""
        lock = self.locks.setdefault(tournament_id, asyncio.Lock())
        async with lock:
            snap = await self.snapshot(tournament_id)
            t, history = snap.tournament, snap.history()
            settings = t.settings()
            if t.status != "running":
                if by_organizer:
                    raise TournamentOver(f"tournament {tournament_id} is over")
                return None
            number = t.current_round
            if number == 0:
                return await self._round(snap, 1, t.starts_unix_ms)
            state = rounds.round_state(settings, history, number)
            if state == "playing":
                if by_organizer:
                    playing = sum(1 for x in rounds.latest(history, number).values() if x.status == "playing")
                    raise RoundNotOver(f"round {number} still has {playing} table(s) playing")
                return None
            if state == "ended" and number >= t.rounds:
                await self._db(store.finish, tournament_id)
                log.info("tournament %s finished after round %d", tournament_id, number)
                return None
            if t.manual and not by_organizer:
                return None
            start = self.clock() + t.round_pause_ms
            if state == "replay":
                return await self._replays(snap, number, start)
            return await self._round(snap, number + 1, start)

    def state(self, snap: store.Snapshot) -> tuple[str, str]:
        """The tournament's status and its detail as callers see them: `pairing` while a round is paired (round
        1 until it is written, read from the database; a later one while this process pairs it),
        `pairing_failed` with the reason once a pairing failed here (the next pass tries again)."""
        t = snap.tournament
        if t.status != "running":
            return t.status, ""
        failed = self.problems.get(t.id)
        if failed is not None and failed[0] > t.current_round:  # not written since by any director
            return "pairing_failed", failed[1]
        number = self.pairing.get(t.id, 1 if t.current_round == 0 else None)
        if number is not None and number > t.current_round:
            return "pairing", f"round {number} is being paired"
        return t.status, ""

    async def _round(self, snap: store.Snapshot, number: int, origin: int) -> str | None:
        t = snap.tournament
        self.pairing[t.id] = number
        try:
            plan = await pairing.plan(t.settings(), snap.history(), number)  # a process pool: never the clocks' GIL
        except pairing.PairingFailed as error:
            self.problems[t.id] = (number, str(error))
            raise
        finally:
            self.pairing.pop(t.id, None)
        self.problems.pop(t.id, None)
        planned = await self._planned(t.id, plan.tables)
        batch = store.Batch(f"{t.id}-r{number}-a0", t.organizer_id, t.game, t.options, origin, len(planned),
                            t.id, number, 0)  # fmt: skip
        if not await self._db(store.insert_batch, batch, planned, plan.byes, number):
            return None
        log.info("tournament %s: round %d planned, %d tables", t.id, number, len(planned))
        return batch.id

    async def _replays(self, snap: store.Snapshot, number: int, origin: int) -> str | None:
        t = snap.tournament
        replay = rounds.to_replay(t.settings(), snap.history(), number)
        attempt = 1 + max(b.attempt for b in snap.batches if b.round == number)
        planned = await self._planned(t.id, [x.players for x in replay])
        batch = store.Batch(f"{t.id}-r{number}-a{attempt}", t.organizer_id, t.game, t.options, origin, len(planned),
                            t.id, number, attempt)  # fmt: skip
        numbers = [x.table for x in replay]
        if not await self._db(store.insert_batch, batch, planned, (), None, numbers):
            return None
        log.info("tournament %s: round %d, %d voided table(s) replayed", t.id, number, len(planned))
        return batch.id

    async def _planned(self, tournament_id: str, seating: Sequence[Sequence[str]]) -> list[PlannedTable]:
        """A round's (or a replay's) tables, every seat hashed as its player's tournament token (seat_hashes).
        Every table is checked before the round is written, so a bad plan writes nothing."""
        hashes: dict[str, bytes] = await self._db(store.token_hashes, tournament_id)
        return [
            PlannedTable(tables.new_match_id(), tuple(players), seat_hashes(tournament_id, players, hashes))
            for players in seating
        ]

    async def deliver(self, batch_id: str) -> bool:
        """Create a written batch's tables on their workers (again, if interrupted: idempotent), counting
        progress as chunks are confirmed. False if a worker failed (a later pass sends it again)."""
        loaded = await self._db(store.load_batch, batch_id)
        if loaded is None or loaded[0].status != "creating":
            return True
        batch, planned = loaded
        creates = tables.requests(batch.game, json.dumps(batch.options), batch.starts_unix_ms, planned)

        async def progress(created: int) -> None:
            await self._db(store.batch_progress, batch_id, created)
            CHANGES.notify(batch.tournament_id)

        try:
            await tables.send(self.router, creates, progress)
        except Exception as error:
            log.warning("batch %s: not every table was created yet (%s); it will be sent again", batch_id, error)
            return False
        await self._db(store.batch_status, batch_id, "created")
        CHANGES.notify(batch.tournament_id)
        return True

    async def tables_ended(self, match_ids: Sequence[str]) -> None:
        """Matches ended (the workers' hook): move on the tournaments they are tables of, each once."""
        for tournament_id in await self._db(store.tournaments_of, list(match_ids)):
            await self.step(tournament_id)

    async def step(self, tournament_id: str) -> None:
        """Advance, then create the tables of a round written. A pairing that failed is on the tournament
        (`state`) and in the log; the periodic pass tries again."""
        try:
            batch_id = await self.advance(tournament_id)
        except pairing.PairingFailed as error:
            log.warning("tournament %s: %s", tournament_id, error)
            return
        finally:
            CHANGES.notify(tournament_id)  # results recorded, a round written, or the end
        if batch_id is not None:
            await self.deliver(batch_id)

    async def advance_all(self) -> None:
        """The periodic pass (beat, or the embedded loop): batches left half-created, then every running
        tournament (a lost hook or task costs at most one period)."""
        for batch_id in await self._db(store.stale_batches, self.clock() - STALE_MS):
            loaded = await self._db(store.load_batch, batch_id)
            if loaded is None:
                continue
            if loaded[0].tournament_id is None:  # the organizer's call died: its tokens are lost
                await tables.cancel(self.router, [t.match_id for t in loaded[1]])
                await self._db(store.batch_status, batch_id, "cancelled")
            else:
                await self.deliver(batch_id)
        for tournament_id in await self._db(store.running):
            try:
                await self.step(tournament_id)
            except Exception:
                log.exception("tournament %s: could not move on; the next pass retries", tournament_id)

    def spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
