"""Tournament state in the database (schema.py): blocking functions, called through `asyncio.to_thread`.

Writes that decide something are single transactions keyed so that only one writer can win: a round (or
a replay) is a batch whose id is `<tournament>-r<round>-a<attempt>`, inserted together with its tables,
its byes and the tournament's new current round; a second director planning the same round hits the
primary key and stops. Reads on SQLite begin DEFERRED (no write lock), like the rating job's.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, select, update
from sqlalchemy.exc import IntegrityError

from gateway.tournaments import schema as s
from gateway.tournaments.rounds import History, PlayedTable, Settings
from gateway.tournaments.tables import PlannedTable
from workers.games.catalog import game_named
from workers.games.engine import Codec
from workers.sql import ended
from workers.sql import models as match_tables
from workers.sql.engine import reading
from workers.sql.models import rows


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Batch:
    id: str
    organizer_id: int
    game: str
    options: dict[str, Any]
    starts_unix_ms: int
    tables: int
    tournament_id: str | None = None
    round: int | None = None
    attempt: int = 0
    status: str = "creating"
    scheduled: int = 0
    updated_unix_ms: int = 0


_BATCH_COLUMNS = (
    s.batches.c.id, s.batches.c.organizer_id, s.batches.c.game, s.batches.c.options, s.batches.c.starts_unix_ms,
    s.batches.c.tables, s.batches.c.tournament_id, s.batches.c.round, s.batches.c.attempt, s.batches.c.status,
    s.batches.c.scheduled, s.batches.c.updated_unix_ms,
)


def insert_batch(
    engine: Engine,
    batch: Batch,
    tables: Sequence[PlannedTable],
    byes: Sequence[str] = (),
    current_round: int | None = None,
    numbers: Sequence[int] | None = None,
) -> bool:
    """The batch and its tables (and a round's byes and the tournament's current round) in one
    transaction, before any worker hears of them. False if a batch of that id exists (someone else won).
    `numbers`: the tables' numbers (default 1, 2, ...; a replay keeps the numbers of the tables it replays)."""
    now = now_ms()
    row = {c.name: getattr(batch, c.name) for c in _BATCH_COLUMNS} | {"created_unix_ms": now, "updated_unix_ms": now}
    try:
        with engine.begin() as conn:
            conn.execute(s.batches.insert().values(**row))
            conn.execute(
                s.batch_tables.insert(),
                [
                    {
                        "match_id": t.match_id, "batch_id": batch.id, "table_no": number, "players": list(t.players),
                        "token_sha256": [h.hex() for h in t.token_sha256], "status": "playing", "result": None,
                    }
                    for number, t in zip(numbers or range(1, len(tables) + 1), tables, strict=True)
                ],
            )
            if byes:
                conn.execute(
                    s.tournament_byes.insert(),
                    [{"tournament_id": batch.tournament_id, "round": batch.round, "player": p} for p in byes],
                )
            if current_round is not None:
                t = s.tournaments
                conn.execute(update(t).where(t.c.id == batch.tournament_id).values(current_round=current_round))
    except IntegrityError:
        return False
    return True


def batch_progress(engine: Engine, batch_id: str, created: int) -> None:
    t = s.batches
    with engine.begin() as conn:
        conn.execute(
            update(t).where(t.c.id == batch_id).values(scheduled=t.c.scheduled + created, updated_unix_ms=now_ms())
        )


def batch_status(engine: Engine, batch_id: str, status: str, starts_unix_ms: int | None = None) -> None:
    t = s.batches
    values: dict[str, Any] = {"status": status, "updated_unix_ms": now_ms()}
    if status == "created":
        values["scheduled"] = t.c.tables
    if starts_unix_ms is not None:
        values["starts_unix_ms"] = starts_unix_ms
    with engine.begin() as conn:
        conn.execute(update(t).where(t.c.id == batch_id).values(**values))


