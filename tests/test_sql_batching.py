"""The group committer's promises to its callers (workers/sql/batching.py), with a stand-in `apply` the
test holds at will: a caller that gave up before its op was taken is never written, and a batch's callers
hear of its commit through one wake-up of their loop, not one per op."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from workers.sql.batching import DEFAULT_LINGER_MS, LINGER_ENV, GroupCommitter, Op, batches, log_linger_s


class Numbered(Op):
    def __init__(self, n: int) -> None:
        self.n = n


class Held:
    """An `apply` that records each batch and holds the first one until `go` is set."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.inside = threading.Event()
        self.go = threading.Event()

    def __call__(self, ops: Sequence[Op]) -> list[object]:
        numbers = [op.n for op in ops if isinstance(op, Numbered)]
        self.batches.append(numbers)
        self.inside.set()
        self.go.wait(30)
        return [n * 10 for n in numbers]


def test_an_op_given_up_before_the_writer_took_it_is_never_written() -> None:
    async def body() -> None:
        held = Held()
        committer = GroupCommitter(held)
        first = asyncio.ensure_future(committer.submit(Numbered(1)))
        await asyncio.to_thread(held.inside.wait, 30)  # the writer holds batch [1]
        given_up = asyncio.ensure_future(committer.submit(Numbered(2)))
        kept = asyncio.ensure_future(committer.submit(Numbered(3)))
        await asyncio.sleep(0)  # both queued behind the held batch
        given_up.cancel()
        await asyncio.sleep(0)  # its caller hears of the cancel
        held.go.set()
        assert await first == 10 and await kept == 30
        await asyncio.to_thread(committer.close)
        assert held.batches == [[1], [3]]

    asyncio.run(asyncio.wait_for(body(), 30))


