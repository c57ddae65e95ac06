"""Reads: a match's log, the last heartbeat, recovery's bulk load of unfinished matches, one match.

`unfinished` is a fixed number of queries whatever the number of matches (matches, seats with player
names, snapshots, the events after each snapshot), each selecting by (partition, status) through the
`ix_matches_partition_status` index and joined back by match id.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, or_, select

from workers.sql import models as m
from workers.sql.models import rows
from workers.storage import LogEntry, MatchEntry, Progress, Snapshot, Stored

IN_PROGRESS = "in_progress"


def _entry(row: Any) -> LogEntry:
    seq, change, kind, seat, action, t_ms = row
    return LogEntry(seq, change, kind, seat, action, t_ms)


def _log_columns() -> tuple[Any, ...]:
    ev = m.events
    return (ev.c.seq, ev.c.change, ev.c.kind, ev.c.seat, ev.c.action, ev.c.t_ms)


def log(conn: Connection, match_id: str) -> list[LogEntry]:
    ev = m.events
    query = select(*_log_columns()).where(ev.c.match_id == match_id).order_by(ev.c.seq)
    return [_entry(row) for row in rows(conn, query)]


def last_heartbeat(conn: Connection, partitions: list[int]) -> int | None:
    if not partitions:
        return None
    p, w = m.partitions, m.workers
    query = (
        select(func.max(w.c.heartbeat_unix_ms))
        .select_from(p.join(w, w.c.owner == p.c.owner))
        .where(p.c.partition.in_(set(partitions)))
    )
    value = conn.execute(query).scalar()
    return None if value is None else int(value)


def unfinished(conn: Connection, partitions: list[int]) -> list[Stored]:
    if not partitions:
        return []
    return stored(conn, Selection.UNFINISHED, sorted(set(partitions)))


def load(conn: Connection, match_id: str) -> Stored | None:
    """One match whatever its status (an ended match read on demand); None if there is none."""
    found = stored(conn, Selection.ONE, match_id)
    return found[0] if found else None


class Selection(Enum):
    """Which matches `stored` reads; each value is the name of the parameter it takes."""

    ONE = "id"
    """One match by its id, whatever its status."""
    UNFINISHED = "partitions"
    """The unfinished matches of some partitions (recovery)."""
    ENDED_AMONG = "ids"
    """Those of some matches that ended (ratings, records, tournaments)."""


ENDED = ("finished", "voided")


def _wanted(selection: Selection) -> Any:
    t = m.matches
    if selection is Selection.ONE:
        return t.c.id == bindparam("id")
    if selection is Selection.UNFINISHED:
        return and_(t.c.partition.in_(bindparam("partitions", expanding=True)), t.c.status == IN_PROGRESS)
    return and_(t.c.id.in_(bindparam("ids", expanding=True)), t.c.status.in_(ENDED))


@dataclass(frozen=True, slots=True)
class _Queries:
    """`stored`'s statements for one selection."""

    seats: Any
    snapshots: Any
    events: Any
    matches: Any


@functools.cache
def _queries(selection: Selection) -> _Queries:
    """`stored`'s four statements for one selection, built once (building them cost more than running them:
    a rating, which reads one ended match, spent a sixth of its time building statements)."""
    t, s, pl, sn, ev = m.matches, m.seats, m.players, m.snapshots, m.events
    wanted = _wanted(selection)
    seated = s.join(t, t.c.id == s.c.match_id).join(pl, pl.c.id == s.c.player_id)
    snapshot = sn.join(t, t.c.id == sn.c.match_id)
    after_snapshot = ev.join(t, t.c.id == ev.c.match_id).outerjoin(sn, sn.c.match_id == ev.c.match_id)
    match_columns = (
        t.c.id, t.c.game, t.c.options, t.c.created_unix_ms, t.c.lot, t.c.partition,
        t.c.status, t.c.void_reason, t.c.deadline_unix_ms, t.c.clock_running,
    )  # fmt: skip
    return _Queries(
        seats=select(s.c.match_id, s.c.seat, pl.c.name, s.c.token_sha256).select_from(seated).where(wanted),
        snapshots=select(sn.c.match_id, sn.c.seq, sn.c.blob).select_from(snapshot).where(wanted),
        events=select(ev.c.match_id, *_log_columns())
        .select_from(after_snapshot)
        .where(wanted, or_(sn.c.seq.is_(None), ev.c.seq > sn.c.seq))
        .order_by(ev.c.match_id, ev.c.seq),
        matches=select(*match_columns).where(wanted).order_by(t.c.created_unix_ms, t.c.id),
    )


def stored(conn: Connection, selection: Selection, among: Any) -> list[Stored]:
    """The matches of `selection` (`among`: the id, partitions or ids it takes), each with its snapshot and
    later log; each statement's rows taken in one fetch."""
    queries, params = _queries(selection), {selection.value: among}
    seats: dict[str, list[tuple[int, str, bytes]]] = defaultdict(list)
    found_seats: Any = conn.execute(queries.seats, params).all()
    for match_id, seat, name, token in found_seats:
        seats[match_id].append((seat, name, bytes(token)))

    snaps: dict[str, Snapshot] = {}
    older: list[str] = []
    found_snapshots: Any = conn.execute(queries.snapshots, params).all()
    for match_id, seq, blob in found_snapshots:
        snaps[match_id] = snapshot = Snapshot(seq, bytes(blob))
        if not snapshot.current:
            older.append(match_id)  # written by an older worker's code: its whole log instead

    logs: dict[str, list[LogEntry]] = defaultdict(list)
    found_events: Any = conn.execute(queries.events, params).all()
    for row in found_events:
        logs[row[0]].append(_entry(row[1:]))
    for match_id in older:
        del snaps[match_id]
        logs[match_id] = log(conn, match_id)

    found = []
    found_matches: Any = conn.execute(queries.matches, params).all()
    for match_id, game, options, created, lot, partition, status, reason, deadline, clock in found_matches:
        ordered = sorted(seats[match_id])
        entry = MatchEntry(
            match_id,
            game,
            tuple(name for _, name, _ in ordered),
            options,
            tuple(token for _, _, token in ordered),
            created,
            lot,
            partition,
        )
        progress = Progress(status, reason, deadline, bool(clock))
        found.append(Stored(entry, snaps.get(match_id), tuple(logs[match_id]), progress))
    return found
