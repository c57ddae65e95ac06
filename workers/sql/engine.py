"""Which database, and a configured SQLAlchemy engine for it.

One setting chooses the database: `TABLEHALL_DATABASE_URL`. Without it the embedded default is a
SQLite file, `tablehall.db` in the working directory. Production points it at PostgreSQL, e.g.
`postgresql+psycopg://tablehall@db:5432/tablehall` (psycopg 3).

SQLite runs in WAL mode (readers never block the single writer, and a commit appends to the WAL
instead of rewriting pages) with `synchronous=FULL`: every commit fsyncs the WAL, so an acknowledged
command survives a power loss or an OS crash, not only a killed process (`NORMAL` would survive kill -9
but may lose the last commits on power loss). Group commit pays that fsync once per batch, so FULL costs
little throughput; `TABLEHALL_SQLITE_SYNCHRONOUS=NORMAL` trades it away if wanted.

`make_engine` is where every process opens its database (serve, worker, the Celery side, organizers,
tournaments), so it is also where a database that cannot be used becomes one clear `DatabaseUnusable`
(not a URL, an unknown or missing driver, nothing there to connect to): it connects once before returning.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

DEFAULT_DATABASE_URL = "sqlite:///tablehall.db"
BUSY_TIMEOUT_S = 30.0
LOCK_POLL_S = 0.001
T = TypeVar("T")


SHOWN_URL_CHARS = 120
"""A URL that cannot be parsed is quoted up to this length (never a huge input)."""
URL_FORMS = "sqlite:///FILE or postgresql+psycopg://USER@HOST:PORT/DATABASE"


class DatabaseUnusable(Exception):
    """The database at a URL cannot be used; the message is one line, with any password hidden."""


class DatabaseUnreachable(DatabaseUnusable, OperationalError):
    """No connection to the database (none there, refused, a missing file's folder). Still an
    `OperationalError`, so what retries on a database outage (the Celery tasks) retries on this too."""

    def __init__(self, message: str, error: DBAPIError) -> None:
        OperationalError.__init__(self, error.statement, error.params, error.orig or error)
        self.message = message

    def __str__(self) -> str:
        return self.message


def database_url() -> str:
    """The database URL from `TABLEHALL_DATABASE_URL`, else the embedded SQLite file `tablehall.db`."""
    return os.environ.get("TABLEHALL_DATABASE_URL") or DEFAULT_DATABASE_URL


def is_sqlite(engine_or_url: Engine | str) -> bool:
    url = engine_or_url.url if isinstance(engine_or_url, Engine) else parse_url(engine_or_url)
    return url.get_backend_name() == "sqlite"


PG_CONNECT: dict[str, Any] = {
    # a session cut off in the middle of a transaction (its COMMIT never arrives) would keep its row locks
    # (a partition's FOR SHARE) until the server noticed the dead connection, hours later, and no worker
    # could take that partition over: the server ends such a transaction after 2 s (ours last milliseconds)
    "options": "-c idle_in_transaction_session_timeout=2000",
    "connect_timeout": 5,
    "tcp_user_timeout": 5000,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
}
"""libpq settings: a connection whose packets stop being acknowledged (the database cut off) fails within
seconds instead of hanging for the kernel's many minutes, so a worker notices and its calls end."""


def parse_url(url: str) -> URL:
    """`url` parsed, or `DatabaseUnusable` saying which forms are expected."""
    try:
        return make_url(url)
    except ArgumentError:
        shown = url if len(url) <= SHOWN_URL_CHARS else url[:SHOWN_URL_CHARS] + "…"
        raise DatabaseUnusable(f"{shown!r} is not a database URL (expected {URL_FORMS})") from None


def make_engine(
    url: str,
    *,
    sqlite_synchronous: str | None = None,
    pool_size: int | None = None,
    busy_timeout_s: float | None = None,
    pre_ping: bool = True,
) -> Engine:
    """An engine for `url` that has connected once; `DatabaseUnusable` when it cannot.
    `pool_size`: connections kept (default 5 on PostgreSQL, 8 on SQLite), as many more on demand.
    `busy_timeout_s`: how long SQLite's own busy handler waits for the write lock (default 30 s; 0: the
    caller retries itself, see workers/sql/leases.py).
    `pre_ping`: PostgreSQL, a round trip at every checkout to find a connection the server dropped (off for
    the group commit's writer, which retries a failed batch op by op on a new connection anyway)."""
    parsed = parse_url(url)
    shown = parsed.render_as_string(hide_password=True)
    try:
        engine = _engine(url, sqlite_synchronous, pool_size, busy_timeout_s, pre_ping)
    except (NoSuchModuleError, ImportError) as error:
        raise DatabaseUnusable(
            f"{shown}: no driver for {parsed.drivername!r} ({error}; expected {URL_FORMS})"
        ) from None
    try:
        with engine.connect():
            pass
    except DBAPIError as error:
        engine.dispose()
        raise DatabaseUnreachable(f"cannot open the database {shown}: {_reason(error)}", error) from None
    return engine


def reading(engine: Engine) -> Connection:
    """A connection for reads only. On SQLite its transactions begin DEFERRED: they take no write lock, so a
    read never holds the log writer's commits back (every other transaction begins IMMEDIATE, `_on_begin`),
    and the write lock is never held by a thread waiting for the GIL behind a busy event loop."""
    return engine.connect().execution_options(**({"sqlite_begin": "DEFERRED"} if is_sqlite(engine) else {}))


def retry_locked(transaction: Callable[[], T], give_up_s: float = BUSY_TIMEOUT_S) -> T:
    """Run one writing transaction (its BEGIN IMMEDIATE takes SQLite's write lock) until it gets the lock,
    on an engine made with `busy_timeout_s=0`. SQLite's own busy handler sleeps up to 100 ms between tries
    while other processes' commits keep taking the lock, so with several writing processes a waiter can
    starve for seconds (measured: hand-offs of 1.6 s during a roll of three workers); here the lock is tried
    every millisecond. Any other error, or the lock still taken after `give_up_s`, is raised."""
    give_up = time.monotonic() + give_up_s
    while True:
        try:
            return transaction()
        except (OperationalError, sqlite3.OperationalError) as error:  # SQLAlchemy's, or the driver's own
            if "locked" not in str(error) or time.monotonic() > give_up:
                raise
        time.sleep(LOCK_POLL_S)


def _reason(error: DBAPIError) -> str:
    """The driver's own words, on one line ("database "x" does not exist", "unable to open database file")."""
    words = " ".join(str(error.orig).split())
    return words.rsplit("FATAL: ", 1)[-1][:300]


def _engine(
    url: str, sqlite_synchronous: str | None, pool_size: int | None, busy_timeout_s: float | None, pre_ping: bool
) -> Engine:
    """An engine for `url`; for SQLite with WAL, fsync policy, foreign keys and explicit transactions."""
    if not is_sqlite(url):
        size = pool_size or 5
        return create_engine(url, pool_pre_ping=pre_ping, pool_size=size, max_overflow=size, connect_args=PG_CONNECT)
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
