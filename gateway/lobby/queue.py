"""The Lobby's queue and tables in the database, so a restart loses nobody.

A table is claimed in one transaction that deletes its players' queue rows (all of them, or nothing:
someone who left meanwhile voids the claim) and writes the table (`creating`) with its seats. Two
pairing loops racing for the same players cannot both claim them — the second delete finds fewer rows
and rolls back — so nobody is ever seated twice, whatever the lease says. The worker is asked after the
commit; a table left `creating` (a crash between) is created again, with the same match id (creation
is idempotent per match id), then marked `ready`, and only then is it pushed to its players.
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, exists, select
from sqlalchemy.exc import IntegrityError, OperationalError

from gateway.lobby import schema as s
from gateway.lobby.pairing import Table, Waiting
from ratings import models as r
from ratings.rating import DEFAULT_MU, DEFAULT_SIGMA, ordinal
from workers.errors import AlreadyQueued
from workers.games.catalog import game_named, unknown_game
from workers.games.errors import MalformedAction
from workers.games.options import read_options
from workers.sql import models as m
from workers.sql.engine import reading
from workers.sql.models import rows


@dataclass(frozen=True, slots=True)
class Queue:
    """One queue: a game with its options (canonical JSON)."""

    game: str
    options: str


@dataclass(frozen=True, slots=True)
class Ticket:
    ticket: str
    queue: Queue
    ordinal: float
    joined_ms: int


@dataclass(frozen=True, slots=True)
class SeatAt:
    player_id: int
    ticket: str
    joined_ms: int


@dataclass(frozen=True, slots=True)
class LobbyTable:
    """A table the Lobby made: seats in order, each player's name and key hash."""

    match_id: str
    queue: Queue
    seats: tuple[SeatAt, ...]
    names: tuple[str, ...]
    key_hashes: tuple[bytes, ...]
    created_ms: int


@dataclass(frozen=True, slots=True)
class PlacedSeat:
    """A seat pushed to its player (Seated)."""

    match_id: str
    seat: int
    game: str
    players: tuple[str, ...]
    ticket: str
    seated_ms: int


def queue_for(game_name: str, options: Mapping[str, Any]) -> Queue:
    """The queue of a game and options, the options checked against the game's ranges."""
    game = game_named(game_name)
    if game is None:
        raise MalformedAction(unknown_game(game_name))
    read_options(game.options, options, game.name)
    return Queue(game.name, json.dumps(dict(options), sort_keys=True, separators=(",", ":")))


def table_sizes(game_name: str) -> tuple[int, ...]:
    """The sizes a game's tables take, the largest first: (2,) or (4, 3)."""
    game = game_named(game_name)
    assert game is not None
    return tuple(range(game.max_seats, game.min_seats - 1, -1))


def rating_ordinal(conn: Connection, player_id: int, game: str) -> float:
    """The player's leaderboard number for `game` (a new player's default)."""
    t = r.ratings
    found = conn.execute(select(t.c.ordinal).where(t.c.player_id == player_id, t.c.game == game)).scalar()
    return float(found) if found is not None else ordinal(DEFAULT_MU, DEFAULT_SIGMA)


def join(engine: Engine, player_id: int, queue: Queue, now_ms: int) -> Ticket:
    try:
        with engine.begin() as conn:
            rated = rating_ordinal(conn, player_id, queue.game)
            ticket = secrets.token_hex(8)
            conn.execute(
                s.lobby_queue.insert().values(
                    player_id=player_id,
                    ticket=ticket,
                    game=queue.game,
                    options=queue.options,
                    ordinal=rated,
                    joined_unix_ms=now_ms,
                    seen_unix_ms=now_ms,
                )
            )
    except IntegrityError:
        raise AlreadyQueued("you are in the queue already: Leave first, or wait to be seated") from None
    return Ticket(ticket, queue, rated, now_ms)


def leave(engine: Engine, player_id: int) -> bool:
    with engine.begin() as conn:
        return conn.execute(s.lobby_queue.delete().where(s.lobby_queue.c.player_id == player_id)).rowcount > 0


