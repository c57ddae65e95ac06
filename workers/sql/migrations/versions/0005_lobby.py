"""The Lobby: player keys, the pairing queue, the tables it made and their seats, challenges, the
pairing loop's lease (gateway/lobby/schema.py).

Revision ID: 0005_lobby
Revises: 0004_leases
Create Date: 2026-12-02
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005_lobby"
down_revision = "0004_leases"
branch_labels = None
depends_on = None


def _player(constraint: str, primary_key: bool = False) -> list[Any]:
    return [
        sa.Column("player_id", sa.Integer(), primary_key=primary_key, nullable=False, autoincrement=False),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name=constraint),
    ]


def upgrade() -> None:
    op.create_table(
        "player_keys",
        *_player("fk_player_keys_player", primary_key=True),
        sa.Column("key_sha256", sa.LargeBinary(32), nullable=False, unique=True),
        sa.Column("registered_unix_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "lobby_queue",
        *_player("fk_lobby_queue_player", primary_key=True),
        sa.Column("ticket", sa.String(32), nullable=False, unique=True),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("options", sa.String(1024), nullable=False),
        sa.Column("ordinal", sa.Float(), nullable=False),
        sa.Column("joined_unix_ms", sa.BigInteger(), nullable=False),
        sa.Column("seen_unix_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_lobby_queue_game", "lobby_queue", ["game", "joined_unix_ms"])
    op.create_table(
        "lobby_tables",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("options", sa.String(1024), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("gap", sa.Float(), nullable=False),
        sa.Column("created_unix_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_lobby_tables_state", "lobby_tables", ["state"])
    op.create_table(
        "lobby_seats",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True, autoincrement=False),
        *_player("fk_lobby_seats_player"),
        sa.Column("ticket", sa.String(32), nullable=False),
        sa.Column("joined_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["lobby_tables.match_id"], name="fk_lobby_seats_table"),
    )
    op.create_index("ix_lobby_seats_player", "lobby_seats", ["player_id"])
    op.create_table(
        "lobby_challenges",
        sa.Column("id", sa.String(32), primary_key=True),
        *_player("fk_lobby_challenges_player"),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("options", sa.String(1024), nullable=False),
        sa.Column("seats", sa.Integer(), nullable=False),
        sa.Column("unlisted", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("match_id", sa.String(64), nullable=True),
        sa.Column("opened_unix_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_lobby_challenges_state", "lobby_challenges", ["state", "opened_unix_ms"])
    op.create_table(
        "challenge_takers",
        sa.Column("challenge_id", sa.String(32), primary_key=True),
        *_player("fk_takers_player", primary_key=True),
        sa.Column("taken_unix_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["challenge_id"], ["lobby_challenges.id"], name="fk_takers_challenge"),
    )
    op.create_table(
        "lobby_leader",
        sa.Column("name", sa.String(32), primary_key=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("until_unix_ms", sa.BigInteger(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    for name in ("lobby_leader", "challenge_takers", "lobby_challenges", "lobby_seats", "lobby_tables"):
        op.drop_table(name)
    op.drop_index("ix_lobby_queue_game", "lobby_queue")
    op.drop_table("lobby_queue")
    op.drop_table("player_keys")
