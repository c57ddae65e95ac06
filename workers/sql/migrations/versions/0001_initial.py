"""The initial schema: players, matches, seats, events, snapshots, partitions, workers.

Revision ID: 0001_initial
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

Json = sa.JSON()  # json, not jsonb, on PostgreSQL: documents come back as written, keys in order


def upgrade() -> None:
    op.create_table(
        "players",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.UniqueConstraint("name", name="uq_players_name"),
    )
    op.create_table(
        "matches",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("options", Json, nullable=False),
        sa.Column("created_unix_ms", sa.BigInteger(), nullable=False),
        sa.Column("lot", sa.Integer(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("void_reason", sa.String(64), nullable=True),
        sa.Column("deadline_unix_ms", sa.BigInteger(), nullable=True),
        sa.Column("clock_running", sa.Boolean(), nullable=False),
        sa.Column("updated_unix_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_matches_status_deadline", "matches", ["status", "deadline_unix_ms"])
    op.create_index("ix_matches_partition_status", "matches", ["partition", "status"])
    op.create_table(
        "seats",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("token_sha256", sa.LargeBinary(32), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_seats_match", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name="fk_seats_player"),
    )
    op.create_index("ix_seats_player", "seats", ["player_id"])
    op.create_table(
        "events",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("change", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=True),
        sa.Column("action", Json, nullable=False),
        sa.Column("t_ms", sa.BigInteger(), nullable=False),
        sa.Column("written_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_events_match", ondelete="CASCADE"),
    )
    op.create_table(
        "snapshots",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("blob", sa.LargeBinary(), nullable=False),
        sa.Column("written_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_snapshots_match", ondelete="CASCADE"),
    )
    op.create_table(
        "partitions",
        sa.Column("partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("claimed_unix_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "workers",
        sa.Column("owner", sa.String(128), primary_key=True),
        sa.Column("heartbeat_unix_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workers")
    op.drop_table("partitions")
    op.drop_table("snapshots")
    op.drop_table("events")
    op.drop_index("ix_seats_player", table_name="seats")
    op.drop_table("seats")
    op.drop_index("ix_matches_partition_status", table_name="matches")
    op.drop_index("ix_matches_status_deadline", table_name="matches")
    op.drop_table("matches")
    op.drop_table("players")
