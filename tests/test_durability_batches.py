"""A command and the deal it calls for are one commit (`Storage.append_all`): a process killed with -9 in
the middle of a batch leaves every group of entries whole or absent, never half of one, and loses none
it acknowledged. A real writing process (tests/batch_writer.py) on a real database file (or PostgreSQL):
it stops inside a batch's transaction, its rows written, and the test kills it there."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.batch_writer import heard
from tests.durability import DB_BACKENDS, REPO, database
from tests.processes import stop_process
from workers.sql import SqlStorage

MATCHES = 20
GROUP = 3
HOLD_AFTER = 60
"""Groups acknowledged before the writer stops inside the next batch."""
BOUND_S = 120.0
"""Seconds the test waits for the writer to hold a batch at most (it takes about one)."""


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    with database(request.param, tmp_path) as url:
        yield url


def killed_mid_batch(url: str) -> tuple[dict[str, int], dict[str, int]]:
    """Run the writer until it holds a batch uncommitted, kill -9 it there. Per match: the newest seq it
    acknowledged, and the newest seq of its held (never committed) batch."""
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.batch_writer", url, "--matches", str(MATCHES), "--group", str(GROUP),
         "--hold-after", str(HOLD_AFTER)],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    acked: dict[str, int] = {}
    held: dict[str, int] = {}
    bound = threading.Timer(BOUND_S, writer.kill)  # a writer that never holds ends the reading, not the run
    bound.start()
    try:
        assert writer.stdout is not None
        for word, rest in heard(writer.stdout, acked):
            if word == "held":
                held = {match_id: int(seq) for match_id, seq in (part.split(":") for part in rest)}
                break
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(10) == -signal.SIGKILL
    finally:
        bound.cancel()
        stop_process(writer)
    assert held, "the writer never held a batch: nothing was tested"
    return dict(acked), held


def test_kill_9_mid_batch_leaves_each_group_whole_or_absent(db_url: str) -> None:
    acked, held = killed_mid_batch(db_url)
    assert sum(seq // GROUP for seq in acked.values()) >= HOLD_AFTER

    for match_id, seqs in _whole_and_kept(db_url, acked).items():
        if match_id in held:
            assert len(seqs) < held[match_id], f"{match_id}: the batch killed before its commit is visible"


def test_kill_9_with_a_statement_in_flight_leaves_each_group_whole_or_absent(tmp_path: Path) -> None:
    """PostgreSQL's batches of appends are one autocommitted statement (workers/sql/pg_at_once.py): the
    writer is killed -9 while one is in flight (waiting for a lock this test holds on its partition's row),
    then the lock goes. Whatever the server then does with the statement, every group is whole or absent,
    and every acknowledged one is there."""
    import psycopg

    with database("postgresql", tmp_path) as url:
        dsn = url.replace("postgresql+psycopg", "postgresql")
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.batch_writer", url, "--matches", str(MATCHES), "--group", str(GROUP),
             "--hold-after", "0"],
            cwd=REPO, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        acked: dict[str, int] = {}
        bound = threading.Timer(BOUND_S, writer.kill)
        bound.start()
        try:
            assert writer.stdout is not None
            for _ in heard(writer.stdout, acked):
                if sum(seq // GROUP for seq in acked.values()) >= HOLD_AFTER:
                    break
            with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as watching:
                holder.execute("SELECT epoch FROM partitions WHERE partition = 0 FOR UPDATE")
                waiting = _statement_waiting(watching)
                writer.send_signal(signal.SIGKILL)
                assert writer.wait(10) == -signal.SIGKILL
                holder.rollback()  # the statement goes on without its client, or not: either is allowed
                _until_gone(watching, waiting)
        finally:
            bound.cancel()
            stop_process(writer)
        _whole_and_kept(url, acked)


def _statement_waiting(watching: Any) -> int:
    """The server process of the writer's batch statement once it waits for the partition's lock (polled)."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        row = watching.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH fence%'"
        ).fetchone()
        if row is not None:
            return int(row[0])
    pytest.fail("no batch statement ever waited for the partition's lock")


def _until_gone(watching: Any, pid: int) -> None:
    """Until the server process `pid` (whose client was killed) has ended, its statement done or undone."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        if watching.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is None:
            return
    pytest.fail(f"the server process {pid} of the killed writer never ended")


def _whole_and_kept(url: str, acked: dict[str, int]) -> dict[str, list[int]]:
    """Each match's logged seqs, checked: whole groups only, every acknowledged one, the progress row with them."""
    found = {}
    for match_id, (seqs, progress) in asyncio.run(asyncio.wait_for(_logs(url), 60)).items():
        assert seqs == list(range(1, len(seqs) + 1)), match_id
        assert len(seqs) % GROUP == 0, f"{match_id}: a group was committed in part: {seqs[-GROUP:]}"
        assert len(seqs) >= acked.get(match_id, 0), f"{match_id}: an acknowledged group was lost"
        assert progress == (len(seqs) or None), f"{match_id}: the progress row did not move with the log"
        found[match_id] = seqs
    return found


async def _logs(url: str) -> dict[str, tuple[list[int], int | None]]:
    """Per match: the seqs of its log and its progress row's deadline (the newest seq, as the writer puts it)."""
    storage = await SqlStorage.open(url)
    try:
        found = {}
        for i in range(MATCHES):
            match_id = f"b{i:03}"
            stored = await storage.load(match_id)
            assert stored is not None
            found[match_id] = ([e.seq for e in await storage.log(match_id)], stored.progress.deadline_unix_ms)
        return found
    finally:
        await storage.close()
