"""Group commit: one writer thread turns the writes queued by many coroutines into few transactions.

Every write is an op with a `concurrent.futures.Future`. The writer thread takes the first op waiting,
then every other op already queued (up to `max_batch`), and hands them to `apply` as one batch: one
transaction, one commit, one fsync. While a batch commits the next one queues up, so batches grow with
the load by themselves and no op ever waits on a timer (zero added latency when idle). Each op's
future resolves only after its batch committed; `apply` reports per op, so an op it refuses (fenced
out, out of sequence) fails alone while the others commit. If the transaction itself fails, each op of
the batch is retried in a transaction of its own, so one bad op cannot sink its neighbours.

Ops marked `solo` (claims) run in a transaction of their own, in queue order.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


class Op:
    """A write waiting for the writer thread; subclasses carry what to write."""

    solo = False
    future: Future[Any]

    def __init__(self) -> None:
        self.future = Future()


Apply = Callable[[Sequence[Op]], list[object]]
"""Runs ops in one committed transaction; returns, per op, its result or the exception it fails with."""


@dataclass
class Stats:
    batches: int = 0
    ops: int = 0
    largest: int = 0
    retried: int = 0


_STOP = object()


@dataclass
class GroupCommitter:
    apply: Apply
    max_batch: int = 1000
    name: str = "tablehall-sql-writer"
    stats: Stats = field(default_factory=Stats)

    def __post_init__(self) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._held: object | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    async def submit(self, op: Op) -> Any:
        """Queue `op` and wait (without blocking the event loop) until its batch committed."""
        with self._lock:
            if self._closed:
                raise RuntimeError("storage is closed")
            self._queue.put(op)
        return await asyncio.wrap_future(op.future)

    def close(self) -> None:
        """Let the queued ops commit, then stop the thread (blocking: call it off the event loop)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP)
        self._thread.join()

    def _next(self, block: bool) -> object | None:
        if self._held is not None:
            item, self._held = self._held, None
            return item
        try:
            return self._queue.get(block=block)
        except queue.Empty:
            return None

    def _run(self) -> None:
        while True:
            first = self._next(block=True)
            if first is _STOP:
                return
            assert isinstance(first, Op)
            batch = [first]
            while not first.solo and len(batch) < self.max_batch:
                item = self._next(block=False)
                if item is None:
                    break
                if item is _STOP or (isinstance(item, Op) and item.solo):
                    self._held = item
                    break
                assert isinstance(item, Op)
                batch.append(item)
            self._commit([op for op in batch if op.future.set_running_or_notify_cancel()])

    def _commit(self, batch: list[Op]) -> None:
        if not batch:
            return
        try:
            outcomes = self.apply(batch)
        except Exception as exc:
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
                return
            log.warning("a batch of %d writes failed (%s); retrying each alone", len(batch), exc)
            self.stats.retried += 1
            for op in batch:
                self._commit([op])
            return
        self.stats.batches += 1
        self.stats.ops += len(batch)
        self.stats.largest = max(self.stats.largest, len(batch))
        for op, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                op.future.set_exception(outcome)
            else:
                op.future.set_result(outcome)
