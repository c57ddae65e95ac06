"""Heavy work runs in process pools, never on a match host's event loop and never in its process: a thread
would hold the GIL the match clocks need (a 1,000-player Swiss round 1 paired in a thread made Ping p99
180 ms and voided matches `timer_late`). One pool per kind of work, so a long pairing never queues a rating.

A pool is made on first use with the `spawn` start method (a fork of a process running gRPC and threads is
unsafe), one process at nice `NICE`: the cores belong to the clocks first. A pool that broke (its process
died) is replaced on the next call; the caller sees `BrokenProcessPool` once. A pool's process ends with the
process that made it, even one killed -9 (which shuts no pool down: its process would live on, an orphan
holding memory and database connections). A Celery worker's (daemonic) process may start no process of its
own and runs no clock: there the work runs in a thread.

A pool is one process and one pipe that the event loop reads and writes itself (`_Pool`), not a
`ProcessPoolExecutor`: that one's manager and feeder threads took the interpreter's lock a few times a job,
and the serving loop waited for them (on SQLite the loop's thread was woken ~100 times a second by them,
`perf` sched_waking, one rating job per finished match).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import multiprocessing
import os
import pickle
import select
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from workers import loop_first
from workers.sql.writer_process import frame, frames, sendable

__all__ = ["NICE", "BrokenProcessPool", "run", "shutdown"]

T = TypeVar("T")
NICE = 10
"""The pool's process runs at a lower CPU priority than the clocks' process: on a machine short of cores the
scheduler gives the clocks their turn first (in `bench clocks --swiss 1000` on a saturated 2-core machine a
pool at the same priority still made timers late by up to a second)."""
PR_SET_PDEATHSIG = 1
"""prctl(2): the signal this process gets when its parent thread ends (`ends_with`, without pidfds)."""
_pools: dict[str, _Pool] = {}
CHUNK = 1 << 16
"""The most one read takes off a pool's pipe (a pipe holds 64 KiB)."""


