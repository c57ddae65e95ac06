"""The lease door's kept connections (workers/sql/leases.py `Board._kept`): a heartbeat and a read of the
lease table are one driver statement each, in autocommit, on connections of their own. A heartbeat still
waits for SQLite's write lock rather than failing, and a connection the server cut is opened again."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.storage_backends import Backend, backend_for, run
from workers.sql import SqlStorage

T0 = 1_700_000_000_000


def _heartbeat(store: SqlStorage, owner: str) -> int:
    async def read() -> int:
        member = (await store.leases()).member(owner)
        assert member is not None
        return member.heartbeat_unix_ms

    return asyncio.run(read())


def test_a_heartbeat_waits_for_sqlite_s_write_lock_then_goes_through(tmp_path: Path) -> None:
    """Another process holds the write lock: the heartbeat does not fail (the driver's own "database is
    locked", tried again every millisecond) and is written once the lock is let go. The readiness signal is
    SQLite's own trace of the heartbeat's connection: the statement was tried twice under the lock, so it met
    the lock and tried again, and it has not been written."""
    with backend_for("sqlite", tmp_path) as backend:
        store = run(backend.open)
        assert isinstance(store, SqlStorage)
        try:
            run(lambda: store.join("a", "a:1", T0))
            store.beat("a", T0 + 1)  # the heartbeat thread's kept connection is open now
            kept = store.board._beating
            assert kept is not None
            tries = threading.Semaphore(0)
            kept.pooled.dbapi_connection.set_trace_callback(
                lambda statement: tries.release() if statement.startswith("UPDATE workers") else None
            )
            assert backend.url is not None
            path = make_url(backend.url).database
            holder = sqlite3.connect(str(path), isolation_level=None)
            try:
                holder.execute("BEGIN IMMEDIATE")  # the write lock, as another process's commit holds it
                with ThreadPoolExecutor(1) as pool:
                    beating = pool.submit(store.beat, "a", T0 + 7)
                    assert tries.acquire(timeout=10) and tries.acquire(timeout=10)  # met the lock, tried again
                    assert not beating.done()  # waiting, not failed
                    holder.execute("COMMIT")
                    beating.result(timeout=10)
            finally:
                holder.close()
            assert _heartbeat(store, "a") == T0 + 7
        finally:
            run(store.close)


def test_kept_connections_cut_by_the_server_are_opened_again(tmp_path: Path) -> None:
    """Every connection of the store cut (PostgreSQL: the server ends their sessions): the next heartbeat
    and the next read fail, and the ones after them reconnect and go through."""
    with backend_for("postgresql", tmp_path) as backend:
        _cut_and_reopened(backend)


def _cut_and_reopened(backend: Backend) -> None:
    assert backend.url is not None
    store = run(backend.open)
    assert isinstance(store, SqlStorage)
    try:
        run(lambda: store.join("a", "a:1", T0))
        store.beat("a", T0 + 1)
        assert _heartbeat(store, "a") == T0 + 1  # both kept connections open now
        dsn = make_url(backend.url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as admin:
            cut = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert cut is not None and cut[0] >= 2
        with pytest.raises(psycopg.OperationalError):  # the driver's own: the session is gone
            store.beat("a", T0 + 2)
        store.beat("a", T0 + 3)
        with pytest.raises(psycopg.OperationalError):
            _heartbeat(store, "a")
        assert _heartbeat(store, "a") == T0 + 3
    finally:
        run(store.close)
