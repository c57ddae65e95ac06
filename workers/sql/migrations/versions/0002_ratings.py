"""Ratings: per-player-per-game openskill ratings, their history, and the applied-marker per match.

Revision ID: 0002_ratings
Revises: 0001_initial
Create Date: 2025-01-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_ratings"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ratings",
        sa.Column("player_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("game", sa.String(32), primary_key=True),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("ordinal", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name="fk_ratings_player"),
    )
    op.create_index("ix_ratings_game_ordinal", "ratings", ["game", "ordinal"])
    op.create_table(
        "rating_history",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("mu_before", sa.Float(), nullable=False),
        sa.Column("sigma_before", sa.Float(), nullable=False),
        sa.Column("mu_after", sa.Float(), nullable=False),
        sa.Column("sigma_after", sa.Float(), nullable=False),
        sa.Column("at_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_rating_history_match"),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name="fk_rating_history_player"),
    )
    op.create_index("ix_rating_history_player", "rating_history", ["player_id", "game", "at_unix_ms"])
    op.create_table(
        "rated_matches",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("rated_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_rated_matches_match"),
    )


def downgrade() -> None:
    op.drop_table("rated_matches")
    op.drop_index("ix_rating_history_player", table_name="rating_history")
    op.drop_table("rating_history")
    op.drop_index("ix_ratings_game_ordinal", table_name="ratings")
    op.drop_table("ratings")
