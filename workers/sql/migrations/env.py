"""Alembic environment: the SQLModel metadata of `workers.sql.models`, online migrations only."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, text

from workers.sql.engine import make_engine
from workers.sql.models import metadata

config = context.config
target_metadata = metadata

# Any constant: processes that start together take turns instead of racing to create the same tables.
PG_MIGRATION_LOCK = 0x7461626C6568616C


def run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, compare_type=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK})
        # (SQLite: the transaction begins IMMEDIATE, so it holds the write lock from the start.)
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.connect() as conn:
            run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("tablehall migrations run online only: python -m workers.sql --url URL")
run_migrations_online()