def test_a_batch_wakes_its_loop_once() -> None:
    async def body() -> None:
        loop = asyncio.get_running_loop()
        wakes: list[Any] = []
        threadsafe = loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any, **kwargs: Any) -> Any:
            if callback.__module__ == GroupCommitter.__module__:  # not asyncio.to_thread's own answers
                wakes.append(callback)
            return threadsafe(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        held = Held()
        committer = GroupCommitter(held)
        first = asyncio.ensure_future(committer.submit(Numbered(0)))
        await asyncio.to_thread(held.inside.wait, 30)
        rest = [asyncio.ensure_future(committer.submit(Numbered(n))) for n in range(1, 21)]
        await asyncio.sleep(0)  # all 20 queued while the first batch commits: they form the second
        held.go.set()
        assert await asyncio.gather(first, *rest) == [n * 10 for n in range(21)]
        await asyncio.to_thread(committer.close)
        assert held.batches == [[0], list(range(1, 21))]
        assert len(wakes) == 2  # one per batch, not one per op

    asyncio.run(asyncio.wait_for(body(), 30))


def test_ops_are_grouped_as_the_writer_thread_groups_them() -> None:
    """Up to `max_batch` a batch, in queue order; a solo op (a claim) in a batch of its own."""

    class Solo(Op):
        solo = True

    ops = [Op(), Op(), Solo(), Op(), Op(), Op(), Solo(), Solo(), Op()]
    grouped = batches(ops, max_batch=2)
    assert [[ops.index(op) for op in batch] for batch in grouped] == [[0, 1], [2], [3, 4], [5], [6], [7], [8]]
    assert batches([], max_batch=2) == []


def test_the_ops_of_one_turn_of_the_loop_reach_the_writer_as_one_batch() -> None:
    """The writer thread is handed a turn's ops at once (one wake-up), not each as it is submitted."""

    async def body() -> None:
        held = Held()
        held.go.set()
        committer = GroupCommitter(held)
        done = await asyncio.gather(*(committer.submit(Numbered(n)) for n in range(20)))
        assert done == [n * 10 for n in range(20)]
        await asyncio.to_thread(committer.close)
        assert held.batches == [list(range(20))]

    asyncio.run(asyncio.wait_for(body(), 30))


def test_ops_after_close_fail_and_nothing_waits_for_ever() -> None:
    async def body() -> None:
        held = Held()
        held.go.set()
        committer = GroupCommitter(held)
        assert await committer.submit(Numbered(1)) == 10
        await asyncio.to_thread(committer.close)
        try:
            await committer.submit(Numbered(2))
        except RuntimeError as error:
            assert "closed" in str(error)
        else:
            raise AssertionError("a closed committer took an op")
        assert held.batches == [[1]]

    asyncio.run(asyncio.wait_for(body(), 30))


def test_one_committer_serves_loop_after_loop_and_keeps_none_of_them() -> None:
    """A storage outlives the loops that used it (one `asyncio.run` after another): each loop's ops are answered
    on it, and no loop is kept alive by the committer once it is gone."""
    held = Held()
    held.go.set()
    committer = GroupCommitter(held)
    for n in range(3):
        assert asyncio.run(asyncio.wait_for(committer.submit(Numbered(n)), 30)) == n * 10
    committer.close()
    gc.collect()
    assert held.batches == [[0], [1], [2]]
    assert len(committer._sides) == 0


class StoppedClock(asyncio.SelectorEventLoop):
    """A loop whose clock moves only when the test moves it: a linger ends when the test says, not after
    a stretch of real time the test would have to beat."""

    now = 0.0

    def time(self) -> float:
        return self.now


def on_stopped_clock(body: Callable[[StoppedClock], Coroutine[Any, Any, None]]) -> None:
    with asyncio.Runner(loop_factory=StoppedClock) as runner:
        loop = runner.get_loop()
        assert isinstance(loop, StoppedClock)
        runner.run(body(loop))


LINGER_S = 1.0


def test_under_load_the_next_batch_lingers_and_takes_what_comes_meanwhile() -> None:
    async def body(loop: StoppedClock) -> None:
        held = Held()
        committer = GroupCommitter(held, linger_s=LINGER_S)
        first = asyncio.ensure_future(committer.submit(Numbered(1)))
        await asyncio.to_thread(held.inside.wait, 30)  # the writer holds batch [1]
        waiting = asyncio.ensure_future(committer.submit(Numbered(2)))
        await asyncio.sleep(0)  # queued behind the held batch: when it is answered, the next one lingers
        held.go.set()
        assert await first == 10
        late = asyncio.ensure_future(committer.submit(Numbered(3)))  # within the linger: it joins op 2
        await asyncio.sleep(0)
        assert held.batches == [[1]]  # the clock has not moved: op 2 still lingers
        loop.now += LINGER_S
        assert await asyncio.gather(waiting, late) == [20, 30]
        await asyncio.to_thread(committer.close)
        assert held.batches == [[1], [2, 3]]  # without the linger: [[1], [2], [3]]

    on_stopped_clock(body)


def test_an_op_given_up_while_its_batch_lingers_is_never_written() -> None:
    async def body(loop: StoppedClock) -> None:
        held = Held()
        committer = GroupCommitter(held, linger_s=LINGER_S)
        first = asyncio.ensure_future(committer.submit(Numbered(1)))
        await asyncio.to_thread(held.inside.wait, 30)
        given_up = asyncio.ensure_future(committer.submit(Numbered(2)))
        await asyncio.sleep(0)
        held.go.set()
        assert await first == 10  # op 2's batch lingers now
        given_up.cancel()
        kept = asyncio.ensure_future(committer.submit(Numbered(3)))
        await asyncio.sleep(0)
        loop.now += LINGER_S
        assert await kept == 30
        await asyncio.to_thread(committer.close)
        assert given_up.cancelled() and held.batches == [[1], [3]]

    on_stopped_clock(body)


def test_an_op_to_an_idle_writer_goes_at_once_whatever_the_linger() -> None:
    async def body() -> None:
        held = Held()
        held.go.set()
        committer = GroupCommitter(held, linger_s=3600.0)
        for n in range(3):  # one after another: each finds the writer idle and nothing waiting
            assert await asyncio.wait_for(committer.submit(Numbered(n)), 10) == n * 10
        await asyncio.to_thread(committer.close)
        assert held.batches == [[0], [1], [2]]

    asyncio.run(asyncio.wait_for(body(), 30))


def test_the_linger_is_read_from_the_environment_with_a_bounded_default() -> None:
    assert log_linger_s({}) == DEFAULT_LINGER_MS / 1000
    assert log_linger_s({LINGER_ENV: "0"}) == 0.0
    assert log_linger_s({LINGER_ENV: " 2.5 "}) == 0.0025
    for bad in ("-1", "nan", "1e9", "five"):
        assert log_linger_s({LINGER_ENV: bad}) == DEFAULT_LINGER_MS / 1000
