"""Snapshots only where they pay: the in-memory storage takes none (its log is replayed in process, for a
little CPU), a database's storage does (tests/test_sql_ended.py); a long match's whole in-memory log still
restores it exactly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from tests.test_ratings_db import create, play_out, run
from workers.actor import SNAPSHOT_EVERY, MatchActor
from workers.games.catalog import game_named
from workers.host import MatchHost
from workers.replay_log import restored
from workers.storage import MemoryStorage, Snapshot


@contextlib.asynccontextmanager
async def played_out(storage: MemoryStorage) -> AsyncIterator[MatchActor]:
    """A host on `storage` with one short 501♠ match played to its end: the match's actor."""
    host = MatchHost(storage)
    await host.start()
    try:
        match_id = await create(host, "501", ["ann", "bob", "cid"], {"start_score": 300})
        await asyncio.wait_for(play_out(host, match_id, 5), 60)  # no command waits for a held snapshot
        yield host.actors.get(match_id) or host.ended[match_id]
    finally:
        host.close()


def test_the_memory_storage_takes_no_snapshot_and_its_log_restores_the_match() -> None:
    async def body() -> None:
        storage = MemoryStorage()
        assert not storage.takes_snapshots
        async with played_out(storage) as actor:
            assert actor.seq > SNAPSHOT_EVERY and storage.snapshots == {}
            stored = await storage.load(actor.match_id)
            game = game_named("501")
            assert stored is not None and stored.snapshot is None and game is not None
            assert restored(game, stored).record(actor.match_id) == actor.record()

    run(body())


class HeldSnapshots(MemoryStorage):
    """An in-memory log that takes snapshots and holds each one's write until `release` is set: a slow
    database's second commit."""

    def __init__(self) -> None:
        super().__init__(takes_snapshots=True)
        self.release = asyncio.Event()
        self.asked: list[int] = []

    async def snapshot(self, match_id: str, partition: int, epoch: int, snapshot: Snapshot) -> None:
        self.asked.append(snapshot.seq)
        await self.release.wait()
        await super().snapshot(match_id, partition, epoch, snapshot)


def test_a_snapshot_is_written_behind_its_change_not_in_the_way_of_the_commands() -> None:
    async def body() -> None:
        storage = HeldSnapshots()
        async with played_out(storage) as actor:
            assert actor.seq > SNAPSHOT_EVERY and storage.asked and storage.snapshots == {}
            storage.release.set()
            while actor.snapshotting:
                await asyncio.sleep(0)
            assert storage.snapshots[actor.match_id].seq == storage.asked[-1]
            assert storage.asked[0] == SNAPSHOT_EVERY

    run(body())


class FailingSnapshots(MemoryStorage):
    """An in-memory log that takes snapshots and refuses every one: a database that lost them."""

    def __init__(self) -> None:
        super().__init__(takes_snapshots=True)

    async def snapshot(self, match_id: str, partition: int, epoch: int, snapshot: Snapshot) -> None:
        raise OSError("disk full")


def test_a_snapshot_that_fails_is_logged_and_the_match_plays_on(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        storage = FailingSnapshots()
        async with played_out(storage) as actor:
            while actor.snapshotting:
                await asyncio.sleep(0)
            assert actor.seq > SNAPSHOT_EVERY and actor.match.over and storage.snapshots == {}

    with caplog.at_level(logging.WARNING, logger="tablehall"):
        run(body())
    assert f"snapshot at change {SNAPSHOT_EVERY} not written (disk full)" in caplog.text
