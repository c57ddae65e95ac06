"""PostgreSQL: a batch of appends that all pass is one autocommitted statement; any that would be refused
sends the whole batch the transactional way, which refuses that op alone (workers/sql/pg_at_once.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from tests.storage_backends import postgres_database, run
from tests.test_storage_contract import RUNNING, match, step
from workers.sql import SqlStorage
from workers.sql.log_writer import LogWriter, writing_engine
from workers.sql.pg_at_once import append_at_once, appends_only
from workers.sql.writes import AppendOp, ClaimOp, CreateOp, SnapshotOp
from workers.storage import FencedOut, Progress, Snapshot

P = 7
DONE = Progress("finished")


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_database() as found:
        SqlStorage(found)  # migrated to head
        yield found


def writer_with(url: str, *ids: str) -> tuple[LogWriter, int]:
    """A log writer on `url` that claimed partition P and created these matches; and P's epoch."""
    writer = LogWriter(writing_engine(url))
    [epoch] = writer.apply([ClaimOp("w0", [P])])
    assert isinstance(epoch, dict)
    assert writer.apply([CreateOp(match(i), epoch[P]) for i in ids]) == [None] * len(ids)
    return writer, epoch[P]


def append(match_id: str, epoch: int, *seqs: int, progress: Progress = RUNNING) -> AppendOp:
    return AppendOp(match_id, P, epoch, tuple(step(s) for s in seqs), progress)


def logged(url: str) -> list[tuple[Any, ...]]:
    writer = writing_engine(url)
    with writer.connect() as conn:
        rows = conn.execute(text("SELECT match_id, seq FROM events ORDER BY match_id, seq")).all()
    writer.dispose()
    return [tuple(row) for row in rows]


def status(url: str, match_id: str) -> str:
    writer = writing_engine(url)
    with writer.connect() as conn:
        found = conn.execute(text("SELECT status FROM matches WHERE id = :id"), {"id": match_id}).scalar_one()
    writer.dispose()
    return str(found)


def test_appends_that_all_pass_go_as_one_statement_and_leave_the_connection_as_it_was(url: str) -> None:
    writer, epoch = writer_with(url, "m1", "m2")
    ops = [append("m1", epoch, 1), append("m2", epoch, 1, 2), append("m1", epoch, 2, 3, progress=DONE)]
    assert writer.apply(ops) == [None, None, None]
    assert writer.at_once == 1
    assert logged(url) == [("m1", 1), ("m1", 2), ("m1", 3), ("m2", 1), ("m2", 2)]
    assert status(url, "m1") == "finished"  # the last progress of a match in the batch
    raw = writer._held.connection.dbapi_connection  # type: ignore[union-attr]
    assert (raw.autocommit, raw.info.transaction_status) == (False, psycopg.pq.TransactionStatus.IDLE)
    assert writer.apply([SnapshotOp("m1", P, epoch, Snapshot(3, b"s"))]) == [None]  # a transaction as before
    writer.close()


@pytest.mark.parametrize("refused", ["fenced", "seq taken", "unknown match"])
def test_one_refusal_sends_the_batch_the_transactional_way_which_refuses_that_op_alone(url: str, refused: str) -> None:
    writer, epoch = writer_with(url, "m1", "m2")
    assert writer.apply([append("m1", epoch, 1)]) == [None]
    bad = {
        "fenced": append("m2", epoch + 1, 1),
        "seq taken": append("m1", epoch, 1),
        "unknown match": append("m9", epoch, 1),
    }[refused]
    raw = writer._held.connection.dbapi_connection  # type: ignore[union-attr]
    assert not append_at_once(raw, [append("m2", epoch, 1), bad])  # nothing written, not even m2's
    assert logged(url) == [("m1", 1)]
    outcomes = writer.apply([append("m2", epoch, 1), bad, append("m1", epoch, 2)])
    assert writer.at_once == 1  # only the first batch
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], {"fenced": FencedOut, "seq taken": ValueError, "unknown match": KeyError}[refused])
    assert logged(url) == [("m1", 1), ("m1", 2), ("m2", 1)]
    writer.close()


def test_a_statement_that_waited_for_a_claim_reads_its_epoch_and_writes_nothing(url: str) -> None:
    writer, epoch = writer_with(url, "m1")
    dsn = url.replace("postgresql+psycopg", "postgresql")
    claimant = psycopg.connect(dsn)
    claimant.execute("UPDATE partitions SET epoch = epoch + 1, owner = 'w1' WHERE partition = %s", (P,))
    found: list[object] = []
    raw = writer._held.connection.dbapi_connection  # type: ignore[union-attr]
    waiting = threading.Thread(target=lambda: found.append(append_at_once(raw, [append("m1", epoch, 1)])))
    waiting.start()
    waits_for_lock(claimant, raw.info.backend_pid)  # the partition's row is the claim's: the statement waits
    claimant.commit()
    waiting.join(10)
    assert found == [False]
    assert logged(url) == []
    claimant.close()
    writer.close()


def test_a_partition_never_claimed_is_at_epoch_0_as_the_transaction_reads_it(url: str) -> None:
    writer = LogWriter(writing_engine(url))
    assert writer.apply([CreateOp(match("m1", partition=P), 0)]) == [None]
    assert writer.apply([append("m1", 0, 1)]) == [None]
    assert writer.at_once == 1
    assert isinstance(writer.apply([append("m1", 1, 2)])[0], FencedOut)
    assert logged(url) == [("m1", 1)]
    writer.close()


def waits_for_lock(observer: psycopg.Connection[Any], pid: int) -> None:
    """Until the server says the backend `pid` waits for a lock (a readiness signal, polled; not a sleep)."""
    deadline = time.monotonic() + 10
    with psycopg.connect(observer.info.dsn, autocommit=True) as watching:
        while time.monotonic() < deadline:
            row = watching.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
            if row is not None and row[0] == "Lock":
                return
    pytest.fail(f"backend {pid} never waited for the claim's lock")


def test_which_batches_can_go_at_once() -> None:
    a1, a2 = append("m1", 1, 1, 2), append("m1", 1, 3)
    assert appends_only([a1, a2]) == [a1, a2]
    assert appends_only([a2, a1]) is None  # a match's seqs falling through the batch
    assert appends_only([append("m1", 1, 2, 2)]) is None
    assert appends_only([a1, SnapshotOp("m1", P, 1, Snapshot(2, b""))]) is None
    assert appends_only([]) is None


def test_the_storage_writes_concurrent_appends_through_it(url: str) -> None:
    async def body() -> None:
        s = SqlStorage(url)
        epoch = (await s.claim("w0", [P]))[P]
        for i in range(5):
            await s.create(match(f"m{i}"), epoch)
        assert s._log_writer is not None
        batches, at_once = s.stats.batches, s._log_writer.at_once
        for seq in range(1, 4):
            await asyncio.gather(*(s.append_all(f"m{i}", P, epoch, [step(seq)], RUNNING) for i in range(5)))
        assert s._log_writer.at_once - at_once == s.stats.batches - batches >= 3  # every batch of them
        assert [e.seq for e in await s.log("m4")] == [1, 2, 3]
        await s.close()

    run(body)
