"""The match actor's mailbox: one change at a time, in order; a caller that leaves before its turn takes
its work with it, one that leaves during its turn does not stop it."""

from __future__ import annotations

import asyncio

import pytest

from workers.mailbox import Mailbox


def run(body: object) -> None:
    asyncio.run(asyncio.wait_for(body, 10))  # type: ignore[arg-type]


def test_work_runs_one_at_a_time_in_arrival_order() -> None:
    async def body() -> None:
        box, order, running = Mailbox(), [], []

        async def work(n: int) -> int:
            running.append(n)
            assert len(running) == 1, "two pieces of work at once"
            await asyncio.sleep(0)
            order.append(n)
            running.remove(n)
            return n * 10

        results = await asyncio.gather(*(box.run(lambda n=n: work(n)) for n in range(5)))
        assert order == [0, 1, 2, 3, 4] and results == [0, 10, 20, 30, 40]
        assert not box.busy

    run(body())


def test_a_caller_gone_before_its_turn_takes_its_work_with_it() -> None:
    async def body() -> None:
        box, gate, done = Mailbox(), asyncio.Event(), []

        async def first() -> None:
            await gate.wait()
            done.append("first")

        async def second() -> None:
            done.append("second")

        one = asyncio.create_task(box.run(first))
        two = asyncio.create_task(box.run(second))
        await asyncio.sleep(0)
        two.cancel()  # before its turn
        gate.set()
        await one
        await box.settled()
        assert done == ["first"]
        assert two.cancelled()

    run(body())


def test_a_caller_gone_during_its_turn_does_not_stop_the_work() -> None:
    async def body() -> None:
        box, entered, gate, done = Mailbox(), asyncio.Event(), asyncio.Event(), []

        async def commit() -> str:
            entered.set()
            await gate.wait()  # the commit in flight
            done.append("applied")
            return "answer"

        caller = asyncio.create_task(box.run(commit))
        await entered.wait()
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        gate.set()
        await box.settled()
        assert done == ["applied"]  # it ran to its end although nobody waits for the answer

    run(body())


def test_an_error_reaches_its_caller_and_the_next_work_still_runs() -> None:
    async def body() -> None:
        box = Mailbox()

        async def fails() -> None:
            raise ValueError("refused")

        async def fine() -> str:
            return "ok"

        with pytest.raises(ValueError, match="refused"):
            await box.run(fails)
        assert await box.run(fine) == "ok"

    run(body())


def test_an_error_nobody_waits_for_is_not_reported_as_unretrieved(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        box, entered, gate = Mailbox(), asyncio.Event(), asyncio.Event()

        async def fails() -> None:
            entered.set()
            await gate.wait()
            raise ValueError("nobody listens")

        caller = asyncio.create_task(box.run(fails))
        await entered.wait()
        caller.cancel()
        gate.set()
        await box.settled()

    run(body())
    assert "never retrieved" not in caplog.text


def test_abandoned_work_tells_its_callers_at_once_and_the_running_piece_still_ends() -> None:
    async def body() -> None:
        box, entered, gate, done = Mailbox(), asyncio.Event(), asyncio.Event(), []

        async def commit() -> None:
            entered.set()
            await gate.wait()  # a commit stuck on a database that is cut off
            done.append("commit")

        async def later() -> None:
            done.append("later")

        running = asyncio.create_task(box.run(commit))
        queued = asyncio.create_task(box.run(later))
        await entered.wait()
        box.abandon(RuntimeError("unknown"), LookupError("not done"))
        with pytest.raises(RuntimeError, match="unknown"):
            await running
        with pytest.raises(LookupError, match="not done"):
            await queued
        gate.set()
        await box.settled()
        assert done == ["commit"]  # the queued piece never ran

    run(body())


def test_work_that_never_waits_runs_in_its_callers_turn_with_no_task_made() -> None:
    async def body() -> None:
        box, seen = Mailbox(), []

        async def change() -> str:
            seen.append((box.busy, asyncio.current_task()))
            return "done"

        before = len(asyncio.all_tasks())
        assert await box.run(change) == "done"
        assert seen == [(True, asyncio.current_task())]  # busy while it ran, and in this very task
        assert not box.busy and len(asyncio.all_tasks()) == before

    run(body())


def test_work_queued_from_inside_running_work_runs_after_it_not_inside_it() -> None:
    async def body() -> None:
        box, order = Mailbox(), []
        nested: list[asyncio.Future[None]] = []

        async def inner() -> None:
            order.append("inner")

        async def outer() -> None:
            order.append("outer begins")
            nested.append(asyncio.ensure_future(box.run(inner)))
            await asyncio.sleep(0)  # the queued piece must not start while this one waits
            order.append("outer ends")

        await box.run(outer)
        await nested[0]
        assert order == ["outer begins", "outer ends", "inner"]
        await box.settled()
        assert not box.busy

    run(body())


def test_work_abandoned_while_it_runs_in_its_callers_turn_tells_the_caller() -> None:
    async def body() -> None:
        box = Mailbox()

        async def fenced() -> str:
            box.abandon(RuntimeError("lease lost"), LookupError("not done"))
            return "applied"

        with pytest.raises(RuntimeError, match="lease lost"):
            await box.run(fenced)
        assert not box.busy

    run(body())


def test_work_that_waits_goes_on_by_what_it_awaits_with_no_task_made() -> None:
    async def body() -> None:
        box, loop, seen = Mailbox(), asyncio.get_running_loop(), []
        commit: asyncio.Future[str] = loop.create_future()

        async def change() -> str:
            answer = await commit  # a durable log's commit
            seen.append(asyncio.current_task())
            return answer

        before = asyncio.all_tasks()
        caller = asyncio.create_task(box.run(change))
        await asyncio.sleep(0)
        assert box.busy and asyncio.all_tasks() - before == {caller}  # only the caller's own task
        commit.set_result("committed")
        assert await caller == "committed"
        assert seen == [None]  # it went on in the commit's callback, in no task
        assert not box.busy and asyncio.all_tasks() == before

    run(body())


def test_settled_waits_for_work_that_had_to_wait_and_then_for_the_queue() -> None:
    async def body() -> None:
        box, loop, order = Mailbox(), asyncio.get_running_loop(), []
        commit: asyncio.Future[None] = loop.create_future()

        async def first() -> None:
            await commit
            order.append("first")

        async def second() -> None:
            order.append("second")

        one = asyncio.create_task(box.run(first))
        await asyncio.sleep(0)
        two = asyncio.create_task(box.run(second))
        settled = asyncio.create_task(box.settled())
        for _ in range(5):  # turns of the loop: nothing ends while the commit is out
            await asyncio.sleep(0)
        assert not settled.done() and order == []
        commit.set_result(None)
        await settled
        assert order == ["first", "second"] and one.done() and two.done() and not box.busy

    run(body())


def test_work_that_yields_what_no_task_takes_fails_as_in_a_task() -> None:
    class Odd:
        def __await__(self) -> object:
            yield 42  # neither a future nor a bare yield

    async def body() -> None:
        box = Mailbox()

        async def odd() -> None:
            await Odd()

        async def fine() -> str:
            await asyncio.sleep(0)
            return "ok"

        with pytest.raises(RuntimeError, match="yielded int"):
            await box.run(odd)
        assert not box.busy and await box.run(fine) == "ok"

    run(body())
