"""Tournaments: organizers, batches of tables, tournaments, their players and byes (gateway/tournaments/schema.py).

Revision ID: 0003_tournaments
Revises: 0002_ratings
Create Date: 2025-01-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_tournaments"
down_revision = "0002_ratings"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "organizers",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("key_sha256", sa.LargeBinary(32), nullable=False),
        sa.Column("created_unix_ms", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("name", name="uq_organizers_name"),
        sa.UniqueConstraint("key_sha256", name="uq_organizers_key"),
    )
    op.create_table(
        "tournaments",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("organizer_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("voided", sa.String(8), nullable=False),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.Column("round_pause_ms", sa.BigInteger(), nullable=False),
        sa.Column("starts_unix_ms", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("current_round", sa.Integer(), nullable=False),
        sa.Column("created_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["organizer_id"], ["organizers.id"], name="fk_tournaments_organizer"),
    )
    op.create_table(
        "tournament_players",
        sa.Column("tournament_id", sa.String(32), primary_key=True),
        sa.Column("seed", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("token_sha256", sa.LargeBinary(32), nullable=False),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"], name="fk_tournament_players_tournament"),
        sa.UniqueConstraint("tournament_id", "name", name="uq_tournament_players_name"),
        sa.UniqueConstraint("token_sha256", name="uq_tournament_players_token"),
    )
    op.create_table(
        "tournament_byes",
        sa.Column("tournament_id", sa.String(32), primary_key=True),
        sa.Column("round", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("player", sa.String(64), primary_key=True),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"], name="fk_tournament_byes_tournament"),
    )
    op.create_table(
        "batches",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("organizer_id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.String(32), nullable=True),
        sa.Column("round", sa.Integer(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("starts_unix_ms", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("tables", sa.Integer(), nullable=False),
        sa.Column("scheduled", sa.Integer(), nullable=False),
        sa.Column("created_unix_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["organizer_id"], ["organizers.id"], name="fk_batches_organizer"),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"], name="fk_batches_tournament"),
    )
    op.create_index("ix_batches_tournament", "batches", ["tournament_id", "round"])
    op.create_table(
        "batch_tables",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("batch_id", sa.String(64), nullable=False),
        sa.Column("table_no", sa.Integer(), nullable=False),
        sa.Column("players", sa.JSON(), nullable=False),
        sa.Column("token_sha256", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["batches.id"], name="fk_batch_tables_batch"),
    )
    op.create_index("ix_batch_tables_batch", "batch_tables", ["batch_id", "table_no"])


def downgrade() -> None:
    op.drop_index("ix_batch_tables_batch", table_name="batch_tables")
    op.drop_table("batch_tables")
    op.drop_index("ix_batches_tournament", table_name="batches")
    op.drop_table("batches")
    op.drop_table("tournament_byes")
    op.drop_table("tournament_players")
    op.drop_table("tournaments")
    op.drop_table("organizers")
