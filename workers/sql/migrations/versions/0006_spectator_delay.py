"""Tournaments: how late spectators see their tables (`spectator_delay_ms`, 0 = live).

Revision ID: 0006_spectator_delay
Revises: 0005_lobby
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_spectator_delay"
down_revision = "0005_lobby"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tournaments") as table:
        table.add_column(sa.Column("spectator_delay_ms", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("tournaments") as table:
        table.drop_column("spectator_delay_ms")