async def run(kind: str, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in the pool of its kind (a thread in a daemonic process); BrokenProcessPool replaces it."""
    if multiprocessing.current_process().daemon:
        return await asyncio.to_thread(work, *args)
    loop = asyncio.get_running_loop()
    pool = _pools.get(kind)
    if pool is not None and not pool.serves(loop):
        if pool.idle():  # made on a loop that ran before this one (tests, a restarted service): kept
            pool.attach(loop)
        else:
            pool.close()
            pool = None
    if pool is None:
        pool = _pools[kind] = _Pool(loop)
    try:
        return await pool.submit(work, args)
    except BrokenProcessPool:
        if _pools.get(kind) is pool:
            del _pools[kind]
        pool.close()
        raise


class _Pool:
    """One spawned process and a pipe to it, read and written by the event loop (no thread): a job goes as one
    pickled frame, its outcome comes back as one. The process ending (EOF) fails every job it held."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        spawn = multiprocessing.get_context("spawn")
        ours, theirs = spawn.Pipe(duplex=True)
        self.process = spawn.Process(target=_jobs, args=(theirs, os.getpid()), name="tablehall-pool", daemon=True)
        self.process.start()
        theirs.close()
        self.loop, self.ours, self.fd = loop, ours, ours.fileno()
        os.set_blocking(self.fd, False)
        self.ids = itertools.count()
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.unsent, self.inbox, self.chunk = bytearray(), bytearray(), memoryview(bytearray(CHUNK))
        self.closed = False
        loop.add_reader(self.fd, self._readable)

    def serves(self, loop: asyncio.AbstractEventLoop) -> bool:
        return not self.closed and self.loop is loop

    def idle(self) -> bool:
        """Open, holding no job and nothing unsent: it may move to another loop."""
        return not self.closed and not self.waiting and not self.unsent

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.loop.is_closed():
            self.loop.remove_reader(self.fd)
        self.loop = loop
        loop.add_reader(self.fd, self._readable)

    async def submit(self, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        if self.closed:
            raise BrokenProcessPool("the pool's process has ended")
        number = next(self.ids)
        job = frame((number, work, args))  # what cannot be pickled fails here, in its caller
        future: asyncio.Future[T] = self.loop.create_future()
        self.waiting[number] = future
        self._send(job)
        try:
            return await future
        finally:
            self.waiting.pop(number, None)  # a caller that left: its outcome is dropped when it comes

    def _send(self, data: bytes) -> None:
        if not self.unsent:
            try:
                data = data[os.write(self.fd, data) :]
            except BlockingIOError:
                pass
            except OSError:
                self._ended()
                return
            if data:
                self.loop.add_writer(self.fd, self._writable)
        self.unsent += data

    def _writable(self) -> None:
        try:
            del self.unsent[: os.write(self.fd, self.unsent)]
        except BlockingIOError:
            return
        except OSError:
            self._ended()
            return
        if not self.unsent:
            self.loop.remove_writer(self.fd)

    def _readable(self) -> None:
        try:
            read = os.readv(self.fd, [self.chunk])
        except BlockingIOError:
            return
        except OSError:
            read = 0
        if not read:
            self._ended()
            return
        self.inbox += self.chunk[:read]
        for number, ok, value in frames(self.inbox):
            future = self.waiting.pop(number, None)
            if future is None or future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def _ended(self) -> None:
        """The process is gone (or its pipe broke): every job it held fails, and the pool is closed."""
        for future in self._closed_with_waiting():
            future.set_exception(BrokenProcessPool("the pool's process ended while it held this job"))

    def stop(self) -> None:
        """The service is ending: every job still waited for is cancelled (as a shut-down executor's were,
        so a caller's `except Exception` does not log a failure for it), and the pool is closed."""
        for future in self._closed_with_waiting():
            future.cancel()

    def _closed_with_waiting(self) -> list[asyncio.Future[Any]]:
        self.close()
        waiting, self.waiting = self.waiting, {}
        return [future for future in waiting.values() if not future.done()]

    def close(self) -> None:
        """No more jobs: the process ends once it has read the pipe's end (after the job it runs, if any)."""
        if self.closed:
            return
        self.closed = True
        if not self.loop.is_closed():
            self.loop.remove_reader(self.fd)
            self.loop.remove_writer(self.fd)
        self.ours.close()
        with contextlib.suppress(ValueError):  # reaped already
            self.process.join(0)


def _jobs(conn: Connection, parent: int) -> None:
    """A pool's process: each job read from the pipe is run and answered, until the pipe ends."""
    pool_process(parent)
    while True:
        try:
            number, work, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            outcome: tuple[int, bool, Any] = (number, True, work(*args))
        except Exception as error:
            outcome = (number, False, sendable(error))
        try:
            conn.send_bytes(pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            conn.send_bytes(pickle.dumps((number, False, RuntimeError(f"its result could not be sent: {error}"))))
        except OSError:
            return


def pool_process(parent: int, pidfd: bool = True) -> None:
    """A pool process's start: a lower priority (its wake-ups never preempt the loop: SCHED_BATCH), and its end
    bound to `parent`'s."""
    os.nice(NICE)
    loop_first.batched()
    ends_with(parent, pidfd)


def ends_with(parent: int, pidfd: bool = True) -> None:
    """End this process as soon as `parent` has ended: a thread waits on a pidfd of it, or, on a Linux kernel
    without pidfds (`pidfd` False), the kernel sends SIGTERM when the thread that made this process ends (the
    parent's event loop thread, where `run` submits). Elsewhere (not Linux) nothing watches."""
    opener = getattr(os, "pidfd_open", None) if pidfd else None
    watched = None
    if opener is not None:
        try:
            watched = opener(parent)
        except ProcessLookupError:
            os._exit(0)
        except OSError:  # no pidfds in this kernel
            watched = None
    if watched is None and sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the watch began
        os._exit(0)
    if watched is not None:
        threading.Thread(target=_exit_once_readable, args=(watched,), name="parent-watch", daemon=True).start()


def _exit_once_readable(watched: int) -> None:
    select.select([watched], [], [])  # a pidfd turns readable when its process has ended
    os._exit(0)


def shutdown() -> None:
    """Stop the pools (the process is ending); a later call makes new ones."""
    while _pools:
        _pools.popitem()[1].stop()
