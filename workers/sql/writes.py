"""The write ops and how a batch of them is applied inside one transaction.

Fencing: the batch first reads the epoch of every partition it touches (on PostgreSQL `FOR SHARE`, in
partition order, so a concurrent `claim` waits for this batch to commit, and this batch for a claim that
got there first; on SQLite the transaction began IMMEDIATE and holds the write lock). An op whose epoch
is not the partition's current one fails with `FencedOut` and writes nothing; the rest go on.
Ops are applied by kind (creates, appends, snapshots, heartbeats) with a few bulk statements each; a
caller awaits each write before the next that depends on it, so ops of one batch are independent
(appends to one match keep their queue order). On PostgreSQL a batch of appends tries one autocommitted
statement first (`pg_at_once`) and comes here only when one of its ops would be refused.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select, text, update
from sqlalchemy import Table as SaTable
from sqlalchemy.dialects import postgresql, sqlite

from workers.sql import models as m
from workers.sql.batching import Op
from workers.sql.models import rows
from workers.storage import FencedOut, LogEntry, MatchEntry, Progress, Snapshot


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Fenced(Op):
    partition: int
    epoch: int


class CreateOp(Fenced):
    def __init__(self, entry: MatchEntry, epoch: int) -> None:
        super().__init__()
        self.entry, self.partition, self.epoch = entry, entry.partition, epoch


class AppendOp(Fenced):
    """Entries of one match, in order, and its progress after them: all of them are written, or none."""

    def __init__(
        self, match_id: str, partition: int, epoch: int, entries: tuple[LogEntry, ...], progress: Progress
    ) -> None:
        super().__init__()
        self.match_id, self.partition, self.epoch = match_id, partition, epoch
        self.entries, self.progress = entries, progress

    def __reduce__(self) -> tuple[object, tuple[Any, ...]]:
        """Pickled as plain tuples for the writer process (one per command, on the event loop): a frozen
        dataclass pickles through its per-object `__getstate__`, which took 2.4× as long (`Op.__getstate__`)."""
        p = self.progress
        entries = tuple((e.seq, e.change, e.kind, e.seat, e.action, e.t_ms) for e in self.entries)
        return _thawed_append, (
            self.match_id, self.partition, self.epoch, entries,
            (p.status, p.void_reason, p.deadline_unix_ms, p.clock_running),
        )  # fmt: skip


def _thawed_append(
    match_id: str, partition: int, epoch: int, entries: tuple[tuple[Any, ...], ...], progress: tuple[Any, ...]
) -> AppendOp:
    """An `AppendOp` from its pickled tuples (`AppendOp.__reduce__`)."""
    return AppendOp(match_id, partition, epoch, tuple(LogEntry(*e) for e in entries), Progress(*progress))


class SnapshotOp(Fenced):
    def __init__(self, match_id: str, partition: int, epoch: int, snapshot: Snapshot) -> None:
        super().__init__()
        self.match_id, self.partition, self.epoch, self.snapshot = match_id, partition, epoch, snapshot


class CreateManyOp(Op):
    """Many matches in one transaction of their own: every one is written, or (fenced out, an id taken)
    none is."""

    solo = True

    def __init__(self, entries: list[MatchEntry], epochs: dict[int, int]) -> None:
        super().__init__()
        self.entries, self.epochs = entries, epochs


class RescheduleOp(Fenced):
    """A new time origin for a match that has logged nothing yet (a held match started early or late)."""

    def __init__(self, match_id: str, partition: int, epoch: int, origin_unix_ms: int) -> None:
        super().__init__()
        self.match_id, self.partition, self.epoch, self.origin_unix_ms = match_id, partition, epoch, origin_unix_ms


class HeartbeatOp(Op):
    def __init__(self, owner: str, at_unix_ms: int) -> None:
        super().__init__()
        self.owner, self.at_unix_ms = owner, at_unix_ms


class ClaimOp(Op):
    solo = True

    def __init__(self, owner: str, partitions: list[int]) -> None:
        super().__init__()
        self.owner, self.partitions = owner, partitions


def upsert(conn: Connection, table: SaTable) -> Any:
    """The dialect's INSERT, which has ON CONFLICT (PostgreSQL and SQLite alike): every writer of the
    service's tables that must not fail on an existing row (the log's writes, leases, ratings) uses it."""
    return _dialect_insert(conn.dialect.name, table)


def _dialect_insert(dialect: str, table: SaTable) -> Any:
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise NotImplementedError(f"tablehall stores on PostgreSQL or SQLite, not {dialect}")


def apply(conn: Connection, ops: Sequence[Op]) -> list[object]:
    """Apply a batch inside the open transaction of `conn`; per op its result or its exception."""
    out: list[object] = [None] * len(ops)
    if len(ops) == 1 and isinstance(ops[0], ClaimOp):
        out[0] = _claim(conn, ops[0])
        return out
    if len(ops) == 1 and isinstance(ops[0], CreateManyOp):
        _create_many(conn, ops[0], now_ms())  # raises, so the transaction writes nothing, on any refusal
        return out
    now = now_ms()
    live, newest = _fence(conn, ops, out)
    _creates(conn, [(i, op) for i, op in live if isinstance(op, CreateOp)], out, now)
    _reschedules(conn, [(i, op) for i, op in live if isinstance(op, RescheduleOp)], out)
    _appends(conn, [(i, op) for i, op in live if isinstance(op, AppendOp) and out[i] is None], out, now, newest)
    _snapshots(conn, [(i, op) for i, op in live if isinstance(op, SnapshotOp)], out, now)
    _heartbeats(conn, [op for op in ops if isinstance(op, HeartbeatOp)])
    return out


def _claim(conn: Connection, op: ClaimOp) -> dict[int, int]:
    now = now_ms()
    counts = Counter(op.partitions)
    if counts:
        stmt = upsert(conn, m.partitions)
        stmt = stmt.on_conflict_do_update(
            index_elements=[m.partitions.c.partition],
            set_={
                "epoch": m.partitions.c.epoch + stmt.excluded.epoch,
                "owner": stmt.excluded.owner,
                "claimed_unix_ms": stmt.excluded.claimed_unix_ms,
            },
        )
        for p in sorted(counts):  # in partition order, like the batches' FOR SHARE: no deadlock
            conn.execute(stmt, {"partition": p, "owner": op.owner, "epoch": counts[p], "claimed_unix_ms": now})
    epochs = _epochs(conn, set(counts), lock=False)
    return {p: epochs[p][0] for p in op.partitions}


def _epochs(conn: Connection, partitions: set[int], lock: bool) -> dict[int, tuple[int, str]]:
    if not partitions:
        return {}
    if lock and conn.dialect.name == "postgresql":  # every batch: a prepared text statement, no compiling
        found: list[Any] = list(conn.execute(_PG_EPOCHS_FOR_SHARE, {"partitions": json.dumps(sorted(partitions))}))
        return {p: (epoch, owner) for p, epoch, owner in found}
    if lock:  # SQLite, every batch: the driver's own statement (the transaction holds the write lock)
        cursor = _driver_cursor(conn)
        held = cursor.execute(_SQLITE_EPOCHS.format(marks=", ".join("?" * len(partitions))), sorted(partitions))
        epochs = {p: (epoch, owner) for p, epoch, owner in held.fetchall()}
        cursor.close()
        return epochs
    t = m.partitions
    query = select(t.c.partition, t.c.epoch, t.c.owner).where(t.c.partition.in_(sorted(partitions)))
    return {p: (epoch, owner) for p, epoch, owner in rows(conn, query.order_by(t.c.partition))}


def _fence(
    conn: Connection, ops: Sequence[Op], out: list[object]
) -> tuple[list[tuple[int, Fenced]], dict[str, int | None]]:
    """The ops whose partition is still at their epoch (the others fail `FencedOut`), and the newest seq of
    every existing match the batch appends to (None: nothing logged yet), read by the same statement (one
    round trip; a backwards scan of the (match_id, seq) key per match, cheap however long the logs grow)."""
    fenced = [(i, op) for i, op in enumerate(ops) if isinstance(op, Fenced)]
    partitions = {op.partition for _, op in fenced}
    appending = sorted({op.match_id for _, op in fenced if isinstance(op, AppendOp)})
    newest: dict[str, int | None] = {}
    if appending and conn.dialect.name == "postgresql":
        epochs, newest = _pg_epochs_and_newest(conn, partitions, appending)
    elif conn.dialect.name == "sqlite":
        epochs, newest = _sqlite_epochs_and_newest(conn, partitions, appending)
    else:
        epochs = _epochs(conn, partitions, lock=True)
    live = []
    for i, op in fenced:
        epoch, owner = epochs.get(op.partition, (0, None))
        if epoch != op.epoch:
            out[i] = FencedOut(
                f"partition {op.partition} was claimed by {owner} (epoch {epoch}; this write had {op.epoch})"
            )
        else:
            live.append((i, op))
    return live, newest


def _sqlite_epochs_and_newest(
    conn: Connection, partitions: set[int], ids: list[str]
) -> tuple[dict[int, tuple[int, str]], dict[str, int | None]]:
    """The partitions' epochs and the matches' newest seqs (as `_epochs` and `_fence`; the transaction holds
    SQLite's write lock) as one row of one statement: the driver lets go of the interpreter around every
    step of a statement, and under load each step's way back cost the writer thread a wait for the event
    loop's thread (`tablehall bench service --database-url sqlite:…`: ten appends took 2.5 ms on a quiet
    process and 89 ms beside a busy loop)."""
    cursor = _driver_cursor(conn)
    marks, id_marks = ", ".join("?" * len(partitions)), ", ".join("?" * len(ids))
    found = cursor.execute(_SQLITE_FENCE.format(marks=marks, ids=id_marks or "NULL"), [*sorted(partitions), *ids])
    epochs_json, newest_json = found.fetchone()
    cursor.close()
    epochs = {p: (epoch, owner) for p, epoch, owner in json.loads(epochs_json)}
    return epochs, (dict(json.loads(newest_json)) if ids else {})


def _pg_epochs_and_newest(
    conn: Connection, partitions: set[int], ids: list[str]
) -> tuple[dict[int, tuple[int, str]], dict[str, int | None]]:
    """The partitions' epochs (locked `FOR SHARE`, as `_epochs`) and the matches' newest seqs (as `_fence`)
    in one statement. Its snapshot may predate a claim the lock then waited for: the epoch read is the
    claim's, so such a batch is fenced out, whatever its snapshot says about the log."""
    epochs: dict[int, tuple[int, str]] = {}
    newest: dict[str, int | None] = {}
    with _driver_cursor(conn) as cursor:
        cursor.execute(_PG_EPOCHS_AND_NEWEST, {"partitions": json.dumps(sorted(partitions)), "ids": json.dumps(ids)})
        found: list[Any] = cursor.fetchall()
    for partition, epoch, owner, match_id, seq in found:
        if match_id is None:
            epochs[partition] = (epoch, owner)
        else:
            newest[match_id] = seq
    return epochs, newest


