"""Rating one finished match, exactly once.

The outcome is read from the database by replaying the match's log through the engine (the same code
recovery uses): nothing extra is written when a match finishes, so a match is rateable whoever finished
it and however its task was lost. Ranks are the game's placements (`Game.placements`: Spectacular Bid's
winner 1 and loser 2; 501♠ by final score, exact ties sharing a place, a seat out of time last). Every
seat is rated (a four-player table rates all four).

Exactly once: one transaction inserts the applied-marker (`rated_matches`, unique match_id) with
ON CONFLICT DO NOTHING, and only if that inserted a row does it lock the players' rating rows (PostgreSQL:
SELECT ... FOR UPDATE, in player-id order so two matches sharing players cannot deadlock; SQLite: the
transaction holds the write lock from BEGIN IMMEDIATE), update them and write the history rows. A second
delivery, a retry, or a racing worker finds the marker (PostgreSQL makes the racer wait on the marker's
key until the first commits) and changes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce
from sqlalchemy import Connection, Engine, func, select

from ratings import models as r
from workers import metrics
from workers.games.catalog import game_named
from workers.replay_log import fresh, step
from workers.sql import models as m
from workers.sql.models import rows
from workers.sql.writes import upsert
from workers.storage import LogEntry, MatchEntry

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


def load(conn: Connection, match_id: str) -> Finished | None:
    """The match's status and, if it finished, its ranks from a replay of its log (None: no such match)."""
    t = m.matches
    found = rows(
        conn,
        select(t.c.game, t.c.status, t.c.options, t.c.created_unix_ms, t.c.lot, t.c.partition, t.c.updated_unix_ms)
        .where(t.c.id == match_id),
    )
    if not found:
        return None
    game_name, status, options, created, lot, partition, ended = found[0]
    s, pl = m.seats, m.players
    seats = rows(
        conn,
        select(s.c.seat, s.c.player_id, pl.c.name)
        .select_from(s.join(pl, pl.c.id == s.c.player_id))
        .where(s.c.match_id == match_id)
        .order_by(s.c.seat),
    )
    player_ids = tuple(int(pid) for _, pid, _ in seats)
    if status != "finished":
        return Finished(match_id, game_name, status, player_ids, None, status)
    game = game_named(game_name)
    assert game is not None
    entry = MatchEntry(match_id, game_name, tuple(n for _, _, n in seats), options, (), created, lot, partition)
    ev = m.events
    log = [
        LogEntry(seq, change, kind, seat, action, t_ms)
        for seq, change, kind, seat, action, t_ms in rows(
            conn,
            select(ev.c.seq, ev.c.change, ev.c.kind, ev.c.seat, ev.c.action, ev.c.t_ms)
            .where(ev.c.match_id == match_id)
            .order_by(ev.c.seq),
        )
    ]
    position = fresh(game, entry)
    for logged in log:
        step(game, position, logged)
    placements = game.placements(position.match.state)
    if placements is None:
        return Finished(match_id, game_name, "voided", player_ids, None, "the log does not end in a result")
    if not any(e.kind == "command" for e in log):
        return Finished(match_id, game_name, status, player_ids, None, "abandoned: no seat ever acted")
    if len(set(player_ids)) != len(player_ids):
        return Finished(match_id, game_name, status, player_ids, None, "one player held several seats")
    ranks = tuple(p.place for p in placements)
    return Finished(match_id, game_name, status, player_ids, ranks, ended_unix_ms=int(ended))


def _read_only(engine: Engine) -> Any:
    return engine.connect().execution_options(
        **({"sqlite_begin": "DEFERRED"} if engine.dialect.name == "sqlite" else {})
    )


def rate_match(engine: Engine, match_id: str) -> str:
    """Rate one match once: `rated`, `already` (a marker exists), `skipped` (finished, nothing to rate:
    marked so), `not_finished`, `voided` or `unknown`. Safe to call any number of times, concurrently."""
    result = _rate_match(engine, match_id)
    metrics.RATED.labels(result).inc()
    return result


def _rate_match(engine: Engine, match_id: str) -> str:
    with _read_only(engine) as conn, conn.begin():
        done = conn.execute(select(r.rated_matches.c.match_id).where(r.rated_matches.c.match_id == match_id))
        if done.first() is not None:
            return "already"
        found = load(conn, match_id)
    if found is None:
        return "unknown"
    if found.status == "in_progress":
        return "not_finished"
    if found.status != "finished":
        return "voided"
    return apply(engine, found)


def apply(engine: Engine, found: Finished) -> str:
    now = now_ms()
    with engine.connect() as conn, conn.begin():
        marker = upsert(conn, r.rated_matches).values(
            match_id=found.match_id, game=found.game, result="rated" if found.ranks else "skipped", rated_unix_ms=now
        )
        if conn.execute(marker.on_conflict_do_nothing().returning(r.rated_matches.c.match_id)).first() is None:
            return "already"
        if found.ranks is None:
            return "skipped"
        ids = sorted(set(found.player_ids))
        fresh_rows = [
            {
                "player_id": pid, "game": found.game, "mu": DEFAULT_MU, "sigma": DEFAULT_SIGMA,
                "ordinal": ordinal(DEFAULT_MU, DEFAULT_SIGMA), "games": 0, "updated_unix_ms": now,
            }
            for pid in ids
        ]
        conn.execute(upsert(conn, r.ratings).on_conflict_do_nothing(), fresh_rows)
        t = r.ratings
        query = (
            select(t.c.player_id, t.c.mu, t.c.sigma, t.c.games)
            .where(t.c.game == found.game, t.c.player_id.in_(ids))
            .order_by(t.c.player_id)
        )
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        current = {pid: (mu, sigma, games) for pid, mu, sigma, games in rows(conn, query)}
        before = [current[pid][:2] for pid in found.player_ids]
        after = rate_ranks(before, found.ranks)
        for seat, pid in enumerate(found.player_ids):
            mu, sigma = after[seat]
            conn.execute(
                t.update()
                .where(t.c.player_id == pid, t.c.game == found.game)
                .values(
                    mu=mu, sigma=sigma, ordinal=ordinal(mu, sigma), games=current[pid][2] + 1, updated_unix_ms=now
                )
            )
        conn.execute(
            r.rating_history.insert(),
            [
                {
                    "match_id": found.match_id, "player_id": pid, "game": found.game, "rank": found.ranks[seat],
                    "mu_before": before[seat][0], "sigma_before": before[seat][1],
                    "mu_after": after[seat][0], "sigma_after": after[seat][1], "at_unix_ms": now,
                }
                for seat, pid in enumerate(found.player_ids)
            ],
        )
    if found.ended_unix_ms:
        metrics.RATING_LAG.labels(found.game).observe(max(0, now_ms() - found.ended_unix_ms) / 1000)
    return "rated"


def backlog(engine: Engine, limit: int = 500) -> list[str]:
    """Finished matches without an applied-marker (their task was lost, or never sent): rate them."""
    t, done = m.matches, r.rated_matches
    query = (
        select(t.c.id)
        .where(t.c.status == "finished", ~select(done.c.match_id).where(done.c.match_id == t.c.id).exists())
        .limit(limit)
    )
    with _read_only(engine) as conn, conn.begin():
        return [str(x) for x in conn.scalars(query)]


def count_rated(engine: Engine) -> int:
    with _read_only(engine) as conn, conn.begin():
        return int(conn.execute(select(func.count()).select_from(r.rated_matches)).scalar() or 0)