@dataclass(frozen=True, slots=True)
class Activity:
    """What the pairing loop's beat has to look at: each flag says whether its queries can find anything."""

    queued: bool
    """Someone waits in a queue (to pair, to drop when absent, to count in the gauges)."""
    creating: bool
    """A table claimed and not yet confirmed by its worker."""
    challenges: bool
    """An open challenge (to expire)."""
    playing: bool
    """A Lobby table still being played (its bot seats, if any, need runners)."""


def activity(engine: Engine) -> Activity:
    """One statement for the beat: a lobby nobody uses (most beats of a service under match load) costs this
    read, not the six the beat's steps would run to find nothing."""
    with reading(engine) as conn:
        found: Any = conn.execute(_activity_query()).one()
    return Activity(*(bool(flag) for flag in found))


@functools.cache
def _activity_query() -> Any:
    """Built once: building a statement costs more than running it."""
    q, t, c, mt = s.lobby_queue, s.lobby_tables, s.lobby_challenges, m.matches
    in_play = t.join(mt, mt.c.id == t.c.match_id)
    return select(
        exists(select(q.c.player_id)),
        exists().where(t.c.state == "creating"),
        exists().where(c.c.state == "open"),
        exists(select(t.c.match_id).select_from(in_play).where(t.c.state == "ready", mt.c.status == "in_progress")),
    )


def waiting(engine: Engine, seen_since_ms: int = 0) -> dict[Queue, list[tuple[Waiting, str]]]:
    """Everyone waiting and present (seen since `seen_since_ms`), by queue, with their tickets."""
    q = s.lobby_queue
    out: dict[Queue, list[tuple[Waiting, str]]] = {}
    query = select(q.c.player_id, q.c.ticket, q.c.game, q.c.options, q.c.ordinal, q.c.joined_unix_ms).where(
        q.c.seen_unix_ms >= seen_since_ms
    )
    with reading(engine) as conn:
        for pid, ticket, game, options, rated, joined in rows(conn, query):
            out.setdefault(Queue(game, options), []).append((Waiting(int(pid), float(rated), int(joined)), ticket))
    return out


def seen(engine: Engine, player_ids: list[int], now_ms: int) -> None:
    """These players' Seated streams are open on this gateway: they are still there."""
    q = s.lobby_queue
    with engine.begin() as conn:
        for start in range(0, len(player_ids), 500):
            chunk = player_ids[start : start + 500]
            conn.execute(q.update().where(q.c.player_id.in_(chunk)).values(seen_unix_ms=now_ms))


def drop_absent(engine: Engine, before_ms: int) -> int:
    """Forget the queue places of players not seen since `before_ms` (a closed tab, a lost terminal). Read
    first: a beat with no one to drop takes no write lock (on SQLite the match log's writer needs it)."""
    q = s.lobby_queue
    absent = q.c.seen_unix_ms < before_ms
    with reading(engine) as conn:
        if conn.execute(select(q.c.player_id).where(absent).limit(1)).first() is None:
            return 0
    with engine.begin() as conn:
        return conn.execute(q.delete().where(absent)).rowcount


def queued(engine: Engine) -> list[tuple[str, int]]:
    """(game, joined ms) of everyone waiting: the queue-length and wait-time gauges."""
    q = s.lobby_queue
    with reading(engine) as conn:
        return [(str(g), int(j)) for g, j in rows(conn, select(q.c.game, q.c.joined_unix_ms))]


class _Gone(Exception):
    """A player of the claimed table is no longer in the queue (left, or claimed by another loop)."""


def claim(engine: Engine, queue: Queue, table: Table, tickets: Mapping[int, str], now_ms: int) -> str | None:
    """Move a paired table out of the queue, atomically; its match id, or None if someone was gone."""
    q = s.lobby_queue
    match_id = secrets.token_hex(8)
    ids = [w.player_id for w in table.players]
    try:
        with engine.begin() as conn:
            gone = conn.execute(
                q.delete().where(q.c.player_id.in_(ids), q.c.ticket.in_([tickets[i] for i in ids]))
            ).rowcount
            if gone != len(ids):
                raise _Gone
            seats = [SeatAt(w.player_id, tickets[w.player_id], w.joined_ms) for w in table.players]
            write_table(conn, match_id, queue, seats, table.gap, now_ms)
    except (_Gone, OperationalError):  # OperationalError: a deadlock with a racing loop, rolled back
        return None
    return match_id


