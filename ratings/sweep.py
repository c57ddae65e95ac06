"""Timeout sweeps: matches whose deadline passed without a verdict, and abandoned tables.

`due` finds them through the `ix_matches_status_deadline` index only: overdue deadlines are a range of
(status = in_progress, deadline_unix_ms < now − grace); abandoned tables are looked for among the
in-progress rows alone (the same index's status prefix), never among the finished ones.

Each one is settled through its owner (the worker's `MatchSweeps.Settle`: its timer runs the deadline,
which settles it, or voids it `timer_late` past the tolerance, as the actor decides; an abandoned table
is voided `abandoned`). When the owner cannot be reached (down, not serving the match), the sweep
voids it itself — `owner_unreachable` for a deadline, `abandoned` for a table — by appending a `void`
step to the match's log with its partition's current epoch, through the same fenced write the workers
use (`workers.sql.writes`), so a racing owner and a second sweep cannot both write: the log's
(match_id, seq) key lets one step in. A match no longer in progress is never touched, so a sweep run
twice changes nothing more.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine, and_, func, select

from ratings import settings
from workers import metrics
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID
from workers.sql import models as m
from workers.sql import writes
from workers.sql.engine import reading
from workers.sql.models import rows
from workers.storage import LogEntry, Progress
from workers.voids import VoidReason

log = logging.getLogger("tablehall.sweep")

OWNER_UNREACHABLE = VoidReason.OWNER_UNREACHABLE.value
ABANDONED = VoidReason.ABANDONED.value
IN_PROGRESS = "in_progress"
LIMIT = 1000
"""Matches handled per sweep at most (the next sweep takes the rest)."""


@dataclass(frozen=True, slots=True)
class Due:
    match_id: str
    partition: int
    abandon: str = ""
    """Empty: an overdue deadline. Otherwise why the table is abandoned (never_started or idle)."""


@dataclass
class Report:
    found: int = 0
    settled: int = 0
    """Settled by a live owner (a verdict, or its own void)."""
    voided: dict[str, int] = field(default_factory=dict)
    """Voided by the sweep itself, by reason."""
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {"found": self.found, "settled": self.settled, "voided": self.voided, "seconds": self.seconds}


Settle = Callable[[Due], Awaitable[bool]]
"""Ask the owner to settle (or close) the match: True if it answered, False if it could not be reached."""


def due(
    engine: Engine,
    now: int,
    grace_ms: int | None = None,
    continue_ms: int | None = None,
    idle_ms: int | None = None,
    limit: int = LIMIT,
) -> list[Due]:
    grace = settings.grace_ms() if grace_ms is None else grace_ms
    never = settings.continue_ms() if continue_ms is None else continue_ms
    idle = settings.idle_ms() if idle_ms is None else idle_ms
    t, ev = m.matches, m.events
    overdue = (
        select(t.c.id, t.c.partition)
        .where(t.c.status == IN_PROGRESS, t.c.deadline_unix_ms < now - grace)
        .order_by(t.c.deadline_unix_ms)
        .limit(limit)
    )
    acted = select(ev.c.seq).where(ev.c.match_id == t.c.id, ev.c.kind == "command").exists()
    never_started = (
        select(t.c.id, t.c.partition)
        .where(t.c.status == IN_PROGRESS, t.c.game == SPECTACULAR_BID, t.c.created_unix_ms < now - never, ~acted)
        .limit(limit)
    )
    idle_tables = (
        select(t.c.id, t.c.partition)
        .where(
            and_(t.c.status == IN_PROGRESS, t.c.deadline_unix_ms.is_(None)),
            t.c.game == FIVE_OH_ONE,
            t.c.updated_unix_ms < now - idle,
        )
        .limit(limit)
    )
    found: dict[str, Due] = {}
    with reading(engine) as conn, conn.begin():
        for match_id, partition in rows(conn, never_started):
            found[match_id] = Due(match_id, partition, "never_started")
        for match_id, partition in rows(conn, idle_tables):
            found.setdefault(match_id, Due(match_id, partition, "idle"))
        for match_id, partition in rows(conn, overdue):
            found.setdefault(match_id, Due(match_id, partition))
    return list(found.values())


def void_in_log(engine: Engine, match_id: str, reason: str, now: int) -> bool:
    """Append a `void` step with the partition's current epoch, as the owner would; False if the match
    is no longer in progress (or someone else wrote its next step first)."""
    t, ev, p = m.matches, m.events, m.partitions
    with engine.connect() as conn, conn.begin():
        found = rows(conn, select(t.c.status, t.c.partition, t.c.created_unix_ms).where(t.c.id == match_id))
        if not found or found[0][0] != IN_PROGRESS:
            return False
        _, partition, created = found[0]
        ((seq, change, last_t),) = rows(
            conn,
            select(func.max(ev.c.seq), func.max(ev.c.change), func.max(ev.c.t_ms)).where(ev.c.match_id == match_id),
        )
        epoch = conn.execute(select(p.c.epoch).where(p.c.partition == partition)).scalar()
        at = max(int(last_t or 0), now - int(created))
        entry = LogEntry(int(seq or 0) + 1, int(change or 0) + 1, "void", None, {"reason": reason}, at)
        op = writes.AppendOp(match_id, partition, int(epoch or 0), (entry,), Progress("voided", reason, None, False))
        (outcome,) = writes.apply(conn, [op])
        if isinstance(outcome, BaseException):
            log.info("match %s: not voided by the sweep (%s)", match_id, outcome)
            conn.rollback()
            return False
    log.warning("match %s voided by the sweep: %s", match_id, reason)
    return True


async def sweep_once(engine: Engine, settle: Settle, now: int | None = None, limit: int = LIMIT) -> Report:
    """One sweep: find what is due, settle each through its owner or void it. Idempotent."""
    start = time.perf_counter()
    at = time.time_ns() // 1_000_000 if now is None else now
    report = Report()
    for item in await asyncio.to_thread(due, engine, at, None, None, None, limit):
        report.found += 1
        try:
            answered = await settle(item)
        except Exception as error:  # the owner answered with an error: not serving the match
            log.info("match %s: its owner could not settle it (%s)", item.match_id, error)
            answered = False
        if answered:
            report.settled += 1
            metrics.SWEPT.labels("settled").inc()
            continue
        reason = ABANDONED if item.abandon else OWNER_UNREACHABLE
        if await asyncio.to_thread(void_in_log, engine, item.match_id, reason, time.time_ns() // 1_000_000):
            report.voided[reason] = report.voided.get(reason, 0) + 1
            metrics.SWEPT.labels(reason).inc()
            metrics.VOIDED.labels(reason).inc()
            if reason == OWNER_UNREACHABLE:
                metrics.FAULTS.labels("owner_unreachable").inc()
    report.seconds = time.perf_counter() - start
    metrics.SWEEPS.inc()
    return report
