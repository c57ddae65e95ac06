"""Open challenges and friend links: a table of a game waiting for takers, in the database.

The challenge's id (64 random bits) is its friend link; an `unlisted` challenge is found only by it.
The taker who fills the last seat claims the table in the same transaction (the challenge `seated`,
the table `creating` with its seats, the host at seat 0, the takers in the order they came), so two
players racing for the last seat cannot both have it: one transaction finds the challenge seated.
A challenge lives `lifetime_ms` from its opening (the Lobby's setting): after that it is not listed and
cannot be taken (`challenge_expired`), and the leader's beat marks it `expired` (`expire`), its seats
already taken with it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError

from gateway.lobby import schema as s
from gateway.lobby.queue import Queue, SeatAt, write_table
from workers.errors import ChallengeExpired, NotFound, NotYourSeat, OwnChallenge
from workers.games.catalog import game_named
from workers.games.errors import MalformedAction
from workers.sql import models as m
from workers.sql.engine import reading
from workers.sql.models import rows


@dataclass(frozen=True, slots=True)
class Challenge:
    id: str
    game: str
    options: dict[str, Any]
    host: str
    seats: int
    taken_by: tuple[str, ...]
    opened_ms: int
    expires_ms: int


@dataclass(frozen=True, slots=True)
class Taken:
    """A seat taken: the seat number, and the table's match id once the table is full (else empty)."""

    seat: int
    match_id: str
    game: str


_ID_LENGTH = 16


def checked_seats(game: str, seats: int) -> int:
    found = game_named(game)
    assert found is not None
    seats = seats or found.min_seats
    if not found.min_seats <= seats <= found.max_seats:
        raise MalformedAction(f"a {game} table seats {found.min_seats} to {found.max_seats}, not {seats}")
    return seats


