"""SQLite's one write lock across processes: a writer waiting for it tries every millisecond
(`retry_locked`) instead of SQLite's busy handler, which backs off to 100 ms sleeps and starves under
several writing processes; the storage's writer and migration use it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from workers.sql.engine import make_engine, retry_locked
from workers.sql.storage import SqlStorage


def _hold_lock(path: Path, taken: threading.Event, release: threading.Event) -> None:
    """Another writer (its own sqlite3 connection, as another process would have) holds the write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("BEGIN IMMEDIATE")
    taken.set()
    release.wait(10)
    other.execute("COMMIT")
    other.close()


def test_a_writer_gets_the_lock_once_another_lets_it_go(tmp_path: Path) -> None:
    path = tmp_path / "lock.db"
    engine = make_engine(f"sqlite:///{path}", busy_timeout_s=0)
    with engine.connect() as conn, conn.begin():
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    taken, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(path, taken, release))
    holder.start()
    assert taken.wait(10)
    tries = 0

    def write() -> int:
        nonlocal tries
        tries += 1
        if tries == 3:
            release.set()  # the other writer commits while this one keeps trying
        with engine.connect() as conn, conn.begin():
            conn.execute(text("INSERT INTO t VALUES (1)"))
            return int(conn.execute(text("SELECT count(*) FROM t")).scalar_one())

    assert retry_locked(write) == 1
    assert tries >= 3
    holder.join()
    engine.dispose()


def test_a_writer_gives_up_after_its_bound_and_other_errors_are_not_retried(tmp_path: Path) -> None:
    path = tmp_path / "lock.db"
    engine = make_engine(f"sqlite:///{path}", busy_timeout_s=0)
    taken, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(path, taken, release))
    holder.start()
    assert taken.wait(10)

    def write() -> None:
        with engine.connect() as conn, conn.begin():
            conn.execute(text("CREATE TABLE u (x INTEGER)"))

    with pytest.raises(OperationalError, match="locked"):
        retry_locked(write, give_up_s=0.05)
    release.set()
    holder.join()
    calls = 0

    def broken() -> None:
        nonlocal calls
        calls += 1
        with engine.connect() as conn, conn.begin():
            conn.execute(text("INSERT INTO nosuch VALUES (1)"))

    with pytest.raises(OperationalError, match="no such table"):
        retry_locked(broken)
    assert calls == 1
    engine.dispose()


def test_storage_opens_while_another_process_holds_the_lock_for_a_while(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    asyncio.run(SqlStorage(f"sqlite:///{path}").close())  # migrated once
    taken, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(path, taken, release))
    holder.start()
    assert taken.wait(10)
    timer = threading.Timer(0.2, release.set)
    timer.start()
    # its migration (on the writer's connection, which has no busy handler) waits for the lock, then finds the
    # schema at head: no "database is locked"
    storage = SqlStorage(f"sqlite:///{path}")
    holder.join()
    asyncio.run(storage.close())
