"""PostgreSQL: a batch of appends as one autocommitted statement, one round trip instead of four.

The transaction `writes.apply` runs costs BEGIN, the fence's read, the append and COMMIT: four round trips,
each a wake-up of the writer and of its server process. Nearly every batch is appends that all pass (their
partitions still at their epochs, each match's seqs after its newest), so this statement checks exactly
that and writes all of them, or (any check failing) writes nothing and says so: the batch then goes the
transactional way, which tells each op its own refusal. The partitions' rows are locked `FOR SHARE` in
partition order, as the transaction does, so a claim and this statement wait for each other the same way,
and a statement that waited for a claim reads the claim's epoch and writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from psycopg.pq import TransactionStatus

from workers.sql.batching import Op
from workers.sql.writes import PG_LOG_ROWS, PG_PROGRESS, AppendOp, log_rows, now_ms, progress_rows


def appends_only(ops: Sequence[Op]) -> list[AppendOp] | None:
    """The ops as appends when every one is, and each match's seqs rise through the batch (else None)."""
    appends: list[AppendOp] = []
    last: dict[str, int] = {}
    for op in ops:
        if not isinstance(op, AppendOp) or not op.entries:
            return None
        before = last.get(op.match_id, -1)
        for entry in op.entries:
            if before >= entry.seq:
                return None
            before = entry.seq
        last[op.match_id] = before
        appends.append(op)
    return appends or None


def append_at_once(dbapi_connection: Any, appends: Sequence[AppendOp]) -> bool:
    """Write these appends in one autocommitted statement if all of them pass; False: nothing was written
    (nor tried, on a connection with a transaction open). It is left as it was found, not in autocommit."""
    if dbapi_connection.info.transaction_status != _IDLE:
        return False
    now = now_ms()
    rows = [row for op in appends for row in log_rows(op, now)]
    progress = {op.match_id: op.progress for op in appends}  # each match's last, as in queue order
    firsts: dict[str, int] = {}
    for op in appends:
        firsts.setdefault(op.match_id, op.entries[0].seq)
    values = {
        "partitions": json.dumps(sorted({op.partition for op in appends})),
        "epochs": json.dumps(sorted({(op.partition, op.epoch) for op in appends})),
        "firsts": json.dumps(list(firsts.items())),
        "rows": json.dumps(rows),
        "progress": json.dumps(progress_rows(progress)),
        "now": now,
    }
    dbapi_connection.autocommit = True
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(_AT_ONCE, values)
            (written,) = cursor.fetchone()
    finally:
        if not dbapi_connection.closed:
            dbapi_connection.autocommit = False
    return bool(written)


_IDLE = TransactionStatus.IDLE
_AT_ONCE = (  # the lists as JSON texts; the rows and progress written as `writes._PG_APPEND` writes them
    "WITH fence AS (SELECT partition, epoch FROM partitions "
    "WHERE partition = ANY(ARRAY(SELECT json_array_elements_text(CAST(%(partitions)s AS json))::int)) "
    "ORDER BY partition FOR SHARE), "
    "wanted AS (SELECT (w->>0)::int AS partition, (w->>1)::bigint AS epoch "
    "FROM json_array_elements(CAST(%(epochs)s AS json)) AS w), "
    "firsts AS (SELECT f->>0 AS id, (f->>1)::int AS seq FROM json_array_elements(CAST(%(firsts)s AS json)) AS f), "
    "passed AS (SELECT NOT EXISTS (SELECT 1 FROM wanted w LEFT JOIN fence f ON f.partition = w.partition "
    "WHERE COALESCE(f.epoch, 0) <> w.epoch) "  # a partition with no row yet is at epoch 0, as `writes._fence` reads it
    "AND NOT EXISTS (SELECT 1 FROM firsts f LEFT JOIN matches m ON m.id = f.id "
    "WHERE m.id IS NULL OR (SELECT max(e.seq) FROM events e WHERE e.match_id = f.id) >= f.seq) AS yes), "
    f"logged AS ({PG_LOG_ROWS} WHERE (SELECT yes FROM passed)), "
    f"progressed AS ({PG_PROGRESS} AND (SELECT yes FROM passed)) "
    "SELECT yes FROM passed"
)
