"""Leases: workers register where they listen and in which state they are; a partition whose owner is
empty has been released (its `claimed_unix_ms` is then when it was let go). Each event keeps the epoch
it was written with (who wrote it, for audits: no write of an old epoch after a partition moved on).

Revision ID: 0004_leases
Revises: 0003_tournaments
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_leases"
down_revision = "0003_tournaments"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as table:
        table.add_column(sa.Column("epoch", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("workers") as table:
        table.add_column(sa.Column("address", sa.String(256), nullable=False, server_default=""))
        table.add_column(sa.Column("state", sa.String(16), nullable=False, server_default="active"))
        table.add_column(sa.Column("joined_unix_ms", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("workers") as table:
        table.drop_column("joined_unix_ms")
        table.drop_column("state")
        table.drop_column("address")
    with op.batch_alter_table("events") as table:
        table.drop_column("epoch")
