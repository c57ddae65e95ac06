"""Group commit: one writer thread turns the writes queued by many coroutines into few transactions.

Every write is an op with an asyncio future of its caller's loop. A loop gathers its ops during one of its
turns and hands them to the writer thread together, unless a batch of its own is being committed: then they
wait for its answer and go next (as the writer process's frames do, writer_process.py). So the writer thread
is woken once a batch, not once an op. It hands them to `apply` as one batch (up to `max_batch`): one
transaction, one commit, one fsync. While a batch commits the next one gathers, so batches grow with the
load by themselves and no op ever waits on a timer (zero added latency when idle). The ops' futures
resolve only after their batch committed, all of a batch in one callback on their loop (one wake-up of
the loop per batch, not one per op); `apply` reports per op, so an op it refuses (fenced out, out of
sequence) fails alone while the others commit. If the transaction itself fails, each op of the batch is
retried in a transaction of its own, so one bad op cannot sink its neighbours.

An op whose caller gave up (cancelled) before the writer took it is never written; one taken already may
be committed, as with any write whose answer was lost.

Ops marked `solo` (claims) run in a transaction of their own, in queue order.

Each op's wait is timed by phase (`waited`: queued, on its way to the writer, written, its answer waiting for
the loop), here and in the writer process alike, into `metrics.LOG_WAIT`: where a write's wait goes.

Under load the next batch lingers (`linger_s`, TABLEHALL_LOG_LINGER_MS for the storage's writer thread):
when a batch is answered while ops wait already, they go `linger_s` later, with whatever came meanwhile. A
worker on a saturated machine then commits fewer, larger batches, and spends less CPU (its own and the
database's) per op. An op that finds nothing waiting and no batch under way still goes at once: nothing waits
on a timer when the writer is idle. (PostgreSQL's own `commit_delay` waits only beside enough other
transactions, for the same reason.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from workers import metrics

log = logging.getLogger(__name__)


class Op:
    """A write waiting for the writer thread; subclasses carry what to write."""

    solo = False
    future: asyncio.Future[Any]
    taken = False
    """The writer took it into a batch (under the committer's lock): a cancel no longer stops it."""
    dropped = False
    """Its caller gave up before the writer took it (under the committer's lock): it is skipped."""

    submitted = 0.0
    """When its caller submitted it (`time.monotonic`, as every clock below: one for all processes on a machine)."""
    handed = 0.0
    """When it left for the writer, in a batch (or a writer process's frame)."""

    def __getstate__(self) -> dict[str, Any]:
        """What the writer process needs: the op's values, not its caller's future nor its times."""
        return {k: v for k, v in vars(self).items() if k not in _LOCAL}


_LOCAL = frozenset(("future", "taken", "dropped", "submitted", "handed"))


Apply = Callable[[Sequence[Op]], list[object]]
"""Runs ops in one committed transaction; returns, per op, its result or the exception it fails with."""


@dataclass
class Stats:
    batches: int = 0
    ops: int = 0
    largest: int = 0
    retried: int = 0


_STOP = object()


def settle(ops: Sequence[Op], outcomes: Sequence[object]) -> None:
    """On the ops' loop: hand each waiting caller its op's outcome (a caller that gave up is skipped)."""
    for op, outcome in zip(ops, outcomes, strict=True):
        if op.future.done():
            continue
        if isinstance(outcome, BaseException):
            op.future.set_exception(outcome)
        else:
            op.future.set_result(outcome)


def waited(ops: Sequence[Op], began: float, ended: float, answered: float) -> None:
    """A batch answered on its caller's loop: its ops' time in each phase, summed (`metrics.LOG_WAIT`). Clocks
    of two processes can disagree by a tick: a phase read backwards counts as 0."""
    queued = to_writer = 0.0
    for op in ops:
        queued += op.handed - op.submitted
        to_writer += began - op.handed
    n = len(ops)
    spans = (queued, to_writer, n * (ended - began), n * (answered - ended))
    for counter, span in zip(metrics.WAIT_BY_PHASE, spans, strict=True):
        counter.inc(max(0.0, span))
    metrics.LOG_WRITES.inc(n)


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


@dataclass(slots=True)
class _Side:
    """One event loop's ops on their way to the writer thread: gathered during a turn of the loop and handed
    over together while none of this loop's is being committed, so that the writer thread is woken once a
    batch, not once an op (each wake-up hands the interpreter to it while the loop has a command to finish)."""

    pending: list[Op] = field(default_factory=list)
    busy: bool = False
    """A batch of this loop's is with the writer thread, or lingers before it goes: what comes meanwhile waits
    for it (and joins a lingering one)."""


LINGER_ENV = "TABLEHALL_LOG_LINGER_MS"
DEFAULT_LINGER_MS = 5.0
"""Measured with three workers and PostgreSQL on two cores (README, Speed), in pairs against no linger: 5 ms
raised the rate 13-17 % and cut PostgreSQL's CPU a fifth (3 ms: 7-9 %, 6 ms: 10-24 %). A write waits at most
this much more, and only when others wait with it."""
MAX_LINGER_MS = 100.0


def log_linger_s(env: Mapping[str, str] = os.environ) -> float:
    """The writer thread's linger under load: TABLEHALL_LOG_LINGER_MS (0 turns it off), else the default."""
    given = env.get(LINGER_ENV, "").strip()
    if not given:
        return DEFAULT_LINGER_MS / 1000
    try:
        ms = float(given)
    except ValueError:
        ms = -1.0
    if not 0 <= ms <= MAX_LINGER_MS:  # NaN fails both comparisons
        log.warning("%s=%.40r is not 0-%g ms: the default %g ms is kept", LINGER_ENV, given, MAX_LINGER_MS,
                    DEFAULT_LINGER_MS)  # fmt: skip
        return DEFAULT_LINGER_MS / 1000
    return ms / 1000


@dataclass
class GroupCommitter:
    apply: Apply
    max_batch: int = 1000
    name: str = "tablehall-sql-writer"
    stats: Stats = field(default_factory=Stats)
    linger_s: float = 0.0
    """How long the next batch gathers when ops wait already as a batch is answered (0: it goes at once)."""

    def __post_init__(self) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._sides: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Side] = weakref.WeakKeyDictionary()
        """Each loop's side, kept while its loop is (a side holds no reference to its loop)."""
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    async def submit(self, op: Op) -> Any:
        """Queue `op` and wait (without blocking the event loop) until its batch committed."""
        loop = asyncio.get_running_loop()
        op.future = loop.create_future()
        op.submitted = time.monotonic()
        with self._lock:
            if self._closed:
                raise RuntimeError("storage is closed")
            side = self._sides.get(loop) or self._sides.setdefault(loop, _Side())
        if not side.pending and not side.busy:
            loop.call_soon(self._hand_over, side)
        side.pending.append(op)
        try:
            return await op.future
        except asyncio.CancelledError:
            with self._lock:
                op.dropped = not op.taken
            raise

    def _hand_over(self, side: _Side) -> None:
        """On the side's loop: its pending ops (but those whose callers gave up) to the writer thread, as one."""
        ops, side.pending = [op for op in side.pending if not op.future.done()], []
        if not ops:
            return
        handed = time.monotonic()
        for op in ops:
            op.handed = handed
        with self._lock:
            if not self._closed:
                side.busy = True
                self._queue.put((asyncio.get_running_loop(), side, ops))
                return
        for op in ops:
            op.future.set_exception(RuntimeError("storage is closed"))

    def _answered(self, side: _Side, ops: list[Op], results: list[object], began: float, ended: float) -> None:
        """On the side's loop: the batch's callers hear of it; what gathered meanwhile goes next."""
        side.busy = False
        waited(ops, began, ended, time.monotonic())
        settle(ops, results)
        if not side.pending:
            return
        if self.linger_s > 0:  # under load: what comes in the next moments joins them
            side.busy = True
            asyncio.get_running_loop().call_later(self.linger_s, self._lingered, side)
        else:
            self._hand_over(side)

    def _lingered(self, side: _Side) -> None:
        side.busy = False
        self._hand_over(side)

    def close(self) -> None:
        """Let the queued ops commit, then stop the thread (blocking: call it off the event loop)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP)
        self._thread.join()

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            loop, side, handed = cast(tuple[asyncio.AbstractEventLoop, _Side, list[Op]], item)
            with self._lock:  # a cancelled future: its caller is giving up (its `dropped` is set next)
                ops = [op for op in handed if not self._gave_up(op)]
                for op in ops:
                    op.taken = True
            results: list[object] = []
            began = time.monotonic()
            for batch in batches(ops, self.max_batch):
                results += outcomes(self.apply, batch, self.stats)
            ended = time.monotonic()
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for these answers any more
                loop.call_soon_threadsafe(self._answered, side, ops, results, began, ended)

    def _gave_up(self, op: Op) -> bool:
        return op.dropped or op.future.cancelled()
