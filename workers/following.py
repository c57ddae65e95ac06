"""How a watcher hears of a match's changes: pushed to it, not pulled.

A match's actor hands each watcher's update to its `Sink` as the change is published, in the actor's own
turn: no task per watcher, no wake-up and hand-over between the actor and the stream that sends it on
(each of those cost the service a task switch per update). A sink only queues what it is given: `put`
and `end` never wait and never raise. `Following` is the sink for whoever wants an async iterator.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

Unfollow = Callable[[], None]
"""Stops a watch (idempotent): its sink hears nothing more."""


class Sink(Protocol[T_contra]):
    def put(self, item: T_contra) -> None:
        """The next update, in the order of the changes."""

    def end(self, error: Exception | None) -> None:
        """The last call: None when the match is over (its last update came before), else why the watch
        stopped (its worker no longer serves the match: resume after the last update seen)."""


class Following(Generic[T]):
    """A sink read as an async iterator: its updates in order, then the end (an error is raised)."""

    __slots__ = ("_ended", "_error", "_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._ended = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: T) -> None:
        if not self._ended:
            self._items.append(item)
            self._wake()

    def end(self, error: Exception | None) -> None:
        if not self._ended:
            self._ended, self._error = True, error
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> AsyncIterator[T]:
        return self._updates()

    async def _updates(self) -> AsyncIterator[T]:
        while True:
            while self._items:
                yield self._items.popleft()
            if self._ended:
                if self._error is not None:
                    raise self._error
                return
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
