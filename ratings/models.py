"""The ratings tables (revision `0002_ratings`), on the same metadata as the match tables.

- `ratings`: one row per (player, game): the openskill Plackett–Luce `mu`/`sigma`, the `ordinal`
  (mu − 3σ, what the leaderboard sorts by, indexed per game) and the number of rated games.
- `rating_history`: one row per (match, player): the rank in that match and the rating before and after.
- `rated_matches`: the applied-marker. Its primary key (match_id) is inserted in the same transaction as
  the new ratings and their history rows, so a match changes ratings at most once however often its
  task runs; `result` says `rated`, or `skipped` (nothing to rate: nobody acted, a seat played twice).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, ForeignKey, Index, Integer, String, Table

from workers.sql.models import metadata

ratings = Table(
    "ratings",
    metadata,
    Column("player_id", Integer, ForeignKey("players.id", name="fk_ratings_player"), primary_key=True),
    Column("game", String(32), primary_key=True),
    Column("mu", Float, nullable=False),
    Column("sigma", Float, nullable=False),
    Column("ordinal", Float, nullable=False),
    Column("games", Integer, nullable=False),
    Column("updated_unix_ms", BigInteger, nullable=False),
    Index("ix_ratings_game_ordinal", "game", "ordinal"),
)

rating_history = Table(
    "rating_history",
    metadata,
    Column("match_id", String(64), ForeignKey("matches.id", name="fk_rating_history_match"), primary_key=True),
    Column("player_id", Integer, ForeignKey("players.id", name="fk_rating_history_player"), primary_key=True),
    Column("game", String(32), nullable=False),
    Column("rank", Integer, nullable=False),
    Column("mu_before", Float, nullable=False),
    Column("sigma_before", Float, nullable=False),
    Column("mu_after", Float, nullable=False),
    Column("sigma_after", Float, nullable=False),
    Column("at_unix_ms", BigInteger, nullable=False),
    Index("ix_rating_history_player", "player_id", "game", "at_unix_ms"),
)

rated_matches = Table(
    "rated_matches",
    metadata,
    Column("match_id", String(64), ForeignKey("matches.id", name="fk_rated_matches_match"), primary_key=True),
    Column("game", String(32), nullable=False),
    Column("result", String(16), nullable=False),
    Column("rated_unix_ms", BigInteger, nullable=False),
)