_EXISTING_SQLITE = "SELECT id FROM matches WHERE id IN ({marks})"
_EXISTING_PG = "SELECT id FROM matches WHERE id = ANY(%s)"


def _existing(conn: Connection, match_ids: set[str]) -> set[str]:
    """Which of these matches exist, as one of the driver's own statements (every snapshot and every new
    match asks: as SQLAlchemy's expanding statement, rendered anew for each call, it was 15 % of the log
    writer process's Python samples under `tablehall bench service --database-url sqlite:…`; README, Speed)."""
    if not match_ids:
        return set()
    cursor = _driver_cursor(conn)
    try:
        if conn.dialect.name == "postgresql":
            cursor.execute(_EXISTING_PG, (sorted(match_ids),))
            return {found for (found,) in cursor.fetchall()}
        existing: set[str] = set()
        for chunk in _chunks(sorted(match_ids), _ROWS):  # a bulk create's 5,000: under any SQLite's bound
            cursor.execute(_EXISTING_SQLITE.format(marks=", ".join("?" * len(chunk))), chunk)
            existing.update(found for (found,) in cursor.fetchall())
        return existing
    finally:
        cursor.close()


def _creates(conn: Connection, creates: list[tuple[int, CreateOp]], out: list[object], now: int) -> None:
    existing = _existing(conn, {op.entry.match_id for _, op in creates})
    accepted: list[MatchEntry] = []
    for i, op in creates:
        e = op.entry
        if e.match_id in existing:
            out[i] = ValueError(f"match {e.match_id} exists already")
        elif len(e.token_sha256) != len(e.players):
            out[i] = ValueError(f"match {e.match_id}: {len(e.players)} players but {len(e.token_sha256)} tokens")
        else:
            existing.add(e.match_id)
            accepted.append(e)
    _insert_matches(conn, accepted, now)


