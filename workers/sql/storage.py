"""`SqlStorage`: the durable `Storage` on SQLite (embedded) or PostgreSQL (production).

Writes go to one writer that commits them in groups (`batching.GroupCommitter`): a thread of this process
(the default) or a process of its own (TABLEHALL_LOG_WRITER=process, `writer_process`); reads run in the
default thread pool on pooled connections. No call blocks the event loop, except the
constructor, which migrates the schema to head (use `await SqlStorage.open(url)` to do that off-loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Engine

from workers.leases import LeaseTable, MemberState, Taken
from workers.sql import leases, reads, writes
from workers.sql.batching import GroupCommitter, Stats, log_linger_s
from workers.sql.engine import is_sqlite, make_engine, reading, retry_locked
from workers.sql.log_writer import LogWriter, writing_engine
from workers.sql.migrate import migrate
from workers.sql.writer_process import Committer, ProcessCommitter, writer_in_process
from workers.storage import LogEntry, MatchEntry, Progress, Snapshot, Storage, Stored

T = TypeVar("T")

MAX_BATCH = 1000
"""Ops per transaction at most: bounds a transaction's size and the wait of its last op."""


class SqlStorage:
    durable = True
    takes_snapshots = True
    """A restore reads the log from the database: a snapshot spares reading and replaying all of it."""

    def __init__(
        self,
        url: str,
        *,
        upgrade: bool = True,
        max_batch: int = MAX_BATCH,
        sqlite_synchronous: str | None = None,
    ) -> None:
        self.url = url
        self.engine: Engine = make_engine(url, sqlite_synchronous=sqlite_synchronous)
        writing = writing_engine(url, sqlite_synchronous)
        self._writer: Committer
        self._log_writer: LogWriter | None = None
        """The writer thread's connection (None: the writer is a process of its own)."""
        # a writer process starts first: it connects while the schema is checked
        child = ProcessCommitter(url, sqlite_synchronous, max_batch) if writer_in_process() else None
        try:
            if upgrade:
                retry_locked(lambda: migrate(url, writing))
        except BaseException:
            if child is not None:
                child.close()
            raise
        if child is not None:
            writing.dispose()
            self._writer = child
        else:
            self._log_writer = LogWriter(writing)
            self._writer = GroupCommitter(self._log_writer.apply, max_batch=max_batch, linger_s=log_linger_s())
        self.board = leases.Board(url, sqlite_synchronous=sqlite_synchronous)

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> SqlStorage:
        """Open (and migrate) without blocking the event loop."""
        return await asyncio.to_thread(cls, url, **kwargs)

    @property
    def stats(self) -> Stats:
        """How many transactions the writer committed for how many ops (group commit at work)."""
        return self._writer.stats

    # -- writes: through the group committer ---------------------------------------------------------

    async def claim(self, owner: str, partitions: list[int]) -> dict[int, int]:
        result: dict[int, int] = await self._writer.submit(writes.ClaimOp(owner, list(partitions)))
        return result

    async def heartbeat(self, owner: str, at_unix_ms: int) -> None:
        await self._writer.submit(writes.HeartbeatOp(owner, at_unix_ms))

    async def create(self, entry: MatchEntry, epoch: int) -> None:
        await self._writer.submit(writes.CreateOp(entry, epoch))

    async def create_many(self, entries: list[MatchEntry], epochs: dict[int, int]) -> None:
        await self._writer.submit(writes.CreateManyOp(list(entries), dict(epochs)))

    async def reschedule(self, match_id: str, partition: int, epoch: int, origin_unix_ms: int) -> None:
        await self._writer.submit(writes.RescheduleOp(match_id, partition, epoch, origin_unix_ms))

    async def append(self, match_id: str, partition: int, epoch: int, entry: LogEntry, progress: Progress) -> None:
        await self._writer.submit(writes.AppendOp(match_id, partition, epoch, (entry,), progress))

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        await self._writer.submit(writes.AppendOp(match_id, partition, epoch, tuple(entries), progress))

    async def snapshot(self, match_id: str, partition: int, epoch: int, snapshot: Snapshot) -> None:
        await self._writer.submit(writes.SnapshotOp(match_id, partition, epoch, snapshot))

    # -- reads: in the thread pool -------------------------------------------------------------------

    def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn` in one read transaction: no write lock on SQLite, one snapshot on PostgreSQL."""
        with reading(self.engine) as conn:
            if not is_sqlite(self.engine):
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                return fn(conn, *args)

    async def _reading(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(self._read, fn, *args)

    async def last_heartbeat(self, partitions: list[int]) -> int | None:
        return await self._reading(reads.last_heartbeat, list(partitions))

    async def unfinished(self, partitions: list[int]) -> list[Stored]:
        return await self._reading(reads.unfinished, list(partitions))

    async def load(self, match_id: str) -> Stored | None:
        return await self._reading(reads.load, match_id)

    async def log(self, match_id: str) -> list[LogEntry]:
        return await self._reading(reads.log, match_id)

    # -- leases: on a connection and a thread of their own (never waiting behind the writes) ---------

    async def join(self, owner: str, address: str, now_unix_ms: int) -> None:
        await self.board.join(owner, address, now_unix_ms)

    def beat(self, owner: str, now_unix_ms: int) -> None:
        self.board.beat(owner, now_unix_ms)

    async def leases(self) -> LeaseTable:
        return await self.board.leases()

    async def take(self, owner: str, expected: dict[int, int], now_unix_ms: int, lease_ms: int) -> dict[int, Taken]:
        return await self.board.take(owner, expected, now_unix_ms, lease_ms)

    async def release(self, owner: str, epochs: dict[int, int], now_unix_ms: int, to: str = "") -> None:
        await self.board.release(owner, epochs, now_unix_ms, to)

    async def set_state(self, owner: str, state: MemberState) -> None:
        await self.board.set_state(owner, state)

    async def close(self) -> None:
        await self.board.close()
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._writer.close()
        if self._log_writer is not None:
            self._log_writer.close()  # the writer thread has ended: nobody else uses its connection
            self._log_writer = None
        self.engine.dispose()


if TYPE_CHECKING:

    def _implements(storage: SqlStorage) -> Storage:
        return storage
