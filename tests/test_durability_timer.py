"""SB-11 for a late deadline timer, in process with an injected clock: a timer that fires later than the
tolerance past the deadline voids the match with `timer_late` (log, progress, view, record); one that
fires within the tolerance settles the deadline as the rules say."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.storage_backends import Backend, backend_for
from workers.actor import Hosting, MatchActor
from workers.games.catalog import game_named
from workers.games.records import replay
from workers.storage import MatchEntry, MemoryStorage, Storage

T0 = 1_700_000_000_000
TOLERANCE_MS = 1000
BANK_MS = 10_000
TOKENS = (b"\x01" * 32, b"\x02" * 32)


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


async def running(storage: Storage, clock: Clock) -> tuple[MatchActor, int]:
    """A Spectacular Bid match whose first decision's clock runs; its deadline in unix ms."""
    game = game_named("spectacular-bid")
    assert game is not None
    epoch = (await storage.claim("w0", [3]))[3]
    options = {"bank_s": BANK_MS / 1000, "delay_s": 0}
    entry = MatchEntry("m-late", game.name, ("Ana", "Bia"), options, TOKENS, T0, 0, 3)
    actor = await MatchActor.create(entry, game, storage, epoch, Hosting(clock=clock, tolerance_ms=TOLERANCE_MS))
    for token in TOKENS:
        clock.now += 100
        await actor.command(token, None, {"do": "ready"}, clock.now)
    deadline = game.next_deadline(actor.match.state)
    assert deadline is not None and not actor.match.over
    return actor, T0 + deadline


async def fire_at(actor: MatchActor, clock: Clock, at: int) -> None:
    """The timer fires with the clock reading `at` (re-armed: its delay is already due)."""
    clock.now = at
    actor.arm()
    assert actor.timer is not None
    for _ in range(100):  # the due timer runs on the next loop turns
        await asyncio.sleep(0)
        if not actor.firing and actor.timer is None:
            break
    await asyncio.gather(*actor.firing)


@pytest.mark.parametrize("late_ms", [TOLERANCE_MS + 1, 30_000])
def test_a_timer_later_than_the_tolerance_voids_with_timer_late(backend: Backend, late_ms: int) -> None:
    async def body() -> None:
        storage = await backend.open()
        clock = Clock()
        actor, deadline = await running(storage, clock)
        seq = actor.seq
        await fire_at(actor, clock, deadline + late_ms)

        assert actor.match.void_reason == "timer_late"
        assert actor.seq == seq + 1
        view = json.loads(actor.view_json(None, actor.seq))
        assert (view["status"], view["void_reason"]) == ("voided", "timer_late")
        record = actor.record()
        assert record["void"] == {"reason": "timer_late", "t": (deadline + late_ms - T0) / 1000}
        last = (await storage.log("m-late"))[-1]
        assert (last.kind, last.action, last.t_ms) == ("void", {"reason": "timer_late"}, deadline + late_ms - T0)
        assert await storage.unfinished([3]) == []  # the match table says voided: recovery leaves it alone
        actor.close()
        await storage.close()

    asyncio.run(asyncio.wait_for(body(), 20))


def test_the_record_of_a_timer_late_void_replays_to_the_void() -> None:
    async def body() -> None:
        storage = MemoryStorage()
        clock = Clock()
        actor, deadline = await running(storage, clock)
        await fire_at(actor, clock, deadline + TOLERANCE_MS + 1)
        assert actor.match.outcome()["void_reason"] == "timer_late"
        replayed = replay(actor.record())
        assert replayed.error is None
        assert replayed.outcome == actor.match.outcome()
        actor.close()

    asyncio.run(asyncio.wait_for(body(), 20))


@pytest.mark.parametrize("late_ms", [1, TOLERANCE_MS])
def test_a_timer_within_the_tolerance_settles_the_deadline(backend: Backend, late_ms: int) -> None:
    async def body() -> None:
        storage = await backend.open()
        clock = Clock()
        actor, deadline = await running(storage, clock)
        await fire_at(actor, clock, deadline + late_ms)

        assert actor.match.void_reason is None
        last = (await storage.log("m-late"))[-1]
        assert (last.kind, last.t_ms) == ("deadline", deadline + late_ms - T0)
        view = json.loads(actor.view_json(None, actor.seq))
        assert view["status"] != "voided" and view["void_reason"] is None
        assert 0 in view["banks_ms"]  # the flag fell: someone's bank is empty
        actor.close()
        await storage.close()

    asyncio.run(asyncio.wait_for(body(), 20))


def test_a_timer_before_the_deadline_changes_nothing(backend: Backend) -> None:
    async def body() -> None:
        storage = await backend.open()
        clock = Clock()
        actor, deadline = await running(storage, clock)
        seq, logged = actor.seq, len(await storage.log("m-late"))
        await fire_at(actor, clock, deadline - 1)
        assert (actor.seq, len(await storage.log("m-late"))) == (seq, logged)
        # re-armed for the real deadline: 1 ms of real time away while the injected clock stands still, so it
        # may fire (early, changing nothing) again and again; between two firings it is armed
        for _ in range(1000):
            if actor.timer is not None and not actor.firing:
                break
            await asyncio.sleep(0)
        assert actor.timer is not None
        assert (actor.seq, len(await storage.log("m-late"))) == (seq, logged)
        actor.close()
        await storage.close()

    asyncio.run(asyncio.wait_for(body(), 20))
