"""An outbox for one stream: many tasks put, one writer takes everything queued at once.

A gRPC stream allows one write in flight; while it is in flight the next items gather, so the writer
sends them as one batch message. Under load the batches grow by themselves; when idle each item goes out
alone, with no timer and no added wait. Used both ways on the gateway-worker streams.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

T = TypeVar("T")


class Outbox(Generic[T]):
    def __init__(self) -> None:
        self._items: list[T] = []
        self._ready = asyncio.Event()
        self.closed = False

    def put(self, item: T) -> None:
        """Queue `item`; once closed, nobody reads any more, so it is dropped."""
        if self.closed:
            return
        self._items.append(item)
        self._ready.set()

    def close(self) -> None:
        """No more items: `take` returns what is left, then an empty list."""
        self.closed = True
        self._ready.set()

    async def take(self) -> list[T]:
        """Everything queued so far (waiting for the first item); empty only once closed and drained."""
        while not self._items and not self.closed:
            self._ready.clear()
            await self._ready.wait()
        items, self._items = self._items, []
        return items
