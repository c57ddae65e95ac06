"""A match actor's mailbox: its changes run one at a time, in arrival order, in a task of the actor's own.

A caller that goes away (a cancelled call, a dropped stream, a client deadline) before its turn comes
takes its work with it: none of it ran. Once its turn has come, the work runs to its end in the mailbox's
task — the commit and the apply are one step no caller can cut in two — and its result waits for nobody.
The task exists only while there is work, so ten thousand idle matches cost no tasks. Work that finds
the mailbox idle starts at once in its caller's turn, as an eager task would (Python 3.12's
`eager_task_factory`): a change that never waits (an in-memory log) runs to its end there, with no task
created and no switch; one that waits (a durable log's commit) goes on from there driven by the callbacks of
what it awaits (`_Driven`), which no caller can cut short, again with no task: a task made for each durable
command, and its first turn, cost the loop more than the rest of the wait. Work must therefore not depend
on running in a task (no `asyncio.timeout`, no `current_task`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Mailbox:
    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[[], Coroutine[Any, Any, Any]], asyncio.Future[Any]]] = deque()
        self._runner: asyncio.Future[None] | None = None
        """The mailbox's task draining the queue, or the end of eager work that had to wait (`_Driven`)."""
        self._current: asyncio.Future[Any] | None = None
        self._eager = False
        """A piece of work is running in its caller's turn (nothing else of this mailbox may start)."""

    async def run(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Queue `work` behind what is queued and wait for its result. Cancelling the wait before the
        work started drops it; after, the work still runs to its end."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if self._runner is None and not self._eager and not self._queue:
            return await self._eagerly(loop, work(), future)
        self._queue.append((work, future))
        if self._runner is None and not self._eager:
            self._runner = loop.create_task(self._drain())
        return await future

    async def _eagerly(
        self, loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T], future: asyncio.Future[T]
    ) -> T:
        """Start `work` here; if it must wait, the mailbox's task takes it over from where it stopped."""
        self._eager, self._current = True, future
        try:
            awaited = work.send(None)
        except StopIteration as done:
            result: T = done.value
            return self._finished(loop, future, result)
        except BaseException:
            self._eager, self._current = False, None
            self._start_queued(loop)
            if future.done():
                return future.result()  # abandoned while it ran: its caller hears that, as from the task
            raise
        self._eager = False
        self._runner = _Driven(self, loop, work, future).wait(awaited)
        return await future

    def _finished(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], result: T) -> T:
        """Eager work done without waiting: its result, unless the mailbox was abandoned meanwhile."""
        self._eager, self._current = False, None
        self._start_queued(loop)
        if future.done():
            return future.result()  # abandoned while it ran: its caller hears that
        return result

    def _start_queued(self, loop: asyncio.AbstractEventLoop) -> None:
        """Work queued while eager work ran (from inside it) starts in the mailbox's task."""
        if self._queue and self._runner is None:
            self._runner = loop.create_task(self._drain())

    @property
    def busy(self) -> bool:
        return self._runner is not None or self._eager

    @property
    def waiting(self) -> int:
        """Pieces of work queued behind the one running."""
        return len(self._queue)

    @property
    def callers_waiting(self) -> int:
        """Queued pieces of work whose callers still wait for them (one that left is skipped at its turn)."""
        return sum(not future.done() for _, future in self._queue)

    def abandon(self, running: Exception, queued: Exception) -> None:
        """The actor stops at once (its lease was lost): whoever waits hears it now. Queued work is dropped
        (its callers get `queued`); the piece running goes on in its task, its caller gets `running`."""
        for _, future in self._queue:
            _fail(future, queued)
        self._queue.clear()
        if self._current is not None:
            _fail(self._current, running)

    async def settled(self) -> None:
        """Wait until every queued piece of work has run (a partition being handed off)."""
        while self._runner is not None:
            await asyncio.wait({self._runner})

    def _driven_ended(self, loop: asyncio.AbstractEventLoop, ended: asyncio.Future[None]) -> None:
        """Eager work that had to wait has ended: the queue's turn."""
        self._current = None
        self._runner = None
        ended.set_result(None)
        self._start_queued(loop)

    async def _drain(self) -> None:
        """Run the queue to its end."""
        try:
            while self._queue:
                work, future = self._queue.popleft()
                if future.done():  # its caller went away before its turn: nothing of it runs
                    continue
                running = work()
                self._current = future
                try:
                    result = await running
                except asyncio.CancelledError:
                    future.cancel()
                    raise
                except Exception as error:
                    _fail(future, error)
                else:
                    if not future.done():
                        future.set_result(result)
                finally:
                    self._current = None
        finally:
            self._runner = None
            for _, future in self._queue:  # only when this task itself was cancelled (the loop is closing)
                future.cancel()
            self._queue.clear()


class _Driven:
    """The rest of eager work that stopped at a future: each future it awaits wakes it by its done callback,
    and it runs on in that callback up to its next wait or its end (as a task would step it, with no task).
    Nobody can cancel it; its caller's future gets its result, unless the caller left or was told already."""

    __slots__ = ("ended", "future", "loop", "mailbox", "work")

    def __init__(
        self,
        mailbox: Mailbox,
        loop: asyncio.AbstractEventLoop,
        work: Coroutine[Any, Any, Any],
        future: asyncio.Future[Any],
    ) -> None:
        self.mailbox, self.loop, self.work, self.future = mailbox, loop, work, future
        self.ended: asyncio.Future[None] = loop.create_future()

    def wait(self, awaited: Any) -> asyncio.Future[None]:
        """Go on once `awaited` (what the work yielded: a future, or None for a bare yield) is done."""
        if awaited is None:
            self.loop.call_soon(self._step)
        elif asyncio.isfuture(awaited):
            awaited._asyncio_future_blocking = False  # taken, as a task takes what it is handed
            awaited.add_done_callback(self._wake)
        else:  # as a task answers it
            self.loop.call_soon(self._step, RuntimeError(f"a mailbox's work yielded {type(awaited).__name__}"))
        return self.ended

    def _wake(self, _: object) -> None:
        self._step()

    def _step(self, thrown: Exception | None = None) -> None:
        try:
            awaited = self.work.send(None) if thrown is None else self.work.throw(thrown)
        except StopIteration as done:
            if not self.future.done():
                self.future.set_result(done.value)
        except asyncio.CancelledError:
            self.future.cancel()
        except Exception as error:
            _fail(self.future, error)
        else:
            self.wait(awaited)
            return
        self.mailbox._driven_ended(self.loop, self.ended)


def _fail(future: asyncio.Future[Any], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # a caller that left never reads it: not an unretrieved error