def _create_many(conn: Connection, op: CreateManyOp, now: int) -> None:
    epochs = _epochs(conn, {e.partition for e in op.entries}, lock=True)
    for e in op.entries:
        epoch, owner = epochs.get(e.partition, (0, None))
        if epoch != op.epochs.get(e.partition, 0):
            raise FencedOut(f"partition {e.partition} was claimed by {owner} (epoch {epoch})")
        if len(e.token_sha256) != len(e.players):
            raise ValueError(f"match {e.match_id}: {len(e.players)} players but {len(e.token_sha256)} tokens")
    ids = [e.match_id for e in op.entries]
    taken = _existing(conn, set(ids))
    if taken or len(set(ids)) != len(ids):
        raise ValueError(f"match ids exist already: {', '.join(sorted(taken)) or 'repeated in the batch'}")
    _insert_matches(conn, op.entries, now)


def _reschedules(conn: Connection, ops: list[tuple[int, RescheduleOp]], out: list[object]) -> None:
    if not ops:
        return
    ev, t = m.events, m.matches
    ids = {op.match_id for _, op in ops}
    known = _existing(conn, ids)
    started: set[str] = set(conn.scalars(select(ev.c.match_id).where(ev.c.match_id.in_(ids)).distinct()))
    moved = []
    for i, op in ops:
        if op.match_id not in known or op.match_id in started:
            out[i] = ValueError(f"match {op.match_id} is unknown or has started: its origin stays")
        else:
            moved.append({"b_id": op.match_id, "b_origin": op.origin_unix_ms})
    if moved:
        conn.execute(update(t).where(t.c.id == bindparam("b_id")).values(created_unix_ms=bindparam("b_origin")), moved)


