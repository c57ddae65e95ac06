"""The lease operations on the `workers` and `partitions` tables, each one short transaction.

They run on connections of their own, never queued behind the group committer's batches, so a heartbeat
is never late because many moves are being written. A heartbeat and a read of the table, each ten times a
second in every worker (the read in every gateway too), are one driver statement each on a connection kept
in autocommit (`Board._kept`): one round trip, none of SQLAlchemy's work per statement.

A take is a compare-and-set on the partition's epoch (the row is locked first: `FOR UPDATE` on PostgreSQL;
SQLite's transactions begin IMMEDIATE), and it moves the epoch on, so every write of the previous owner is
fenced from then on (workers/sql/writes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sqlalchemy import Connection, select, text, update

from workers.leases import LeaseLost, LeaseTable, Member, MemberState, PartitionLease, Taken
from workers.sql import models as m
from workers.sql.engine import make_engine, retry_locked
from workers.sql.models import rows
from workers.sql.writes import upsert

FORGET_MS = 3_600_000
"""A worker row whose heartbeat is older than this and that holds nothing is deleted when another joins."""


def join(conn: Connection, owner: str, address: str, now: int) -> None:
    w, p = m.workers, m.partitions
    holders = select(p.c.owner).where(p.c.owner != "").scalar_subquery()
    conn.execute(w.delete().where(w.c.heartbeat_unix_ms < now - FORGET_MS, w.c.owner.not_in(holders)))
    stmt = upsert(conn, w)
    values = {"owner": owner, "heartbeat_unix_ms": now, "address": address, "state": MemberState.ACTIVE,
              "joined_unix_ms": now}  # fmt: skip
    stmt = stmt.on_conflict_do_update(
        index_elements=[w.c.owner],
        set_={k: stmt.excluded[k] for k in ("heartbeat_unix_ms", "address", "state", "joined_unix_ms")},
    )
    conn.execute(stmt, values)


_BEAT = "UPDATE workers SET heartbeat_unix_ms = ? WHERE owner = ? AND state IN ('active', 'draining')"
"""A heartbeat: one small statement, the driver's own (it runs ten times a second in every worker)."""
_STATE = "SELECT state FROM workers WHERE owner = ?"


def beat(conn: _Kept, owner: str, now: int) -> None:
    """One heartbeat on a driver connection in autocommit (`Board._kept`): one statement, one round trip."""
    cursor = conn.cursor()
    try:
        cursor.execute(_marked(conn, _BEAT), (now, owner))
        if cursor.rowcount == 0:
            cursor.execute(_marked(conn, _STATE), (owner,))
            found = cursor.fetchone()
            state = found[0] if found else None
            raise LeaseLost(f"{owner} is {state or 'unknown'}: it holds no lease")
    finally:
        cursor.close()


def _marked(conn: _Kept, statement: str) -> str:
    """`statement` with the driver's own placeholders: psycopg's `%s` where SQLite's `?` is written."""
    return statement.replace("?", "%s") if conn.is_postgresql else statement


@dataclass(frozen=True, slots=True)
class Known:
    """The partitions as last read, and the signature they were read at (`_MEMBERS_AND_SIGNATURE`)."""

    signature: tuple[int, int]
    partitions: Mapping[int, PartitionLease]


_MEMBERS_AND_SIGNATURE = (
    "SELECT w.owner, w.address, w.state, w.heartbeat_unix_ms, s.n, s.total "
    "FROM (SELECT count(*) AS n, coalesce(sum(epoch), 0) AS total FROM partitions) AS s "
    "LEFT JOIN workers AS w ON 1 = 1"
)
"""Every member, and the partitions' signature: their count and the sum of their epochs. Every write of a
partition row moves its epoch on (a take, a release, a claim) or adds a row, and none is ever deleted, so
the signature changes with every change of the partitions: while it stays, the partitions read before hold."""
_PARTITIONS = "SELECT partition, owner, epoch, claimed_unix_ms FROM partitions"


