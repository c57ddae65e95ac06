"""On SQLite, the reads beside the match log (lobby, tournaments, ratings, organizers) take no write lock.

Every transaction on the engine begins IMMEDIATE unless it asks otherwise, and SQLite has one write lock: a
read that took it held the log writer's commits back (measured under `bench service`: about 12 such reads a
second, and the writer finding the lock taken 14 times a second, each a millisecond's wait or more). Here
another connection holds the write lock while each read runs on an engine that gives up at once on a taken
lock: a read that still began IMMEDIATE fails with "database is locked"."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from gateway.lobby import bot_seats, challenges, leader, players, queue
from gateway.tournaments import organizers, store
from ratings import api
from workers.sql.engine import make_engine
from workers.sql.migrate import migrate

NOW = 1_800_000_000_000
LIFETIME_MS = 600_000


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[Engine, str, bytes]]:
    """A migrated database with a registered player and an open challenge; an engine that never waits."""
    path = tmp_path / "reads.db"
    url = f"sqlite:///{path}"
    migrate(url)
    writing = make_engine(url)
    ann = players.register(writing, "Ann", NOW)
    challenge_id = challenges.open_challenge(
        writing, ann.player.id, queue.queue_for("spectacular-bid", {}), 2, False, NOW
    )
    writing.dispose()
    engine = make_engine(url, busy_timeout_s=0)
    try:
        yield engine, challenge_id, players.key_sha256(ann.key)
    finally:
        engine.dispose()


def reads(challenge_id: str, key: bytes) -> dict[str, Callable[[Engine], Any]]:
    return {
        "queue.waiting": lambda e: queue.waiting(e, NOW),
        "queue.queued": queue.queued,
        "queue.creating": queue.creating,
        "queue.seats_of": lambda e: queue.seats_of(e, [1, 2]),
        "queue.gaps": lambda e: queue.gaps(e, ["m1"]),
        "queue.drop_absent, no one absent": lambda e: queue.drop_absent(e, NOW - 300_000),
        "challenges.listed": lambda e: challenges.listed(e, "spectacular-bid", NOW, LIFETIME_MS),
        "challenges.challenge": lambda e: challenges.challenge(e, challenge_id, LIFETIME_MS),
        "challenges.open_count": challenges.open_count,
        "challenges.expire, none due": lambda e: challenges.expire(e, NOW - LIFETIME_MS),
        "players.player_by_key": lambda e: players.player_by_key(e, key),
        "players.registered_names": lambda e: players.registered_names(e, ["Ann", "Bob"]),
        "players.check_names": lambda e: players.check_names(e, ["Ann", "Bob"], key),
        "bot_seats.bot_seats": bot_seats.bot_seats,
        "leader.holder": leader.holder,
        "organizers.organizer_by_key": lambda e: organizers.organizer_by_key(e, b"\0" * 32),
        "store.running": store.running,
        "store.tournaments_of": lambda e: store.tournaments_of(e, ["m1"]),
        "ratings.rating_of": lambda e: api.rating_of(e, "Ann", "spectacular-bid"),
        "ratings.leaderboard": lambda e: api.leaderboard(e, "spectacular-bid", 10),
    }


def test_every_read_runs_while_another_connection_holds_the_write_lock(seeded: tuple[Engine, str, bytes]) -> None:
    engine, challenge_id, key = seeded
    path = engine.url.database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None, timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # the log writer's commit, held open
    try:
        failed = {}  # every failing read is reported, not only the first
        for name, read in reads(challenge_id, key).items():
            try:
                read(engine)
            except Exception as error:
                failed[name] = str(error).splitlines()[0][:120]
        assert failed == {}
        assert challenges.challenge(engine, challenge_id, LIFETIME_MS) is not None, "the reads saw the rows"
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_write_still_waits_for_the_lock(seeded: tuple[Engine, str, bytes]) -> None:
    """The check above can fail: a writing transaction on the same engine finds the lock taken."""
    engine, _, _ = seeded
    path = engine.url.database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(OperationalError, match="locked"):
            leader.hold(engine, "someone", NOW, 2000)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
