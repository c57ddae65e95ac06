"""Which database, and a configured SQLAlchemy engine for it.

One setting chooses the database: `TABLEHALL_DATABASE_URL`. Without it the embedded default is a
SQLite file, `tablehall.db` in the working directory. Production points it at PostgreSQL, e.g.
`postgresql+psycopg://tablehall@db:5432/tablehall` (psycopg 3).

SQLite runs in WAL mode (readers never block the single writer, and a commit appends to the WAL
instead of rewriting pages) with `synchronous=FULL`: every commit fsyncs the WAL, so an acknowledged
command survives a power loss or an OS crash, not only a killed process (`NORMAL` would survive kill -9
but may lose the last commits on power loss). Group commit pays that fsync once per batch, so FULL costs
little throughput; `TABLEHALL_SQLITE_SYNCHRONOUS=NORMAL` trades it away if wanted.
"""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

DEFAULT_DATABASE_URL = "sqlite:///tablehall.db"
BUSY_TIMEOUT_S = 30.0


def database_url() -> str:
    """The database URL from `TABLEHALL_DATABASE_URL`, else the embedded SQLite file `tablehall.db`."""
    return os.environ.get("TABLEHALL_DATABASE_URL") or DEFAULT_DATABASE_URL


def is_sqlite(engine_or_url: Engine | str) -> bool:
    url = engine_or_url.url if isinstance(engine_or_url, Engine) else make_url(engine_or_url)
    return url.get_backend_name() == "sqlite"


def make_engine(url: str, *, sqlite_synchronous: str | None = None) -> Engine:
    """An engine for `url`; for SQLite with WAL, fsync policy, foreign keys and explicit transactions."""
    if not is_sqlite(url):
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)
    synchronous = (sqlite_synchronous or os.environ.get("TABLEHALL_SQLITE_SYNCHRONOUS") or "FULL").upper()
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"SQLite synchronous mode {synchronous!r}: OFF, NORMAL, FULL or EXTRA")
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S}, pool_size=8, max_overflow=8
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins (see `_on_begin`).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A writing transaction takes the write lock up front (BEGIN IMMEDIATE): its fencing check and
        # its writes are one atomic step, and it waits for the lock instead of failing on upgrade.
        mode = connection.get_execution_options().get("sqlite_begin", "IMMEDIATE")
        connection.exec_driver_sql(f"BEGIN {mode}")

    return engine