def read(conn: _Kept, known: Known | None = None) -> tuple[LeaseTable, Known]:
    """The lease table, on a driver connection in autocommit (`Board._kept`); its partitions read only if
    they changed since `known` (a beat of an idle cluster is one statement reading a few member rows).

    The partitions, when read, come from a second statement, which may see a later change than the first:
    they are then kept under the older signature, so the next read finds it changed and reads them again.
    Each row read is a row as committed; a table is never older than the one read before it."""
    cursor = conn.cursor()
    try:
        cursor.execute(_MEMBERS_AND_SIGNATURE)
        found: list[Any] = cursor.fetchall()
        signature = (int(found[0][4]), int(found[0][5]))
        if known is None or known.signature != signature:
            cursor.execute(_PARTITIONS)
            partitions = MappingProxyType({
                int(part): PartitionLease(int(part), owner, int(epoch), int(since))
                for part, owner, epoch, since in cursor.fetchall()
            })  # fmt: skip
            known = Known(signature, partitions)  # read only: every table until the next change shares it
    finally:
        cursor.close()
    members = {
        owner: Member(owner, address, MemberState(state), int(beat))
        for owner, address, state, beat, _, _ in found
        if owner is not None
    }
    return LeaseTable(members, known.partitions), known


_PG_LOCK = text(
    "SELECT partition, owner, epoch, claimed_unix_ms FROM partitions "
    "WHERE partition = ANY(CAST(:partitions AS int[])) ORDER BY partition FOR UPDATE"
)


def _locked(conn: Connection, partitions: list[int]) -> dict[int, tuple[str, int, int]]:
    found: list[Any]
    if conn.dialect.name == "postgresql":
        found = list(conn.execute(_PG_LOCK, {"partitions": partitions}))
    else:
        p = m.partitions
        query = select(p.c.partition, p.c.owner, p.c.epoch, p.c.claimed_unix_ms).where(p.c.partition.in_(partitions))
        found = rows(conn, query)
    return {int(part): (owner, int(epoch), int(since)) for part, owner, epoch, since in found}


def take(conn: Connection, owner: str, expected: dict[int, int], now: int, lease_ms: int) -> dict[int, Taken]:
    if not expected:
        return {}
    if conn.dialect.name == "postgresql":  # wait for an old owner's batch to commit, not for a dead one
        conn.exec_driver_sql("SET LOCAL lock_timeout = '1s'")
    wanted = sorted(expected)
    current = _locked(conn, wanted)
    w, p = m.workers, m.partitions
    owners = {o for o, _, _ in current.values() if o}
    beats: dict[str, int] = dict(
        rows(conn, select(w.c.owner, w.c.heartbeat_unix_ms).where(w.c.owner.in_(owners)))
    ) if owners else {}  # fmt: skip
    taken: dict[int, Taken] = {}
    fresh_rows: list[dict[str, Any]] = []
    for partition in wanted:
        if partition not in current:
            if expected[partition] == 0:
                fresh_rows.append({"partition": partition, "owner": owner, "epoch": 1, "claimed_unix_ms": now})
                taken[partition] = Taken(1, None)
            continue
        holder, epoch, since = current[partition]
        if epoch != expected[partition]:
            continue
        beat = beats.get(holder) if holder else None
        if holder and holder != owner and beat is not None and now - beat <= lease_ms:
            continue  # its owner still holds it (a worker may take back what it still holds on paper)
        conn.execute(
            update(p).where(p.c.partition == partition, p.c.epoch == epoch)
            .values(owner=owner, epoch=epoch + 1, claimed_unix_ms=now)
        )  # fmt: skip
        taken[partition] = Taken(epoch + 1, beat if beat is not None else since)
    if fresh_rows:
        inserted = conn.execute(upsert(conn, p).on_conflict_do_nothing().returning(p.c.partition), fresh_rows)
        won = {int(row[0]) for row in inserted}
        for lost in {int(row["partition"]) for row in fresh_rows} - won:  # another worker created it first
            taken.pop(lost)
    return taken


def release(conn: Connection, owner: str, epochs: dict[int, int], now: int, to: str = "") -> None:
    """Give partitions up (`to` empty: for whoever takes them), or hand them to worker `to` directly."""
    p = m.partitions
    for partition, epoch in sorted(epochs.items()):
        conn.execute(
            update(p).where(p.c.partition == partition, p.c.owner == owner, p.c.epoch == epoch)
            .values(owner=to, epoch=epoch + 1, claimed_unix_ms=now)
        )  # fmt: skip


def set_state(conn: Connection, owner: str, state: MemberState) -> None:
    w = m.workers
    conn.execute(update(w).where(w.c.owner == owner).values(state=state.value))


