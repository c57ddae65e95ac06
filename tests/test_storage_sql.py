"""What only the SQL storage has: group commit in few transactions, two processes fenced through the
database, bulk recovery queries, an event loop that never waits on the database, its settings."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.exc import IntegrityError

from tests.storage_backends import SQL_BACKENDS, Backend, backend_for, run
from tests.test_storage_contract import RUNNING, match, step
from workers.sql import SqlStorage, database_url
from workers.sql import models as m
from workers.storage import SNAPSHOT_FORMAT, FencedOut, Progress, Snapshot

P = 7


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


def sql(backend: Backend) -> SqlStorage:
    assert backend.url is not None
    return SqlStorage(backend.url)


def test_concurrent_appends_share_transactions(backend: Backend) -> None:
    async def body() -> None:
        s = sql(backend)
        epoch = (await s.claim("w0", [P]))[P]
        ids = [f"m{i}" for i in range(50)]
        await asyncio.gather(*(s.create(match(i), epoch) for i in ids))
        before = s.stats.batches
        await asyncio.gather(*(s.append(i, P, epoch, step(seq), RUNNING) for seq in range(1, 5) for i in ids))
        assert s.stats.batches - before <= 20, s.stats  # 200 appends, a handful of commits
        assert s.stats.largest >= 20
        await s.close()

    run(body)


def test_two_processes_are_fenced_through_the_database(backend: Backend) -> None:
    """Two storages on one database stand for two worker processes that both think they own P."""

    async def body() -> None:
        a, b = sql(backend), sql(backend)
        old = (await a.claim("a", [P]))[P]
        await a.create(match("m1"), old)
        await a.append("m1", P, old, step(1), RUNNING)
        new = (await b.claim("b", [P]))[P]
        [stored] = await b.unfinished([P])
        with pytest.raises(FencedOut):
            await a.append("m1", P, old, step(2), Progress("finished"))
        await b.append("m1", P, new, step(len(stored.entries) + 1, seat=1), RUNNING)
        with pytest.raises(FencedOut):
            await a.snapshot("m1", P, old, Snapshot(2, b"a"))
        assert await a.log("m1") == [step(1), step(2, seat=1)]
        await a.close()
        await b.close()

    run(body)


def test_a_bulk_create_over_one_statements_worth_of_ids_finds_every_one_that_exists(backend: Backend) -> None:
    """The existence check reads a bulk create's ids in statements of at most 500 on SQLite: an id that
    exists is found in any of them, and the whole batch is refused with nothing of it written."""

    async def body() -> None:
        s = sql(backend)
        await s.create_many([match(f"z{i:04}") for i in range(1200)], {})
        again = [match(f"b{i:04}") for i in range(1200)] + [match("z1100")]  # known: in the third 500, sorted
        with pytest.raises(ValueError, match="z1100"):
            await s.create_many(again, {})
        await s.close()

    run(body)
    with sql(backend).engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM matches")).scalar_one() == 1200


def test_the_database_itself_keeps_seq_unique(backend: Backend) -> None:
    s = sql(backend)
    run(lambda: s.create(match("m1"), 0))
    row = {"match_id": "m1", "seq": 1, "change": 1, "kind": "command", "seat": 0, "action": {}, "t_ms": 0,
           "written_unix_ms": 0}  # fmt: skip
    with s.engine.begin() as conn:
        conn.execute(insert(m.events), row)
    with pytest.raises(IntegrityError), s.engine.begin() as conn:
        conn.execute(insert(m.events), row)
    run(s.close)


def test_only_the_token_hash_is_stored(backend: Backend) -> None:
    s = sql(backend)
    run(lambda: s.create(match("m1"), 0))
    with s.engine.connect() as conn:
        rows = conn.execute(text("SELECT seat, token_sha256 FROM seats ORDER BY seat")).all()
        names = conn.execute(text("SELECT name FROM players ORDER BY name")).scalars().all()
    assert [(seat, bytes(h)) for seat, h in rows] == [(0, b"\x00" * 32), (1, b"\x01" * 32)]
    assert names == ["ann", "bob"]
    run(s.close)


def test_unfinished_loads_in_a_fixed_number_of_queries(backend: Backend) -> None:
    async def fill(s: SqlStorage, first: int, count: int, epoch: int) -> None:
        ids = [f"m{i:04}" for i in range(first, first + count)]
        await asyncio.gather(*(s.create(match(i), epoch) for i in ids))
        for seq in range(1, 4):
            await asyncio.gather(*(s.append(i, P, epoch, step(seq), RUNNING) for i in ids))
        await asyncio.gather(*(s.snapshot(i, P, epoch, Snapshot(1, SNAPSHOT_FORMAT + b"x")) for i in ids[::2]))

    async def counted(s: SqlStorage) -> tuple[int, int]:
        statements: list[str] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            statements.append(statement)

        event.listen(s.engine, "before_cursor_execute", count)
        try:
            found = await s.unfinished([P])
        finally:
            event.remove(s.engine, "before_cursor_execute", count)
        assert all(len(st.entries) == (2 if st.snapshot else 3) for st in found)
        return len(found), len(statements)

    async def body() -> None:
        s = sql(backend)
        epoch = (await s.claim("w0", [P]))[P]
        await fill(s, 0, 10, epoch)
        small = await counted(s)
        await fill(s, 10, 490, epoch)
        large = await counted(s)
        assert (small[0], large[0]) == (10, 500)
        assert small[1] == large[1] <= 6, (small, large)
        await s.close()

    run(body)


def test_waiting_for_the_database_does_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    s = SqlStorage(f"sqlite:///{path}")
    locked, release = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(10)
        other.execute("COMMIT")
        other.close()

    async def body() -> None:
        holder = threading.Thread(target=hold_the_write_lock)
        holder.start()
        locked.wait(10)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        loop = asyncio.get_running_loop()
        loop.call_later(0.5, release.set)
        start = time.monotonic()
        await s.create(match("m1"), 0)
        waited = time.monotonic() - start
        ticker.cancel()
        holder.join()
        assert waited >= 0.45
        assert ticks >= 20, ticks  # the loop kept running while the write waited for the lock
        assert (await s.unfinished([P]))[0].entry == match("m1")
        await s.close()

    run(body)


def test_sqlite_runs_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    s = SqlStorage(f"sqlite:///{tmp_path / 't.db'}")
    with s.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    run(s.close)
    with pytest.raises(RuntimeError, match="closed"):
        run(lambda: s.heartbeat("w", 1))


def test_database_url_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TABLEHALL_DATABASE_URL", raising=False)
    assert database_url() == "sqlite:///tablehall.db"
    monkeypatch.setenv("TABLEHALL_DATABASE_URL", "postgresql+psycopg://u@db:5432/th")
    assert database_url() == "postgresql+psycopg://u@db:5432/th"
