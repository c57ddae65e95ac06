"""Group commit: one writer thread turns the writes queued by many coroutines into few transactions.

Every write is an op with an asyncio future of its caller's loop. The writer thread takes the first op
waiting, then every other op already queued (up to `max_batch`), and hands them to `apply` as one batch:
one transaction, one commit, one fsync. While a batch commits the next one queues up, so batches grow with
the load by themselves and no op ever waits on a timer (zero added latency when idle). The ops' futures
resolve only after their batch committed, all of a batch in one callback on their loop (one wake-up of
the loop per batch, not one per op); `apply` reports per op, so an op it refuses (fenced out, out of
sequence) fails alone while the others commit. If the transaction itself fails, each op of the batch is
retried in a transaction of its own, so one bad op cannot sink its neighbours.

An op whose caller gave up (cancelled) before the writer took it is never written; one taken already may
be committed, as with any write whose answer was lost.

Ops marked `solo` (claims) run in a transaction of their own, in queue order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


class Op:
    """A write waiting for the writer thread; subclasses carry what to write."""

    solo = False
    future: asyncio.Future[Any]
    taken = False
    """The writer took it into a batch (under the committer's lock): a cancel no longer stops it."""
    dropped = False
    """Its caller gave up before the writer took it (under the committer's lock): it is skipped."""

    def __getstate__(self) -> dict[str, Any]:
        """What the writer process needs: the op's values, not its caller's future."""
        return {k: v for k, v in vars(self).items() if k not in ("future", "taken", "dropped")}


Apply = Callable[[Sequence[Op]], list[object]]
"""Runs ops in one committed transaction; returns, per op, its result or the exception it fails with."""


@dataclass
class Stats:
    batches: int = 0
    ops: int = 0
    largest: int = 0
    retried: int = 0


_STOP = object()


def _settle(ops: Sequence[Op], outcomes: Sequence[object]) -> None:
    """On the ops' loop: hand each waiting caller its op's outcome (a caller that gave up is skipped)."""
    for op, outcome in zip(ops, outcomes, strict=True):
        if op.future.done():
            continue
        if isinstance(outcome, BaseException):
            op.future.set_exception(outcome)
        else:
            op.future.set_result(outcome)


def outcomes(apply: Apply, batch: Sequence[Op], stats: Stats) -> list[object]:
    """Per op, its result or its exception: the batch in one transaction, or each alone if that fails."""
    try:
        found = apply(batch)
    except Exception as exc:
        if len(batch) == 1:
            return [exc]
        log.warning("a batch of %d writes failed (%s); retrying each alone", len(batch), exc)
        stats.retried += 1
        return [outcomes(apply, [op], stats)[0] for op in batch]
    stats.batches += 1
    stats.ops += len(batch)
    stats.largest = max(stats.largest, len(batch))
    return found


def batches(ops: Sequence[Op], max_batch: int) -> list[list[Op]]:
    """`ops` in queue order as the writer thread groups them: up to `max_batch` a batch, a `solo` op alone."""
    found: list[list[Op]] = []
    for op in ops:
        if op.solo or not found or found[-1][-1].solo or len(found[-1]) >= max_batch:
            found.append([op])
        else:
            found[-1].append(op)
    return found


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
        op.future = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("storage is closed")
            self._queue.put(op)
        try:
            return await op.future
        except asyncio.CancelledError:
            with self._lock:
                op.dropped = not op.taken
            raise

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
            with self._lock:  # a cancelled future: its caller is giving up (its `dropped` is set next)
                batch = [op for op in batch if not self._gave_up(op)]
                for op in batch:
                    op.taken = True
            if batch:
                self._answer(batch, self._outcomes(batch))

    def put(self, op: Op) -> None:
        """Queue `op` with nobody awaiting it here (the writer process's ops: `_answer` sends the outcomes)."""
        self._queue.put(op)

    def _gave_up(self, op: Op) -> bool:
        return op.dropped or op.future.cancelled()

    def _outcomes(self, batch: list[Op]) -> list[object]:
        return outcomes(self.apply, batch, self.stats)

    def _answer(self, batch: list[Op], outcomes: list[object]) -> None:
        """Wake each loop that waits on the batch once, with all of its ops' outcomes."""
        by_loop: dict[asyncio.AbstractEventLoop, tuple[list[Op], list[object]]] = {}
        for op, outcome in zip(batch, outcomes, strict=True):
            ops, results = by_loop.setdefault(op.future.get_loop(), ([], []))
            ops.append(op)
            results.append(outcome)
        for loop, (ops, results) in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for these answers any more
                loop.call_soon_threadsafe(_settle, ops, results)