class Board:
    """The lease table's door: every lease operation, each one short transaction on one connection and one
    thread of their own. Workers use it through `SqlStorage`; gateways and sweeps alone (no writer, no
    migrations) to read it and to mark a worker down."""

    def __init__(self, url: str, *, sqlite_synchronous: str | None = None) -> None:
        self.engine = make_engine(url, sqlite_synchronous=sqlite_synchronous, pool_size=2, busy_timeout_s=0)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tablehall-leases")
        self._beating: _Kept | None = None
        """The heartbeat thread's own connection, kept open: a heartbeat is one statement, one round trip."""
        self._reader: _Kept | None = None
        self._known: Known | None = None
        """The partitions as last read (`read`): a beat reads them again only once they changed."""

    def _tx(self, fn: Any, *args: Any) -> Any:
        """One transaction, the write lock tried every millisecond (see `retry_locked`): a heartbeat waiting
        in SQLite's own busy handler could miss its lease."""

        def once() -> Any:
            with self.engine.connect() as fresh, fresh.begin():
                return fn(fresh, *args)

        return retry_locked(once)

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._tx, fn, *args)

    async def join(self, owner: str, address: str, now_unix_ms: int) -> None:
        await self._run(join, owner, address, now_unix_ms)

    def beat(self, owner: str, now_unix_ms: int) -> None:
        """Blocking, in the caller's thread (the worker's heartbeat thread), on that thread's own connection
        (opened again after a failure)."""
        if self._beating is None:
            self._beating = self._kept()
        kept = self._beating
        try:
            retry_locked(lambda: beat(kept, owner, now_unix_ms))
        except LeaseLost:
            raise
        except Exception:
            _drop(self._beating)
            self._beating = None
            raise

    async def leases(self) -> LeaseTable:
        table: LeaseTable = await asyncio.get_running_loop().run_in_executor(self._thread, self._read)
        return table

    def _read(self) -> LeaseTable:
        """On the board's thread, on a connection kept for reads (opened again after a failure). On SQLite
        a read takes no write lock."""
        if self._reader is None:
            self._reader = self._kept()
        try:
            table: LeaseTable
            table, self._known = read(self._reader, self._known)
        except Exception:
            _drop(self._reader)
            self._reader = None
            raise
        return table

    def _kept(self) -> _Kept:
        """A driver connection of its own, out of the pool, each statement its own transaction: a beat and
        an idle read are one statement, so each is one round trip, with none of SQLAlchemy's work per
        statement (they run 20 times a second in every worker: nearly half of an idle worker's Python time)."""
        pooled = self.engine.raw_connection()
        driver = pooled.driver_connection
        pooled.detach()  # closed for good when dropped, never handed back to the pool in autocommit
        postgresql = self.engine.dialect.name == "postgresql"
        if postgresql:
            driver.autocommit = True  # type: ignore[union-attr]
        # SQLite: the engine's connections already leave transactions to whoever begins one (`engine.py`)
        return _Kept(pooled, postgresql)

    async def take(self, owner: str, expected: dict[int, int], now_unix_ms: int, lease_ms: int) -> dict[int, Taken]:
        taken: dict[int, Taken] = await self._run(take, owner, dict(expected), now_unix_ms, lease_ms)
        return taken

    async def release(self, owner: str, epochs: dict[int, int], now_unix_ms: int, to: str = "") -> None:
        await self._run(release, owner, dict(epochs), now_unix_ms, to)

    async def set_state(self, owner: str, state: MemberState) -> None:
        await self._run(set_state, owner, state)

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._thread.shutdown(wait=True)
        _drop(self._beating)
        _drop(self._reader)
        self._beating = self._reader = None
        self.engine.dispose()


class _Kept:
    """A kept driver connection in autocommit, and whether it speaks PostgreSQL (its placeholders)."""

    __slots__ = ("is_postgresql", "pooled")

    def __init__(self, pooled: Any, is_postgresql: bool) -> None:
        self.pooled = pooled
        self.is_postgresql = is_postgresql

    def cursor(self) -> Any:
        return self.pooled.cursor()

    def close(self) -> None:
        self.pooled.close()


def _drop(kept: _Kept | None) -> None:
    """Close a kept connection (one that failed, or at the end): the next use opens a new one."""
    if kept is not None:
        with contextlib.suppress(Exception):
            kept.close()