def _insert_matches(conn: Connection, accepted: list[MatchEntry], now: int) -> None:
    if not accepted:
        return
    if conn.dialect.name == "postgresql":
        _pg_insert_matches(conn, accepted, now)
        return
    names = sorted({name for e in accepted for name in e.players})
    conn.execute(upsert(conn, m.players).on_conflict_do_nothing(), [{"name": n} for n in names])
    ids: dict[str, int] = dict(rows(conn, select(m.players.c.name, m.players.c.id).where(m.players.c.name.in_(names))))
    progress = Progress()
    conn.execute(
        m.matches.insert(),
        [
            {
                "id": e.match_id,
                "game": e.game,
                "options": e.options,
                "created_unix_ms": e.created_unix_ms,
                "lot": e.lot,
                "partition": e.partition,
                "status": progress.status,
                "void_reason": progress.void_reason,
                "deadline_unix_ms": progress.deadline_unix_ms,
                "clock_running": progress.clock_running,
                "updated_unix_ms": now,
            }
            for e in accepted
        ],
    )
    conn.execute(
        m.seats.insert(),
        [
            {"match_id": e.match_id, "seat": seat, "player_id": ids[name], "token_sha256": e.token_sha256[seat]}
            for e in accepted
            for seat, name in enumerate(e.players)
        ],
    )


