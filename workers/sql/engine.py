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


PG_CONNECT: dict[str, Any] = {
    "connect_timeout": 5,
    "tcp_user_timeout": 5000,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
}
"""libpq settings: a connection whose packets stop being acknowledged (the database cut off) fails within
seconds instead of hanging for the kernel's many minutes, so a worker notices and its calls end."""


def make_engine(
    url: str,
    *,
    sqlite_synchronous: str | None = None,
    pool_size: int | None = None,
    busy_timeout_s: float | None = None,
) -> Engine:
    """An engine for `url`; for SQLite with WAL, fsync policy, foreign keys and explicit transactions.
    `pool_size`: connections kept (default 5 on PostgreSQL, 8 on SQLite), as many more on demand.
    `busy_timeout_s`: how long SQLite's own busy handler waits for the write lock (default 30 s; 0: the
    caller retries itself, see workers/sql/leases.py)."""
    if not is_sqlite(url):
        size = pool_size or 5
        return create_engine(url, pool_pre_ping=True, pool_size=size, max_overflow=size, connect_args=PG_CONNECT)
    synchronous = (sqlite_synchronous or os.environ.get("TABLEHALL_SQLITE_SYNCHRONOUS") or "FULL").upper()
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"SQLite synchronous mode {synchronous!r}: OFF, NORMAL, FULL or EXTRA")
    size = pool_size or 8
    busy = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": busy}, pool_size=size, max_overflow=size
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins (see `_on_begin`).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
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