def claim_early_start(engine: Engine, batch_id: str, held_until: int, at: int) -> bool:
    """Move a held batch's start from `held_until` to `at`, if it still reads `held_until`: True for the one
    caller that started it early (a compare-and-set, so two calls at once cannot both claim it)."""
    t = s.batches
    with engine.begin() as conn:
        moved = conn.execute(
            update(t)
            .where(t.c.id == batch_id, t.c.starts_unix_ms == held_until)
            .values(starts_unix_ms=at, updated_unix_ms=now_ms())
        )
    return bool(moved.rowcount == 1)


def load_batch(engine: Engine, batch_id: str) -> tuple[Batch, list[PlannedTable]] | None:
    """A batch and its tables in table order."""
    bt = s.batch_tables
    with reading(engine) as conn, conn.begin():
        found = rows(conn, select(*_BATCH_COLUMNS).where(s.batches.c.id == batch_id))
        if not found:
            return None
        query = select(bt.c.match_id, bt.c.players, bt.c.token_sha256, bt.c.table_no).where(bt.c.batch_id == batch_id)
        tables = rows(conn, query.order_by(bt.c.table_no))
    return Batch(*found[0]), [PlannedTable(m, tuple(p), tuple(bytes.fromhex(h) for h in hs)) for m, p, hs, _ in tables]


def stale_batches(engine: Engine, before_unix_ms: int) -> list[str]:
    """Batches still `creating` since before this instant (their creator stopped or its workers failed)."""
    t = s.batches
    with reading(engine) as conn, conn.begin():
        query = select(t.c.id).where(t.c.status == "creating", t.c.updated_unix_ms < before_unix_ms)
        return [str(x) for (x,) in rows(conn, query.order_by(t.c.created_unix_ms))]


# --- tournaments ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tournament:
    id: str
    organizer_id: int
    name: str
    game: str
    format: str
    rounds: int
    options: dict[str, Any]
    voided: str
    manual: bool
    round_pause_ms: int
    starts_unix_ms: int
    status: str
    current_round: int
    players: tuple[str, ...] = ()
    spectator_delay_ms: int = 0

    def settings(self) -> Settings:
        assert self.voided in ("replay", "draw")
        start = int(self.options.get("start_points", 150))
        return Settings(self.game, self.format, self.rounds, self.voided, self.players, start)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class NewPlayer:
    seed: int
    name: str
    token_sha256: bytes


def insert_tournament(engine: Engine, t: Tournament, players: Sequence[NewPlayer]) -> None:
    row = {f: getattr(t, f) for f in Tournament.__dataclass_fields__ if f != "players"}
    with engine.begin() as conn:
        conn.execute(s.tournaments.insert().values(**row, created_unix_ms=now_ms()))
        conn.execute(
            s.tournament_players.insert(),
            [{"tournament_id": t.id, "seed": p.seed, "name": p.name, "token_sha256": p.token_sha256} for p in players],
        )


def _tournament(conn: Connection, tournament_id: str) -> Tournament | None:
    t, p = s.tournaments, s.tournament_players
    fields = [f for f in Tournament.__dataclass_fields__ if f != "players"]
    found = rows(conn, select(*(t.c[f] for f in fields)).where(t.c.id == tournament_id))
    if not found:
        return None
    names = rows(conn, select(p.c.name).where(p.c.tournament_id == tournament_id).order_by(p.c.seed))
    values = dict(zip(fields, found[0], strict=True))
    return Tournament(**values, players=tuple(str(n) for (n,) in names))


def load_tournament(engine: Engine, tournament_id: str) -> Tournament | None:
    with reading(engine) as conn, conn.begin():
        return _tournament(conn, tournament_id)


def token_hashes(engine: Engine, tournament_id: str) -> dict[str, bytes]:
    """Each player's tournament-token hash: also the hash of their seat token at each of their tables."""
    p = s.tournament_players
    with reading(engine) as conn, conn.begin():
        found = rows(conn, select(p.c.name, p.c.token_sha256).where(p.c.tournament_id == tournament_id))
    return {str(name): bytes(digest) for name, digest in found}