def _pg_insert_matches(conn: Connection, accepted: list[MatchEntry], now: int) -> None:
    """`_insert_matches` on PostgreSQL in three statements to the driver, their rows as JSON texts (as
    `_PG_APPEND`): SQLAlchemy's executemany processed every row's parameters in Python, and a worker's
    writer thread spent half its GIL samples creating matches (`tablehall bench service --workers 3`)."""
    names = json.dumps(sorted({name for e in accepted for name in e.players}))
    progress = Progress()
    matches = [
        (e.match_id, e.game, json.dumps(e.options), e.created_unix_ms, e.lot, e.partition, progress.status,
         progress.void_reason, progress.deadline_unix_ms, progress.clock_running, now)
        for e in accepted
    ]  # fmt: skip
    with _driver_cursor(conn) as cursor:
        cursor.execute(_PG_PLAYERS, {"names": names})
        cursor.execute(_PG_PLAYER_IDS, {"names": names})
        ids: dict[str, int] = dict(cursor.fetchall())
        seats = [
            (e.match_id, seat, ids[name], e.token_sha256[seat].hex())
            for e in accepted
            for seat, name in enumerate(e.players)
        ]
        cursor.execute(_PG_MATCHES_AND_SEATS, {"matches": json.dumps(matches), "seats": json.dumps(seats)})


_PG_PLAYERS = (
    "INSERT INTO players (name) SELECT json_array_elements_text(CAST(%(names)s AS json)) ON CONFLICT DO NOTHING"
)
_PG_PLAYER_IDS = (
    "SELECT name, id FROM players WHERE name = ANY(ARRAY(SELECT json_array_elements_text(CAST(%(names)s AS json))))"
)
_PG_MATCHES_AND_SEATS = (  # the seats' foreign key is checked at the statement's end, after both inserts
    "WITH made AS (INSERT INTO matches (id, game, options, created_unix_ms, lot, partition, status, void_reason, "
    "deadline_unix_ms, clock_running, updated_unix_ms) "
    "SELECT r->>0, r->>1, (r->>2)::json, (r->>3)::bigint, (r->>4)::int, (r->>5)::int, r->>6, r->>7, "
    "(r->>8)::bigint, (r->>9)::boolean, (r->>10)::bigint FROM json_array_elements(CAST(%(matches)s AS json)) AS r) "
    "INSERT INTO seats (match_id, seat, player_id, token_sha256) "
    "SELECT r->>0, (r->>1)::int, (r->>2)::int, decode(r->>3, 'hex') "
    "FROM json_array_elements(CAST(%(seats)s AS json)) AS r"
)


def _appends(
    conn: Connection,
    appends: list[tuple[int, AppendOp]],
    out: list[object],
    now: int,
    newest: dict[str, int | None],
) -> None:
    if not appends:
        return
    last = dict(newest)
    inserts: list[tuple[Any, ...]] = []
    progress: dict[str, Progress] = {}
    for i, op in appends:
        if op.match_id not in last:
            out[i] = KeyError(op.match_id)
            continue
        before = last[op.match_id]
        for e in op.entries:
            if before is not None and before >= e.seq:
                out[i] = ValueError(f"match {op.match_id}: seq {e.seq} after {before}")
                break
            before = e.seq
        else:
            last[op.match_id] = before
            progress[op.match_id] = op.progress
            inserts.extend(log_rows(op, now))
    if not inserts:
        return
    updates = progress_rows(progress)
    if conn.dialect.name == "postgresql":
        _pg_appends(conn, inserts, updates, now)
        return
    cursor = _driver_cursor(conn)  # each statement takes many rows: few steps a batch (`_sqlite_epochs_and_newest`)
    for chunk in _chunks(inserts, _ROWS):
        cursor.execute(_rows_sql(_SQLITE_INSERT_EVENTS_INTO, len(chunk), 9), [v for row in chunk for v in row])
    if sqlite3.sqlite_version_info >= (3, 33):
        for chunk in _chunks(updates, _ROWS):
            values = [now, *(v for row in chunk for v in row)]
            cursor.execute(_rows_sql(_SQLITE_UPDATE_MATCHES_FROM, len(chunk), 5), values)
    else:  # no UPDATE ... FROM before SQLite 3.33: a statement a match
        cursor.executemany(_SQLITE_UPDATE_MATCH, [(*row[1:], now, row[0]) for row in updates])
    cursor.close()