def write_table(
    conn: Connection, match_id: str, queue: Queue, seats: Iterable[SeatAt], gap: float, now_ms: int
) -> None:
    conn.execute(
        s.lobby_tables.insert().values(
            match_id=match_id, game=queue.game, options=queue.options, state="creating", gap=gap, created_unix_ms=now_ms
        )
    )
    conn.execute(
        s.lobby_seats.insert(),
        [
            {
                "match_id": match_id,
                "seat": i,
                "player_id": a.player_id,
                "ticket": a.ticket,
                "joined_unix_ms": a.joined_ms,
            }
            for i, a in enumerate(seats)
        ],
    )


def creating(engine: Engine, match_ids: list[str] | None = None) -> list[LobbyTable]:
    """Tables claimed but not yet confirmed by a worker (all of them, or those of `match_ids`)."""
    t, st, k, p = s.lobby_tables, s.lobby_seats, s.player_keys, m.players
    query = (
        select(
            t.c.match_id,
            t.c.game,
            t.c.options,
            t.c.created_unix_ms,
            st.c.seat,
            st.c.player_id,
            st.c.ticket,
            st.c.joined_unix_ms,
            p.c.name,
            k.c.key_sha256,
        )
        .select_from(
            t.join(st, st.c.match_id == t.c.match_id)
            .join(p, p.c.id == st.c.player_id)
            .join(k, k.c.player_id == st.c.player_id)
        )
        .where(t.c.state == "creating")
        .order_by(t.c.match_id, st.c.seat)
    )
    if match_ids is not None:
        query = query.where(t.c.match_id.in_(match_ids))
    grouped: dict[str, list[Any]] = {}
    with reading(engine) as conn:
        for row in rows(conn, query):
            grouped.setdefault(row[0], []).append(row)
    return [
        LobbyTable(
            mid,
            Queue(rows[0][1], rows[0][2]),
            tuple(SeatAt(int(x[5]), str(x[6]), int(x[7])) for x in rows),
            tuple(str(x[8]) for x in rows),
            tuple(bytes(x[9]) for x in rows),
            int(rows[0][3]),
        )
        for mid, rows in grouped.items()
    ]


def mark_ready(engine: Engine, match_id: str) -> None:
    t = s.lobby_tables
    with engine.begin() as conn:
        conn.execute(t.update().where(t.c.match_id == match_id).values(state="ready"))


def seats_of(engine: Engine, player_ids: list[int]) -> list[tuple[int, PlacedSeat]]:
    """The ready seats of these players at tables still being played, each with its player's id."""
    t, st, mt = s.lobby_tables, s.lobby_seats, m.matches
    query = (
        select(st.c.player_id, t.c.match_id, st.c.seat, t.c.game, st.c.ticket, t.c.created_unix_ms)
        .select_from(st.join(t, t.c.match_id == st.c.match_id).join(mt, mt.c.id == t.c.match_id))
        .where(st.c.player_id.in_(player_ids), t.c.state == "ready", mt.c.status == "in_progress")
    )
    with reading(engine) as conn:
        found = rows(conn, query)
        names = _names(conn, [row[1] for row in found])
    return [
        (int(pid), PlacedSeat(mid, int(seat), game, names[mid], ticket, int(at)))
        for pid, mid, seat, game, ticket, at in found
    ]


def _names(conn: Connection, match_ids: list[str]) -> dict[str, tuple[str, ...]]:
    st, p = s.lobby_seats, m.players
    out: dict[str, list[str]] = {}
    query = (
        select(st.c.match_id, p.c.name)
        .select_from(st.join(p, p.c.id == st.c.player_id))
        .where(st.c.match_id.in_(match_ids))
        .order_by(st.c.match_id, st.c.seat)
    )
    for mid, name in rows(conn, query):
        out.setdefault(mid, []).append(name)
    return {mid: tuple(names) for mid, names in out.items()}


def gaps(engine: Engine, match_ids: list[str]) -> dict[str, float]:
    t = s.lobby_tables
    with reading(engine) as conn:
        return {
            mid: float(g) for mid, g in rows(conn, select(t.c.match_id, t.c.gap).where(t.c.match_id.in_(match_ids)))
        }
