"""A match actor's mailbox: its changes run one at a time, in arrival order, in a task of the actor's own.

A caller that goes away (a cancelled call, a dropped stream, a client deadline) before its turn comes
takes its work with it: none of it ran. Once its turn has come, the work runs to its end in the mailbox's
task — the commit and the apply are one step no caller can cut in two — and its result waits for nobody.
The task exists only while there is work, so ten thousand idle matches cost no tasks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Mailbox:
    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = deque()
        self._runner: asyncio.Task[None] | None = None
        self._current: asyncio.Future[Any] | None = None

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Queue `work` behind what is queued and wait for its result. Cancelling the wait before the
        work started drops it; after, the work still runs to its end."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append((work, future))
        if self._runner is None:
            self._runner = loop.create_task(self._drain())
        return await future

    @property
    def busy(self) -> bool:
        return self._runner is not None

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

    async def _drain(self) -> None:
        try:
            while self._queue:
                work, future = self._queue.popleft()
                if future.done():  # its caller went away before its turn: nothing of it runs
                    continue
                self._current = future
                try:
                    result = await work()
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


def _fail(future: asyncio.Future[Any], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # a caller that left never reads it: not an unretrieved error