def log_rows(op: AppendOp, now: int) -> list[tuple[Any, ...]]:
    """An append's log rows in the `events` columns' order (`PG_LOG_ROWS`, SQLite's INSERT), the action as its
    JSON text."""
    return [
        (op.match_id, e.seq, e.change, e.kind, e.seat, json.dumps(e.action), e.t_ms, now, op.epoch)
        for e in op.entries
    ]


def progress_rows(progress: dict[str, Progress]) -> list[tuple[Any, ...]]:
    """Each match's progress as a row (`PG_PROGRESS`): id, status, void reason, deadline, clock running."""
    return [(m, p.status, p.void_reason, p.deadline_unix_ms, p.clock_running) for m, p in progress.items()]


def _driver_cursor(conn: Connection) -> Any:
    """A cursor of the driver itself, in the transaction `conn` has open: the log's writes are plain
    statements whose values go to the driver as they are, without SQLAlchemy's work per statement and row
    (the writer thread holds the GIL for that work, and the event loop waits for it)."""
    return conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]


# SQLite: the log's writes as the driver's own statements (JSON as `json.dumps` writes it, as SQLAlchemy did).
_SQLITE_EPOCHS = "SELECT partition, epoch, owner FROM partitions WHERE partition IN ({marks})"
_SQLITE_FENCE = (
    "SELECT (SELECT json_group_array(json_array(partition, epoch, owner)) FROM partitions "
    "WHERE partition IN ({marks})), "
    "(SELECT json_group_array(json_array(m.id, (SELECT max(e.seq) FROM events e WHERE e.match_id = m.id))) "
    "FROM matches m WHERE m.id IN ({ids}))"
)
_SQLITE_INSERT_EVENTS_INTO = (
    "INSERT INTO events (match_id, seq, change, kind, seat, action, t_ms, written_unix_ms, epoch) VALUES {rows}"
)
_SQLITE_UPDATE_MATCHES_FROM = (
    "UPDATE matches SET status = v.column2, void_reason = v.column3, deadline_unix_ms = v.column4, "
    "clock_running = v.column5, updated_unix_ms = ? FROM (VALUES {rows}) AS v WHERE matches.id = v.column1"
)
_SQLITE_UPDATE_MATCH = (
    "UPDATE matches SET status = ?, void_reason = ?, deadline_unix_ms = ?, clock_running = ?, updated_unix_ms = ? "
    "WHERE id = ?"
)
_ROWS = 500
"""Rows per statement at most (nine values a log row: far under SQLite's 32,766 values a statement)."""


def _rows_sql(template: str, rows: int, columns: int) -> str:
    """`template` with `rows` rows of `columns` placeholders (the driver keeps each distinct text prepared)."""
    row = "(" + ", ".join("?" * columns) + ")"
    return template.format(rows=", ".join([row] * rows))


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]

