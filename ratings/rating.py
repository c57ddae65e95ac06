"""Rating one finished match, exactly once.

The outcome is read from the database by replaying the match's log through the engine (the ended-match
reader, workers/sql/ended.py, on the queries recovery uses): nothing extra is written when a match
finishes, so a match is rateable whoever finished it and however its task was lost. Ranks are the
game's placements (`Game.placements`: Spectacular Bid's winner 1 and loser 2; 501♠ by final score, exact
ties sharing a place, a seat out of time last). Every seat is rated (a four-player table rates all four).

Exactly once: one transaction inserts the applied-marker (`rated_matches`, unique match_id) with
ON CONFLICT DO NOTHING, and only if that inserted a row does it lock the players' rating rows (PostgreSQL:
SELECT ... FOR UPDATE, in player-id order so two matches sharing players cannot deadlock; SQLite: the
transaction holds the write lock from BEGIN IMMEDIATE), update them and write the history rows. A second
delivery, a retry, or a racing worker finds the marker (PostgreSQL makes the racer wait on the marker's
key until the first commits) and changes nothing.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from openskill.models import PlackettLuce
from sqlalchemy import Connection, Engine, Integer, bindparam, func, select

from ratings import holds
from ratings import models as r
from workers import metrics
from workers.sql import models as m
from workers.sql.ended import column_of, ended, statuses
from workers.sql.engine import reading
from workers.sql.writes import upsert

MODEL = PlackettLuce()
DEFAULT_MU = MODEL.mu
DEFAULT_SIGMA = MODEL.sigma


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def ordinal(mu: float, sigma: float) -> float:
    return mu - 3 * sigma


@dataclass(frozen=True, slots=True)
class Finished:
    match_id: str
    game: str
    status: str
    player_ids: tuple[int, ...]
    """Per seat."""
    ranks: tuple[int, ...] | None
    """Per seat (1 = best; ties share); None when the match is not to be rated."""
    why: str = ""
    ended_unix_ms: int = 0
    """When the match's last log write happened (its end, for a finished match)."""


def rate_ranks(
    before: list[tuple[float, float]], ranks: tuple[int, ...]
) -> list[tuple[float, float]]:
    """openskill Plackett–Luce, one player per team, ranks as given."""
    teams = [[MODEL.rating(mu=mu, sigma=sigma)] for mu, sigma in before]
    after = MODEL.rate(teams, ranks=list(ranks))
    return [(team[0].mu, team[0].sigma) for team in after]


def load(conn: Connection, match_id: str) -> Finished:
    """A finished match's ranks, from the ended-match reader (its log replayed), or why it is not rated."""
    (match,) = ended(conn, [match_id])
    name, player_ids = match.game.name, match.player_ids
    placements = match.placements()
    if placements is None:
        return Finished(match_id, name, "voided", player_ids, None, "the log does not end in a result")
    if match.match.log is None:
        return Finished(match_id, name, match.status, player_ids, None, "abandoned: no seat ever acted")
    if len(set(player_ids)) != len(player_ids):
        return Finished(match_id, name, match.status, player_ids, None, "one player held several seats")
    ranks = tuple(p.place for p in placements)
    return Finished(match_id, name, match.status, player_ids, ranks, ended_unix_ms=match.updated_unix_ms)


@dataclass(frozen=True, slots=True)
class Rated:
    """What rating one match did: its result, and for a match rated now its game and the lag since it ended
    (recorded as metrics by the process that serves them, not by the pool's process that rated it)."""

    result: str
    game: str = ""
    lag_s: float | None = None
    until_unix_ms: int | None = None
    """For `held` by a tournament's spectator delay (its own, or a hidden result of its players'
    tournaments): when to try again (ratings/holds.py `Hold`)."""
    why: str = ""
    """For `failed` (`rate_all`): the error, in a line."""


def rate_match(engine: Engine, match_id: str, now: int | None = None) -> str:
    """Rate one match once: `rated`, `already` (a marker exists), `skipped` (finished, nothing to rate:
    marked so), `held` (not yet: ratings/holds.py; the backlog rates it when due), `not_finished`, `voided`
    or `unknown`. Safe to call any number of times, concurrently."""
    return observe(rate(engine, match_id, now))


