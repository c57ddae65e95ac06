"""Reads behind the public rating RPCs: a player's rating, a game's leaderboard, a rating history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select

from ratings import models as r
from ratings.rating import DEFAULT_MU, DEFAULT_SIGMA, ordinal
from workers.sql import models as m
from workers.sql.engine import reading
from workers.sql.models import rows


@dataclass(frozen=True, slots=True)
class RatingRow:
    player: str
    game: str
    mu: float
    sigma: float
    ordinal: float
    games: int


@dataclass(frozen=True, slots=True)
class Change:
    match_id: str
    rank: int
    mu_before: float
    sigma_before: float
    mu_after: float
    sigma_after: float
    at_unix_ms: int


def rating_of(engine: Engine, player: str, game: str) -> RatingRow:
    t, pl = r.ratings, m.players
    query = (
        select(t.c.mu, t.c.sigma, t.c.ordinal, t.c.games)
        .select_from(t.join(pl, pl.c.id == t.c.player_id))
        .where(pl.c.name == player, t.c.game == game)
    )
    with reading(engine) as conn, conn.begin():
        found: Any = conn.execute(query).first()
    if found is None:
        return RatingRow(player, game, DEFAULT_MU, DEFAULT_SIGMA, ordinal(DEFAULT_MU, DEFAULT_SIGMA), 0)
    return RatingRow(player, game, *found)


def leaderboard(engine: Engine, game: str, limit: int) -> list[RatingRow]:
    t, pl = r.ratings, m.players
    query = (
        select(pl.c.name, t.c.mu, t.c.sigma, t.c.ordinal, t.c.games)
        .select_from(t.join(pl, pl.c.id == t.c.player_id))
        .where(t.c.game == game)
        .order_by(t.c.ordinal.desc(), pl.c.name)
        .limit(limit)
    )
    with reading(engine) as conn, conn.begin():
        return [RatingRow(name, game, mu, sigma, o, games) for name, mu, sigma, o, games in rows(conn, query)]


def history(engine: Engine, player: str, game: str, limit: int) -> list[Change]:
    h, pl = r.rating_history, m.players
    query = (
        select(h.c.match_id, h.c.rank, h.c.mu_before, h.c.sigma_before, h.c.mu_after, h.c.sigma_after, h.c.at_unix_ms)
        .select_from(h.join(pl, pl.c.id == h.c.player_id))
        .where(pl.c.name == player, h.c.game == game)
        .order_by(h.c.at_unix_ms.desc(), h.c.match_id.desc())
        .limit(limit)
    )
    with reading(engine) as conn, conn.begin():
        return [Change(*row) for row in rows(conn, query)]
