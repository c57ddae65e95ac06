"""The pairing lease is written once every half lease, not once a beat, and a loop that does not hold it
only reads it: on SQLite each write takes the one write lock the match log's writer needs for every batch
(a beat is 250 ms, and a join wakes the loop early)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from gateway.lobby import leader
from gateway.lobby import schema as s
from tests.lobby_support import SETTINGS, Lobby, run_lobby
from workers.sql.engine import make_engine
from workers.sql.migrate import migrate

NOW = 1_800_000_000_000
LEASE_MS = 2000


def lease_row(engine: Engine) -> tuple[str, int, int]:
    t = s.lobby_leader
    with engine.connect() as conn:
        row = conn.execute(select(t.c.owner, t.c.until_unix_ms, t.c.epoch).where(t.c.name == leader.NAME)).one()
    return row.owner, row.until_unix_ms, row.epoch


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    """A migrated database on an engine that never waits for a lock."""
    url = f"sqlite:///{tmp_path / 'lease.db'}"
    migrate(url)
    made = make_engine(url, busy_timeout_s=0)
    try:
        yield made
    finally:
        made.dispose()


def test_renewal_is_due_without_a_lease_and_from_half_of_it() -> None:
    assert leader.renewal_due(0, NOW, LEASE_MS)
    until = NOW + LEASE_MS
    assert not leader.renewal_due(until, NOW, LEASE_MS)
    assert not leader.renewal_due(until, NOW + LEASE_MS // 2 - 1, LEASE_MS)
    assert leader.renewal_due(until, NOW + LEASE_MS // 2, LEASE_MS)
    assert leader.renewal_due(until, until + 1, LEASE_MS), "a lease run out is taken again"


def test_a_loop_that_does_not_hold_the_lease_only_reads_it(engine: Engine) -> None:
    assert leader.hold(engine, "ann", NOW, LEASE_MS) == NOW + LEASE_MS
    path = engine.url.database
    assert path is not None
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # the log's writer, say, holds the write lock
    try:
        assert leader.hold(engine, "bob", NOW + 500, LEASE_MS) == 0, "ann's lease runs: bob reads, and waits"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert lease_row(engine) == ("ann", NOW + LEASE_MS, 1)
    assert leader.hold(engine, "bob", NOW + LEASE_MS + 1, LEASE_MS) == NOW + 2 * LEASE_MS + 1, "run out: taken"
    assert lease_row(engine) == ("bob", NOW + 2 * LEASE_MS + 1, 2)
    assert leader.hold(engine, "ann", NOW + LEASE_MS + 2, LEASE_MS) == 0


def test_the_holder_writes_its_lease_once_every_half_lease_and_leads_between(tmp_path: Path) -> None:
    assert SETTINGS.lease_ms == LEASE_MS

    async def body(lobby: Lobby) -> None:
        hall = lobby.hall
        start = lobby.clock.now
        await hall.tick()
        assert hall.leading and lease_row(lobby.engine) == (hall.owner, start + LEASE_MS, 1)
        for _ in range(9):  # beats in the first half of the lease: nothing written, still leading
            lobby.clock.advance(0.1)
            await hall.tick()
            assert hall.leading
        assert lease_row(lobby.engine) == (hall.owner, start + LEASE_MS, 1)
        lobby.clock.advance(0.1)  # half of it used: renewed
        await hall.tick()
        assert hall.leading and lease_row(lobby.engine) == (hall.owner, start + 1000 + LEASE_MS, 2)

    run_lobby(tmp_path, body)


def test_a_holder_whose_beat_came_after_its_lease_ran_out_and_was_taken_does_not_lead(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        hall = lobby.hall
        await hall.tick()
        assert hall.leading
        lobby.clock.advance(2.5)  # a stalled loop: its lease ran out, and another loop took it
        assert await asyncio.to_thread(leader.hold, lobby.engine, "other", lobby.clock.now, LEASE_MS)
        await hall.tick()
        assert not hall.leading and hall.lease_until == 0
        assert lease_row(lobby.engine)[0] == "other"

    run_lobby(tmp_path, body)