def rate_all(engine: Engine, match_ids: Sequence[str], now: int | None = None) -> list[Rated]:
    """Rate matches one after another in their end order (the backlog's: end, then id, so none is held behind
    another of the same call), each as `rate` does, in a transaction of its own: one call for many, so a
    burst of ended matches costs one trip to the pool, not one each. One that fails is `failed`, with its
    reason, and the rest go on. Results in the order given."""
    at = now_ms() if now is None else now
    done: dict[str, Rated] = {}
    for match_id in in_end_order(engine, list(dict.fromkeys(match_ids))):
        try:
            done[match_id] = rate(engine, match_id, at)
        except Exception as error:
            done[match_id] = Rated("failed", why=f"{type(error).__name__}: {str(error)[:200]}")
    return [done[match_id] for match_id in match_ids]


def in_end_order(engine: Engine, match_ids: list[str]) -> list[str]:
    """`match_ids` by their end (the last write to a finished match), then id; unknown ones last."""
    with reading(engine) as conn, conn.begin():
        found = conn.execute(column_of("updated_unix_ms"), {"ids": match_ids})  # its rows are (id, end) tuples
        ends: dict[str, int] = dict(cast("Iterable[tuple[str, int]]", found.all()))
    return sorted(match_ids, key=lambda match_id: (match_id not in ends, ends.get(match_id, 0), match_id))


@functools.cache
def _marker_query() -> Any:
    """Built once, as every statement a rating runs (building one cost more than running it)."""
    done = r.rated_matches
    return select(done.c.match_id).where(done.c.match_id == bindparam("match_id"))


def rate_all_by_url(url: str, match_ids: Sequence[str], now: int | None = None) -> list[Rated]:
    """`rate_all` for a process pool (embedded mode): opens the database by its URL, records no metric."""
    from workers.sql.migrate import engine_for

    return rate_all(engine_for(url), match_ids, now)


def observe(rated: Rated) -> str:
    """Record one rating's metrics in this process; its result."""
    metrics.RATED.labels(rated.result).inc()
    if rated.lag_s is not None:
        metrics.RATING_LAG.labels(rated.game).observe(rated.lag_s)
    return rated.result


def rate(engine: Engine, match_id: str, now: int | None = None) -> Rated:
    """Rate one match once, at `now` (the clock's reading when None), recording no metric. Everything is read
    first, outside the write transaction, which is kept short: on SQLite it holds the one write lock the
    match log's writer needs for every command, and the pool that rates runs at a low priority."""
    at = now_ms() if now is None else now
    with reading(engine) as conn, conn.begin():
        if conn.execute(_marker_query(), {"match_id": match_id}).first() is not None:
            return Rated("already")
        status = statuses(conn, [match_id]).get(match_id)
        if status is None:
            return Rated("unknown")
        if status == "in_progress":
            return Rated("not_finished")
        if status != "finished":
            return Rated("voided")
        held = holds.hold(conn, match_id, at)
        if held is not None:
            return Rated("held", until_unix_ms=held.until_unix_ms)
        found = load(conn, match_id)
        ready_ms = _ready_ms(conn, found) if found.ranks is not None else None
    return apply(engine, found, at, ready_ms)


def _ready_ms(conn: Connection, found: Finished) -> int:
    """When the match could first be rated (see `apply`), read before its write transaction: a rating of the
    same players committed in between moves only this lag figure."""
    return max(
        found.ended_unix_ms,
        holds.shown_from(conn, found.match_id) or 0,
        holds.released_ms(conn, found.match_id, found.ended_unix_ms),
        holds.last_rated_ms(conn, found.game, sorted(set(found.player_ids))),
    )


def apply(engine: Engine, found: Finished, now: int, ready_ms: int | None) -> Rated:
    """Apply a finished match's ranks (the marker first: at most once). The lag is counted from when it could
    first be rated: its end, its result shown to the public, its players' tournaments' hidden results shown
    (ratings/holds.py `released_ms`), or its players' previous rating, the latest (`ready_ms`, read by `rate`
    before this transaction). The transaction runs five statements, built once per dialect."""
    with engine.connect() as conn, conn.begin():
        writes = _writes(conn)
        marker = {"match_id": found.match_id, "game": found.game, "rated_unix_ms": now}
        if conn.execute(writes.marker, marker | {"result": "rated" if found.ranks else "skipped"}).first() is None:
            return Rated("already")
        if found.ranks is None:
            return Rated("skipped")
        ids = sorted(set(found.player_ids))
        fresh = dict(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA, ordinal=ordinal(DEFAULT_MU, DEFAULT_SIGMA), games=0)
        conn.execute(writes.fresh, [fresh | {"player_id": p, "game": found.game, "updated_unix_ms": now} for p in ids])
        found_now: Any = conn.execute(writes.current, {"g": found.game, "ids": ids})
        current: dict[int, tuple[float, float, int]] = {p: (mu, sigma, n) for p, mu, sigma, n in found_now}
        before = [current[pid][:2] for pid in found.player_ids]
        after = rate_ranks(before, found.ranks)
        conn.execute(
            writes.update,
            [
                {
                    "b_pid": pid, "b_game": found.game, "b_mu": mu, "b_sigma": sigma, "b_ordinal": ordinal(mu, sigma),
                    "b_games": current[pid][2] + 1, "b_at": now,
                }
                for pid, (mu, sigma) in zip(found.player_ids, after, strict=True)
            ],
        )
        conn.execute(
            writes.history,
            [
                {
                    "match_id": found.match_id, "player_id": pid, "game": found.game, "rank": found.ranks[seat],
                    "mu_before": before[seat][0], "sigma_before": before[seat][1],
                    "mu_after": after[seat][0], "sigma_after": after[seat][1], "at_unix_ms": now,
                }
                for seat, pid in enumerate(found.player_ids)
            ],
        )
    lag_s = max(0, now - ready_ms) / 1000 if ready_ms else None
    return Rated("rated", found.game, lag_s)


