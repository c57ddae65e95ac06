"""Watches pushed to sinks (workers/following.py): a match hands each watcher its updates in its own turn,
in order, then the end; `Following` reads a sink as an async iterator."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from tests.sb import GAME
from workers.actor import MatchActor
from workers.errors import Unavailable
from workers.following import Following
from workers.storage import MatchEntry, MemoryStorage

TOKENS = (b"seat-zero", b"seat-one")


class Sink:
    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.ended: list[Exception | None] = []

    def put(self, update: object) -> None:
        self.seqs.append(update.seq)  # type: ignore[attr-defined]

    def end(self, error: Exception | None) -> None:
        self.ended.append(error)


async def _actor() -> MatchActor:
    storage = MemoryStorage()
    digests = tuple(hashlib.sha256(t).digest() for t in TOKENS)
    entry = MatchEntry("00000000000000aa", GAME.name, ("A", "B"), {}, digests, 0, 0, 0)
    return await MatchActor.create(entry, GAME, storage, 0)


def test_a_watcher_gets_the_backlog_then_each_change_as_it_is_published_then_where_to_resume() -> None:
    async def body() -> None:
        actor = await _actor()
        sink = Sink()
        await actor.follow(hashlib.sha256(TOKENS[0]).digest(), 0, 0, sink)
        assert sink.seqs == list(range(1, actor.seq + 1)) and not sink.ended  # the backlog, at once
        before = actor.seq
        await actor.command(hashlib.sha256(TOKENS[0]).digest(), None, {"do": "ready"}, 0)
        assert sink.seqs[-1] == actor.seq > before  # pushed in the change's own turn: nothing awaited since
        actor.close()
        assert len(sink.ended) == 1 and isinstance(sink.ended[0], Unavailable)
        assert f"resume after seq {actor.seq}" in str(sink.ended[0])

    asyncio.run(body())


def test_an_unfollowed_watcher_hears_nothing_more() -> None:
    async def body() -> None:
        actor = await _actor()
        sink = Sink()
        watcher = await actor.follow(b"", 0, 0, sink)
        seen = list(sink.seqs)
        actor.unfollow(watcher)
        await actor.command(hashlib.sha256(TOKENS[1]).digest(), None, {"do": "ready"}, 0)
        actor.close()
        assert sink.seqs == seen and sink.ended == []

    asyncio.run(body())


def test_following_yields_in_order_and_raises_the_end_it_was_given() -> None:
    async def body() -> None:
        following: Following[int] = Following()
        got: list[int] = []

        async def read() -> None:
            async for item in following:
                got.append(item)

        reader = asyncio.create_task(read())
        following.put(1)
        await asyncio.sleep(0)
        following.put(2)
        following.put(3)
        following.end(LookupError("gone"))
        following.put(4)  # after the end: dropped
        with pytest.raises(LookupError, match="gone"):
            await reader
        assert got == [1, 2, 3]

    asyncio.run(body())
