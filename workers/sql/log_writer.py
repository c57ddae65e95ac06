"""The connection the log's writes are committed on, and how one batch of them becomes one transaction: the
same in the writer thread (`batching.GroupCommitter` in the serving process) and in the writer process
(`writer_process`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from sqlalchemy import Connection, Engine

from workers.sql import writes
from workers.sql.batching import Op
from workers.sql.engine import is_sqlite, make_engine, retry_locked
from workers.sql.pg_at_once import append_at_once, appends_only


def writing_engine(url: str, sqlite_synchronous: str | None = None) -> Engine:
    """The writer's engine, one connection. SQLite: it tries the write lock every millisecond itself (a worker
    starting beside busy ones waited seconds). PostgreSQL: no ping round trip before every batch (a batch that
    meets a dropped connection is retried op by op, reconnected)."""
    if is_sqlite(url):
        return make_engine(url, sqlite_synchronous=sqlite_synchronous, pool_size=1, busy_timeout_s=0)
    return make_engine(url, pool_size=1, pre_ping=False)


class LogWriter:
    """Applies batches on one connection, kept from batch to batch (no pool checkout and return per batch)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._held: Connection | None = None
        self._at_once = not is_sqlite(engine)
        """PostgreSQL: a batch of appends that all pass goes as one autocommitted statement (`pg_at_once`)."""
        self.at_once = 0
        """Batches written that way (the others went as a transaction)."""

    def connect(self) -> None:
        """Hold a connection now, before the first batch (a writer process does while its serving process
        still starts); if the database cannot be reached yet, the first batch connects."""
        if self._held is None:
            with contextlib.suppress(Exception):
                self._held = self.engine.connect()

    def apply(self, ops: Sequence[Op]) -> list[object]:
        def once() -> list[object]:
            conn = self._held or self.engine.connect()
            try:
                appends = appends_only(ops) if self._at_once else None
                if appends and append_at_once(conn.connection.dbapi_connection, appends):
                    outcomes: list[object] = [None] * len(ops)
                    self.at_once += 1
                else:
                    with conn.begin():  # the transaction tells each op its own outcome
                        outcomes = writes.apply(conn, ops)
            except BaseException:
                self._held = None  # back to the pool, rolled back (a broken one is replaced there)
                conn.close()
                raise
            self._held = conn
            return outcomes

        return retry_locked(once)

    def close(self) -> None:
        """Once no batch runs any more."""
        if self._held is not None:
            self._held.close()
            self._held = None
        self.engine.dispose()
