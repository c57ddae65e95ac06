"""A heavy-work pool (workers/offload.py) is one spawned process behind a pipe the event loop reads itself: no
thread of the serving process takes part (the interpreter's lock stays the clocks'), an outcome comes back to
its caller as itself, a result larger than the pipe arrives whole, a caller that leaves does not stop the
pool, and a process killed mid-job fails that job once and the next call gets a new process; a job still waited for
at shutdown is cancelled."""

from __future__ import annotations

import asyncio
import operator
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from workers import offload


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    offload.shutdown()
    yield
    offload.shutdown()


def test_jobs_run_in_another_process_with_no_thread_started_here() -> None:
    async def body() -> None:
        threads = set(threading.enumerate())
        pids = await asyncio.gather(*(offload.run("test", os.getpid) for _ in range(4)))
        assert len(set(pids)) == 1 and pids[0] != os.getpid()
        assert set(threading.enumerate()) == threads
        assert os.getpriority(os.PRIO_PROCESS, pids[0]) > os.getpriority(os.PRIO_PROCESS, 0)
        if sys.platform.startswith("linux"):  # and its wake-ups never preempt the loop
            assert os.sched_getscheduler(pids[0]) == os.SCHED_BATCH
        assert await offload.run("test", pow, 2, 10) == 1024

    asyncio.run(body())


def test_an_error_reaches_its_caller_as_itself_and_the_pool_goes_on() -> None:
    async def body() -> None:
        with pytest.raises(ZeroDivisionError):
            await offload.run("test", operator.truediv, 1, 0)
        assert await offload.run("test", operator.add, 2, 3) == 5

    asyncio.run(body())


def test_a_result_larger_than_the_pipe_arrives_whole() -> None:
    async def body() -> None:
        assert await offload.run("test", bytes, 5_000_000) == bytes(5_000_000)

    asyncio.run(body())


def test_a_caller_that_leaves_does_not_stop_the_pool() -> None:
    async def body() -> None:
        waiting = asyncio.ensure_future(offload.run("test", time.sleep, 0.2))  # the job itself takes 0.2 s
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await offload.run("test", operator.mul, 6, 7) == 42  # after the left job, on the same process

    asyncio.run(body())


def test_a_pool_process_killed_mid_job_fails_it_once_and_the_next_call_gets_a_new_one() -> None:
    async def body() -> None:
        first = await offload.run("test", os.getpid)
        held = asyncio.ensure_future(offload.run("test", time.sleep, 30))
        await asyncio.sleep(0)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(offload.BrokenProcessPool):
            await held
        second = await offload.run("test", os.getpid)
        assert second != first

    asyncio.run(body())


def test_a_pool_made_on_a_loop_that_ended_serves_the_next_loop() -> None:
    first = asyncio.run(offload.run("test", os.getpid))
    assert asyncio.run(offload.run("test", os.getpid)) == first


def test_work_that_cannot_be_pickled_fails_in_its_caller_and_the_pool_goes_on() -> None:
    async def body() -> None:
        with pytest.raises((AttributeError, pickle.PicklingError)):
            await offload.run("test", lambda: 1)  # a lambda cannot reach another process
        assert await offload.run("test", operator.sub, 5, 3) == 2

    asyncio.run(body())


def test_a_job_waited_for_at_shutdown_is_cancelled_and_the_next_call_gets_a_new_process() -> None:
    async def body() -> None:
        first = await offload.run("test", os.getpid)
        held = asyncio.ensure_future(offload.run("test", time.sleep, 5))  # the job outlasts the test's wait
        await asyncio.sleep(0)  # one turn: the job is sent
        offload.shutdown()
        with pytest.raises(asyncio.CancelledError):
            await held
        assert await offload.run("test", os.getpid) != first

    asyncio.run(body())