def open_challenge(engine: Engine, player_id: int, queue: Queue, seats: int, unlisted: bool, now_ms: int) -> str:
    challenge_id = secrets.token_hex(_ID_LENGTH // 2)
    with engine.begin() as conn:
        conn.execute(
            s.lobby_challenges.insert().values(
                id=challenge_id,
                player_id=player_id,
                game=queue.game,
                options=queue.options,
                seats=checked_seats(queue.game, seats),
                unlisted=unlisted,
                state="open",
                opened_unix_ms=now_ms,
            )
        )
    return challenge_id


def listed(engine: Engine, game: str, now_ms: int, lifetime_ms: int, limit: int = 200) -> list[Challenge]:
    """The listed challenges still open at `now_ms`, oldest first."""
    c = s.lobby_challenges
    query = (
        select(c.c.id)
        .where(c.c.state == "open", c.c.unlisted.is_(False), c.c.opened_unix_ms > now_ms - lifetime_ms)
        .order_by(c.c.opened_unix_ms)
        .limit(limit)
    )
    if game:
        query = query.where(c.c.game == game)
    with reading(engine) as conn:
        ids = [str(x) for (x,) in rows(conn, query)]
    return [found for cid in ids if (found := challenge(engine, cid, lifetime_ms)) is not None]


def challenge(engine: Engine, challenge_id: str, lifetime_ms: int) -> Challenge | None:
    c, t, p = s.lobby_challenges, s.challenge_takers, m.players
    with reading(engine) as conn:
        row = conn.execute(
            select(c.c.id, c.c.game, c.c.options, p.c.name, c.c.seats, c.c.opened_unix_ms)
            .select_from(c.join(p, p.c.id == c.c.player_id))
            .where(c.c.id == challenge_id, c.c.state == "open")
        ).first()
        if row is None:
            return None
        takers = rows(
            conn,
            select(p.c.name)
            .select_from(t.join(p, p.c.id == t.c.player_id))
            .where(t.c.challenge_id == challenge_id)
            .order_by(t.c.taken_unix_ms, p.c.id),
        )
        taken_by = tuple(str(x) for (x,) in takers)
    opened = int(row[5])
    return Challenge(row[0], row[1], json.loads(row[2]), row[3], int(row[4]), taken_by, opened, opened + lifetime_ms)


def checked_id(challenge_id: str) -> str:
    if len(challenge_id) != _ID_LENGTH or not all(ch in "0123456789abcdef" for ch in challenge_id):
        raise MalformedAction("a challenge id is 16 hex digits")
    return challenge_id


def cancel(engine: Engine, player_id: int, challenge_id: str) -> None:
    """The host withdraws a challenge still waiting (it is kept, `cancelled`, for the record)."""
    c = s.lobby_challenges
    with engine.begin() as conn:
        host = conn.execute(
            select(c.c.player_id).where(c.c.id == checked_id(challenge_id), c.c.state == "open")
        ).scalar()
        if host is None:
            raise NotFound("no such challenge waiting (taken, cancelled, or never opened)")
        if int(host) != player_id:
            raise NotYourSeat("only the player who opened a challenge may cancel it")
        conn.execute(c.update().where(c.c.id == challenge_id, c.c.state == "open").values(state="cancelled"))


def take(engine: Engine, player_id: int, challenge_id: str, now_ms: int, lifetime_ms: int) -> Taken:
    c, t = s.lobby_challenges, s.challenge_takers
    checked_id(challenge_id)
    try:
        with engine.begin() as conn:
            query = select(c.c.player_id, c.c.game, c.c.options, c.c.seats, c.c.state, c.c.opened_unix_ms).where(
                c.c.id == challenge_id, c.c.state.in_(("open", "expired"))
            )
            if conn.dialect.name == "postgresql":
                query = query.with_for_update()
            row = conn.execute(query).first()
            if row is None:
                raise NotFound("no such challenge waiting (taken, or never opened)")
            if row[4] == "expired" or int(row[5]) <= now_ms - lifetime_ms:
                raise ChallengeExpired(
                    f"this challenge expired: challenges wait {lifetime_ms // 60_000} min for takers; ask for a new one"
                )
            host, game, options, seats = int(row[0]), str(row[1]), str(row[2]), int(row[3])
            if host == player_id:
                raise OwnChallenge("this is your own challenge: share its link instead")
            conn.execute(t.insert().values(challenge_id=challenge_id, player_id=player_id, taken_unix_ms=now_ms))
            takers = [
                int(x)
                for (x,) in rows(
                    conn,
                    select(t.c.player_id)
                    .where(t.c.challenge_id == challenge_id)
                    .order_by(t.c.taken_unix_ms, t.c.player_id),
                )
            ]
            seat = takers.index(player_id) + 1
            if 1 + len(takers) < seats:
                return Taken(seat, "", game)
            match_id = secrets.token_hex(8)
            conn.execute(c.update().where(c.c.id == challenge_id).values(state="seated", match_id=match_id))
            everyone = [SeatAt(host, challenge_id, now_ms), *(SeatAt(pid, challenge_id, now_ms) for pid in takers)]
            write_table(conn, match_id, Queue(game, options), everyone, 0.0, now_ms)
            return Taken(seat, match_id, game)
    except IntegrityError:
        raise OwnChallenge("you hold a seat of this challenge already") from None


def expire(engine: Engine, opened_before_ms: int) -> int:
    """Mark every open challenge opened at or before `opened_before_ms` expired (the leader's beat): how many.
    Read first (the index on state and opening), so a beat with nothing to expire writes nothing (SQLite's
    one write lock stays the match log's)."""
    c = s.lobby_challenges
    due = (c.c.state == "open") & (c.c.opened_unix_ms <= opened_before_ms)
    with reading(engine) as conn:
        if conn.execute(select(c.c.id).where(due).limit(1)).first() is None:
            return 0
    with engine.begin() as conn:
        done = conn.execute(c.update().where(due).values(state="expired"))
    return int(done.rowcount or 0)


def open_count(engine: Engine) -> int:
    c = s.lobby_challenges
    with reading(engine) as conn:
        return int(conn.execute(select(func.count()).select_from(c).where(c.c.state == "open")).scalar() or 0)