# PostgreSQL: what every batch reads, as text statements (no statement to build and compile per batch); the
# two every batch of appends runs go to the driver itself (`_driver_cursor`), in its placeholders.
_PG_EPOCHS_FOR_SHARE = text(
    "SELECT partition, epoch, owner FROM partitions "
    "WHERE partition = ANY(ARRAY(SELECT json_array_elements_text(CAST(:partitions AS json))::int)) "
    "ORDER BY partition FOR SHARE"
)
_PG_EPOCHS_AND_NEWEST = (  # its two lists as JSON texts, as `_PG_APPEND`'s rows
    "WITH fence AS (SELECT partition, epoch, owner FROM partitions "
    "WHERE partition = ANY(ARRAY(SELECT json_array_elements_text(CAST(%(partitions)s AS json))::int)) "
    "ORDER BY partition FOR SHARE) "
    "SELECT partition, epoch, owner, NULL, NULL FROM fence "
    "UNION ALL SELECT NULL, NULL, NULL, m.id, (SELECT max(e.seq) FROM events e WHERE e.match_id = m.id) "
    "FROM matches m WHERE m.id = ANY(ARRAY(SELECT json_array_elements_text(CAST(%(ids)s AS json))))"
)
# PostgreSQL: a whole batch's log rows and progress rows in one statement (one round trip), each sent as one
# JSON text (`json.dumps`, in C) and taken apart by the server: executemany would send a statement per row,
# which cost the writer more than the commit, and columns sent as arrays were dumped element by element in
# Python by the driver (a twentieth of a worker's `py-spy --gil` samples under `tablehall bench service
# --workers 3`, its writer thread a sixth in all; 6 % since).
PG_LOG_ROWS = (  # a batch's log rows (`log_rows`) from one JSON text
    "INSERT INTO events (match_id, seq, change, kind, seat, action, t_ms, written_unix_ms, epoch) "
    "SELECT r->>0, (r->>1)::int, (r->>2)::int, r->>3, (r->>4)::int, (r->>5)::json, (r->>6)::bigint, "
    "(r->>7)::bigint, (r->>8)::bigint FROM json_array_elements(CAST(%(rows)s AS json)) AS r"
)
PG_PROGRESS = (  # each match's progress (`progress_rows`) from one JSON text
    "UPDATE matches SET status = p->>1, void_reason = p->>2, deadline_unix_ms = (p->>3)::bigint, "
    "clock_running = (p->>4)::boolean, updated_unix_ms = %(now)s "
    "FROM json_array_elements(CAST(%(progress)s AS json)) AS p WHERE matches.id = p->>0"
)
_PG_APPEND = f"WITH logged AS ({PG_LOG_ROWS}) {PG_PROGRESS}"


def _pg_appends(conn: Connection, inserts: list[tuple[Any, ...]], updates: list[tuple[Any, ...]], now: int) -> None:
    """`inserts`: the events' rows in `_appends`' column order (the action as its JSON text); `updates`: each
    match's progress (id, status, void reason, deadline, clock running)."""
    with _driver_cursor(conn) as cursor:
        cursor.execute(_PG_APPEND, {"rows": json.dumps(inserts), "progress": json.dumps(updates), "now": now})


def _snapshots(conn: Connection, snaps: list[tuple[int, SnapshotOp]], out: list[object], now: int) -> None:
    existing = _existing(conn, {op.match_id for _, op in snaps})
    latest: dict[str, Snapshot] = {}
    for i, op in snaps:
        if op.match_id in existing:
            latest[op.match_id] = op.snapshot  # a later one of the same batch overwrites, as in order
        else:
            out[i] = KeyError(op.match_id)
    if not latest:
        return
    conn.execute(
        _snapshot_upsert(conn.dialect.name),
        [{"match_id": k, "seq": s.seq, "blob": s.blob, "written_unix_ms": now} for k, s in latest.items()],
    )


@functools.cache
def _snapshot_upsert(dialect: str) -> Any:
    """Built once per dialect: building a statement costs more than running it."""
    stmt = _dialect_insert(dialect, m.snapshots)
    return stmt.on_conflict_do_update(
        index_elements=[m.snapshots.c.match_id],
        set_={"seq": stmt.excluded.seq, "blob": stmt.excluded.blob, "written_unix_ms": stmt.excluded.written_unix_ms},
    )


@functools.cache
def _heartbeat_upsert(dialect: str) -> Any:
    """Built once per dialect: building a statement costs more than running it."""
    stmt = _dialect_insert(dialect, m.workers)
    return stmt.on_conflict_do_update(
        index_elements=[m.workers.c.owner], set_={"heartbeat_unix_ms": stmt.excluded.heartbeat_unix_ms}
    )


def _heartbeats(conn: Connection, beats: list[HeartbeatOp]) -> None:
    latest = {op.owner: op.at_unix_ms for op in beats}
    if not latest:
        return
    values = [{"owner": k, "heartbeat_unix_ms": v} for k, v in latest.items()]
    conn.execute(_heartbeat_upsert(conn.dialect.name), values)
