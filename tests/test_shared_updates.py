"""One Update per change, seat and form: every watcher of a seat woken by one change gets the same bytes,
built once; a later clock reading (match_time_ms) builds new ones, and each seat keeps its own view."""

from __future__ import annotations

import asyncio
import json

from protos.tablehall.v1 import matches_pb2
from tests.test_durability_timer import TOKENS, Clock, running
from workers.storage import MemoryStorage

TYPED = matches_pb2.VIEW_FORMAT_TYPED


def test_watchers_of_a_seat_share_one_update_of_a_change() -> None:
    async def body() -> None:
        clock = Clock()
        actor, _ = await running(MemoryStorage(), clock)
        seq = actor.seq
        watchers = [actor.watch(TOKENS[0], seq, TYPED) for _ in range(2)]
        waiting = [asyncio.ensure_future(anext(w)) for w in watchers]
        await asyncio.sleep(0)  # both subscribed before the change
        shown = json.loads(actor.view_json(None, seq))
        turn = shown["turn"]
        legal = json.loads(actor.view_json(actor.seat_of(TOKENS[turn]), seq))["legal"]
        move = next(action for action in legal if action["do"] != "resign")
        clock.now += 50
        await actor.command(TOKENS[turn], None, move, clock.now)
        first, second = await asyncio.gather(*waiting)
        assert first is second and first.seq == seq + 1
        update = first.update()
        assert update.seq == seq + 1 and update.seat == 0
        assert not update.over and update.match_time_ms > 0, "a clock reading, shared by both"
        assert [c.deal for c in update.commitments] == [0]
        other = actor.posted(actor.seat_of(TOKENS[1]), seq + 1, TYPED)
        assert other is not first and other.update().seat == 1
        for watcher in watchers:
            await watcher.aclose()

    asyncio.run(body())


def test_a_later_clock_reading_is_a_new_update() -> None:
    async def body() -> None:
        clock = Clock()
        actor, _ = await running(MemoryStorage(), clock)
        seat = actor.seat_of(TOKENS[0])
        before = actor.posted(seat, actor.seq, TYPED)
        assert actor.posted(seat, actor.seq, TYPED) is before
        clock.now += 1000
        later = actor.posted(seat, actor.seq, TYPED)
        assert later is not before and later.update().match_time_ms == before.update().match_time_ms + 1000
        assert later.wire != before.wire

    asyncio.run(body())
