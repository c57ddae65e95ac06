"""Tournaments: when each table's match ended (`batch_tables.ended_unix_ms`), so that a delayed tournament
shows a result to the public only once it is as old as the spectator delay.

Revision ID: 0007_table_ended
Revises: 0006_spectator_delay
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_table_ended"
down_revision = "0006_spectator_delay"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("batch_tables") as table:
        table.add_column(sa.Column("ended_unix_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("batch_tables") as table:
        table.drop_column("ended_unix_ms")