@dataclass(frozen=True, slots=True)
class _Writes:
    """A rating's statements, built once per dialect (building them cost more than running them)."""

    marker: Any
    fresh: Any
    current: Any
    update: Any
    history: Any


_WRITES: dict[str, _Writes] = {}


def _writes(conn: Connection) -> _Writes:
    """The statements for this connection's dialect, built on its first rating."""
    built = _WRITES.get(conn.dialect.name)
    if built is None:
        built = _WRITES[conn.dialect.name] = _built(conn)
    return built


def _built(conn: Connection) -> _Writes:
    t, postgres = r.ratings, conn.dialect.name == "postgresql"
    current = (
        select(t.c.player_id, t.c.mu, t.c.sigma, t.c.games)
        .where(t.c.game == bindparam("g"), t.c.player_id.in_(bindparam("ids", expanding=True)))
        .order_by(t.c.player_id)
    )
    update = (
        t.update()
        .where(t.c.player_id == bindparam("b_pid"), t.c.game == bindparam("b_game"))
        .values(
            mu=bindparam("b_mu"), sigma=bindparam("b_sigma"), ordinal=bindparam("b_ordinal"),
            games=bindparam("b_games"), updated_unix_ms=bindparam("b_at"),
        )
    )  # fmt: skip
    return _Writes(
        marker=upsert(conn, r.rated_matches).on_conflict_do_nothing().returning(r.rated_matches.c.match_id),
        fresh=upsert(conn, t).on_conflict_do_nothing(),
        current=current.with_for_update() if postgres else current,
        update=update,
        history=r.rating_history.insert(),
    )


def backlog(engine: Engine, limit: int = 500, now: int | None = None) -> list[str]:
    """Finished matches without an applied-marker (their task was lost, never sent, or they were held) that
    may be rated at `now`, in end order: rate them. No two of them share a player (within holds.ORDER_WINDOW_MS)."""
    at = now_ms() if now is None else now
    with reading(engine) as conn, conn.begin():
        return [str(x) for x in conn.scalars(_backlog_query(), {"now": at, "limit": limit})]


@functools.cache
def _backlog_query() -> Any:
    """Built once (`holds.NOW`): building it cost more than running it. The holds are asked of the unrated
    matches alone, read first (OFFSET 0 keeps them a subquery PostgreSQL reads before the holds): asked of every
    finished match in the holds' window and only then joined against the rated ones, they cost 0.08 ms a
    match, 35 ms a read once 400 matches had ended, and the backlog reads every few seconds."""
    t, done = m.matches, r.rated_matches
    unrated = (
        select(t.c.id, t.c.updated_unix_ms)
        .where(t.c.status == "finished", ~select(done.c.match_id).where(done.c.match_id == t.c.id).exists())
        .offset(0)
        .subquery("unrated")
    )
    return (
        select(unrated.c.id)
        .where(
            ~holds.delayed(unrated.c.id, holds.NOW),
            ~holds.entered(unrated.c.id, unrated.c.updated_unix_ms, holds.NOW),
            unrated.c.id.not_in(holds.blocked(holds.NOW)),
        )
        .order_by(unrated.c.updated_unix_ms, unrated.c.id)
        .limit(bindparam("limit", type_=Integer))
    )


def count_rated(engine: Engine) -> int:
    with reading(engine) as conn, conn.begin():
        return int(conn.execute(select(func.count()).select_from(r.rated_matches)).scalar() or 0)
