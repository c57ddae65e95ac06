"""A durable write's watchers' views are built before its commit is awaited (`Published.foreseen`) and
published only once it is committed: every watcher then gets the same bytes a view built after the commit
has, and a write that failed leaves nothing behind (the next change at its seq shows that change)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from protos.tablehall.v1 import matches_pb2
from tests.test_durability_timer import TOKENS, Clock, running
from workers.actor import MatchActor
from workers.errors import Unavailable
from workers.games.engine import Seat
from workers.storage import LogEntry, MemoryStorage, Progress
from workers.wire import Posted


class Refusing(MemoryStorage):
    """A durable log (its views are foreseen) whose next append, once `refuse` is set, fails unwritten."""

    durable = True
    refuse = False

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        if self.refuse:
            self.refuse = False
            raise OSError(28, "No space left on device")
        await super().append_all(match_id, partition, epoch, entries, progress)


class Seen:
    """A watcher's sink: every update it was given."""

    def __init__(self) -> None:
        self.posted: list[Posted] = []

    def put(self, posted: Posted) -> None:
        self.posted.append(posted)

    def end(self, error: Exception | None) -> None:
        pass


def fresh(actor: MatchActor, seat: Seat, views: int) -> bytes:
    """The seat's update of the newest change as a build after the commit makes it (nothing cached)."""
    actor.views.clear()
    actor.updates.clear()
    actor.shared = None
    return actor.posted(seat, actor.seq, views).wire


FORMS = (matches_pb2.VIEW_FORMAT_TYPED, matches_pb2.VIEW_FORMAT_BOTH)


@pytest.mark.parametrize("views", FORMS)
def test_a_refused_write_leaves_no_view_and_the_next_change_shows_itself(views: int) -> None:
    async def body() -> None:
        storage, clock = Refusing(), Clock()
        actor, _ = await running(storage, clock)
        sink, leaving = Seen(), Seen()
        await actor.follow(TOKENS[0], actor.seq, views, sink)
        left = await actor.follow(TOKENS[1], actor.seq, views, leaving)
        mover = actor.game.view(actor.match.state, Seat(0)).turn
        first, second = actor.game.view(actor.match.state, mover).legal[:2]
        storage.refuse = True
        with pytest.raises(Unavailable):
            await actor.command(TOKENS[mover], None, dict(first), clock.now)
        assert (sink.posted, leaving.posted) == ([], [])
        actor.unfollow(left)  # seat 1's view of the next change is built only when asked (GetView)
        change, _ = await actor.command(TOKENS[mover], None, dict(second), clock.now)
        assert [posted.seq for posted in sink.posted] == [change]
        asked = actor.posted(Seat(1), change, views).wire
        assert (sink.posted[0].wire, asked) == (fresh(actor, Seat(0), views), fresh(actor, Seat(1), views))
        actor.close()

    asyncio.run(asyncio.wait_for(body(), 20))


def test_every_update_of_a_durable_match_is_what_a_build_after_its_commit_sends() -> None:
    async def body() -> None:
        storage, clock = Refusing(), Clock()
        actor, _ = await running(storage, clock)
        sinks = [Seen(), Seen()]
        for token, sink, views in zip(TOKENS, sinks, FORMS, strict=True):
            await actor.follow(token, actor.seq, views, sink)
        for _ in range(12):
            if actor.match.over:
                break
            mover = actor.game.view(actor.match.state, Seat(0)).turn
            action = actor.game.view(actor.match.state, mover).legal[-1]
            clock.now += 50
            await actor.command(TOKENS[mover], None, dict(action), clock.now)
            got = [sink.posted[-1].wire for sink in sinks]
            assert got == [fresh(actor, Seat(seat), views) for seat, views in zip((0, 1), FORMS, strict=True)]
        actor.close()

    asyncio.run(asyncio.wait_for(body(), 20))