def player_by_token(engine: Engine, token_sha256: bytes) -> tuple[str, str] | None:
    """(tournament id, player) of a player's tournament token."""
    p = s.tournament_players
    with reading(engine) as conn, conn.begin():
        found = rows(conn, select(p.c.tournament_id, p.c.name).where(p.c.token_sha256 == token_sha256))
    return None if not found else (str(found[0][0]), str(found[0][1]))


@dataclass(frozen=True, slots=True)
class TableRow:
    match_id: str
    batch_id: str
    round: int
    table: int
    attempt: int
    players: tuple[str, ...]
    status: str
    result: dict[str, Any] | None
    batch_status: str
    ended_unix_ms: int | None = None
    """When the match ended (its worker's clock); None while it plays (or recorded before revision 0007)."""

    def played(self, game: Codec[Any, Any, Any]) -> PlayedTable:
        """The table for the pure rounds: its stored outcome read back as placements by its game."""
        placements = None if self.result is None else game.placements_of(self.result)
        return PlayedTable(self.round, self.table, self.attempt, self.players, self.status, placements)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A tournament with every batch and table (all rounds) and its byes: what the director decides on."""

    tournament: Tournament
    batches: tuple[Batch, ...]
    tables: tuple[TableRow, ...]
    byes: dict[int, tuple[str, ...]]

    def history(self) -> History:
        game = game_named(self.tournament.game)
        assert game is not None  # checked when the tournament was created
        return History(tuple(t.played(game) for t in self.tables), self.byes)


def snapshot(engine: Engine, tournament_id: str) -> Snapshot | None:
    b, bt, by = s.batches, s.batch_tables, s.tournament_byes
    with reading(engine) as conn, conn.begin():
        tournament = _tournament(conn, tournament_id)
        if tournament is None:
            return None
        batches = [Batch(*r) for r in rows(conn, select(*_BATCH_COLUMNS).where(b.c.tournament_id == tournament_id)
                                           .order_by(b.c.round, b.c.attempt))]  # fmt: skip
        query = (
            select(bt.c.match_id, bt.c.batch_id, b.c.round, bt.c.table_no, b.c.attempt, bt.c.players, bt.c.status,
                   bt.c.result, b.c.status, bt.c.ended_unix_ms)
            .join(b, b.c.id == bt.c.batch_id)
            .where(b.c.tournament_id == tournament_id)
            .order_by(b.c.round, bt.c.table_no, b.c.attempt)
        )  # fmt: skip
        tables = [
            TableRow(m, bid, r, n, a, tuple(p), st, res, bs, None if e is None else int(e))
            for m, bid, r, n, a, p, st, res, bs, e in rows(conn, query)
        ]
        byes: dict[int, list[str]] = {}
        for number, player in rows(conn, select(by.c.round, by.c.player).where(by.c.tournament_id == tournament_id)):
            byes.setdefault(int(number), []).append(str(player))
    return Snapshot(tournament, tuple(batches), tuple(tables), {k: tuple(sorted(v)) for k, v in byes.items()})


def refresh(engine: Engine, tournament_id: str | None = None, match_ids: Sequence[str] = ()) -> int:
    """Record the result (and the end's instant) of every table (of a tournament, or these matches) whose match
    has ended since."""
    b, bt = s.batches, s.batch_tables
    with reading(engine) as conn, conn.begin():
        query = select(bt.c.match_id).where(bt.c.status == "playing")
        if tournament_id is not None:
            query = query.join(b, b.c.id == bt.c.batch_id).where(b.c.tournament_id == tournament_id)
        else:
            query = query.where(bt.c.match_id.in_(list(match_ids)))
        playing = [str(x) for (x,) in rows(conn, query)]
        done = ended.ended(conn, playing) if playing else []
    if not done:
        return 0
    with engine.begin() as conn:
        conn.execute(
            update(bt)
            .where(bt.c.match_id == bindparam("m"), bt.c.status == "playing")
            .values(status=bindparam("st"), result=bindparam("res"), ended_unix_ms=bindparam("end")),
            [{"m": r.match_id, "st": r.status, "res": r.outcome(), "end": r.ended_unix_ms} for r in done],
        )
    return len(done)


def finish(engine: Engine, tournament_id: str) -> None:
    t = s.tournaments
    with engine.begin() as conn:
        conn.execute(update(t).where(t.c.id == tournament_id, t.c.status == "running").values(status="finished"))


def running(engine: Engine) -> list[str]:
    t = s.tournaments
    with reading(engine) as conn, conn.begin():
        return [str(x) for (x,) in rows(conn, select(t.c.id).where(t.c.status == "running"))]


def tournaments_of(engine: Engine, match_ids: Sequence[str]) -> list[str]:
    """The running tournaments these matches are tables of (most matches are no tournament's)."""
    found: set[str] = set()
    with reading(engine) as conn, conn.begin():
        for start in range(0, len(match_ids), ended.BATCH):
            chunk = list(match_ids[start : start + ended.BATCH])
            found.update(str(x) for x in conn.scalars(_tournaments_of_query(), {"ids": chunk}))
    return sorted(found)


@functools.cache
def _tournaments_of_query() -> Any:
    """Built once (asked for every ended match): building a statement costs more than running it."""
    b, bt, t = s.batches, s.batch_tables, s.tournaments
    return (
        select(b.c.tournament_id)
        .join(bt, bt.c.batch_id == b.c.id)
        .join(t, t.c.id == b.c.tournament_id)
        .where(bt.c.match_id.in_(bindparam("ids", expanding=True)), t.c.status == "running")
        .distinct()
    )


def ended_records(engine: Engine, match_ids: Sequence[str]) -> dict[str, ended.Ended]:
    with reading(engine) as conn, conn.begin():
        return {r.match_id: r for r in ended.ended(conn, match_ids)}


def spectator_delay_ms(engine: Engine, match_id: str) -> int:
    """How late spectators see this match: its tournament's delay, 0 for a match of no tournament."""
    b, bt, t = s.batches, s.batch_tables, s.tournaments
    query = (
        select(t.c.spectator_delay_ms)
        .join(b, b.c.tournament_id == t.c.id)
        .join(bt, bt.c.batch_id == b.c.id)
        .where(bt.c.match_id == match_id)
    )
    with reading(engine) as conn, conn.begin():
        found = rows(conn, query)
    return int(found[0][0]) if found else 0


def origin_ms(engine: Engine, match_id: str) -> int:
    """The match's time origin (its start; 0 for an unknown match)."""
    with reading(engine) as conn, conn.begin():
        found = rows(conn, select(match_tables.matches.c.created_unix_ms).where(match_tables.matches.c.id == match_id))
    return int(found[0][0]) if found else 0


def insider(engine: Engine, match_id: str, token_sha256: bytes) -> bool:
    """Whether this token hash is a seat's at the tournament table `match_id`, or its organizer's key."""
    b, bt, o = s.batches, s.batch_tables, s.organizers
    query = (
        select(bt.c.token_sha256, o.c.key_sha256)
        .join(b, b.c.id == bt.c.batch_id)
        .join(o, o.c.id == b.c.organizer_id)
        .where(bt.c.match_id == match_id)
    )
    with reading(engine) as conn, conn.begin():
        found = rows(conn, query)
    if not found:
        return False
    seats, organizer_key = found[0]
    return token_sha256.hex() in seats or bytes(organizer_key) == token_sha256


def match_statuses(engine: Engine, match_ids: Sequence[str]) -> dict[str, str]:
    with reading(engine) as conn, conn.begin():
        return ended.statuses(conn, match_ids)
