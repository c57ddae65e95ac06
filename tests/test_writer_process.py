"""The log's writer in a process of its own (workers/sql/writer_process.py), started as a new Python process
(a storage opened outside a serving role), on a real database file and on PostgreSQL: the serving process
killed -9 leaves no writer behind and loses nothing it acknowledged; the writer killed -9 fails only the
writes it held (their outcome unknown), and the next write starts a new one; a caller that gave up before
its op left is never written; ops that come while the writer holds unanswered ones leave together once it
answered (given up meanwhile, never; the writer killed meanwhile, they fail at once) and are committed in
the writer's batches (a claim alone, a fenced-out write failing alone); a frame longer than one
read, and frames cut anywhere between reads, arrive whole. The serving roles' forked writers:
tests/test_writer_fork.py."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from tablehall.processes import children
from tests.batch_writer import heard
from tests.durability import DB_BACKENDS, REPO, database
from tests.processes import stop_process
from tests.writer_processes import BOUND_S, logged, outlived_by_none
from workers.sql import SqlStorage
from workers.sql.writer_process import CHUNK, ProcessCommitter, Reading, WriterGone, frame, frames
from workers.storage import FencedOut, LogEntry, MatchEntry, Progress


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    with database(request.param, tmp_path) as url:
        yield url


def test_serving_process_killed_leaves_no_writer_and_loses_nothing_acknowledged(db_url: str) -> None:
    appender = subprocess.Popen(
        [sys.executable, "-m", "tests.batch_writer", db_url, "--matches", "10", "--group", "2", "--hold-after", "0",
         "--writer", "process"],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    acked: dict[str, int] = {}
    try:
        assert appender.stdout is not None
        for _ in heard(appender.stdout, acked):
            if sum(acked.values()) >= 200:
                break
        writers = children(appender.pid)
        assert writers, "no writer process"
        appender.send_signal(signal.SIGKILL)
        assert appender.wait(10) == -signal.SIGKILL
    finally:
        stop_process(appender)
    outlived_by_none(writers)
    for match_id, seqs in logged(db_url, acked).items():
        assert seqs == list(range(1, len(seqs) + 1)), match_id
        assert len(seqs) >= acked[match_id], f"{match_id}: an acknowledged append was lost"


def _appending(storage: SqlStorage, epoch: int, seq: int) -> asyncio.Future[None]:
    """Append step `seq` of match "m" (a task: the caller decides when to wait, or to give up)."""
    return asyncio.ensure_future(
        storage.append_all("m", 0, epoch, [LogEntry(seq, seq, "command", seq % 2, {"n": seq}, seq)], Progress())
    )


async def _one_match(url: str) -> tuple[SqlStorage, ProcessCommitter, int]:
    """A storage with its writer in a process, holding partition 0 and match "m" in it."""
    storage = await SqlStorage.open(url)
    writer = storage._writer
    assert isinstance(writer, ProcessCommitter)
    epoch = (await storage.claim("w", [0]))[0]
    await storage.create(MatchEntry("m", "spectacular-bid", ("a", "b"), {}, (bytes(32), bytes(32)), 0, 0), epoch)
    return storage, writer, epoch


async def _sent(writer: ProcessCommitter) -> None:
    """Turns of the loop until a frame left for the writer (its ops wait for their answer)."""
    while not writer._waiting:
        await asyncio.sleep(0)


Body = Callable[[SqlStorage, ProcessCommitter, int], Coroutine[Any, Any, None]]


def _with_one_match(url: str, monkeypatch: pytest.MonkeyPatch, body: Body) -> None:
    """Run `body` on `_one_match`'s storage, its writer a new Python process; the storage closed after."""
    monkeypatch.setenv("TABLEHALL_LOG_WRITER", "process")

    async def run() -> None:
        storage, writer, epoch = await _one_match(url)
        try:
            await body(storage, writer, epoch)
        finally:
            await storage.close()

    asyncio.run(asyncio.wait_for(run(), BOUND_S))


def test_writer_killed_fails_only_what_it_held_and_the_next_write_starts_a_new_one(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        seq = 0

        async def append() -> int:
            nonlocal seq
            seq += 1
            await _appending(storage, epoch, seq)
            return seq

        acknowledged = [await append() for _ in range(5)]
        first = writer._child
        assert first is not None
        os.kill(first.pid, signal.SIGKILL)
        await asyncio.to_thread(first.wait, BOUND_S)
        outcomes = []
        for _ in range(3):  # the first may meet the dead writer; a new one takes the next
            try:
                acknowledged.append(await append())
                outcomes.append("ok")
            except WriterGone:
                outcomes.append("gone")
        assert outcomes[-1] == "ok" and outcomes.count("gone") <= 1, outcomes
        assert writer._child is not None and writer._child.pid != first.pid
        logged = [e.seq for e in await storage.log("m")]
        assert set(acknowledged) <= set(logged)

    _with_one_match(db_url, monkeypatch, body)


def test_an_op_given_up_before_it_left_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(storage: SqlStorage, _: ProcessCommitter, epoch: int) -> None:
        kept, given_up = _appending(storage, epoch, 1), _appending(storage, epoch, 2)
        await asyncio.sleep(0)  # both queued in this turn of the loop, not yet sent
        given_up.cancel()
        await kept
        assert [e.seq for e in await storage.log("m")] == [1]

    with database("sqlite", tmp_path) as url:
        _with_one_match(url, monkeypatch, body)


def _writes() -> float:
    return REGISTRY.get_sample_value("tablehall_event_log_writes_total") or 0.0


def test_an_op_given_up_after_it_left_is_committed_and_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As any write whose answer was lost: the caller that gave up does not know, the log does (and the write's
    wait is counted once, as the next one's)."""

    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        writes = _writes()
        given_up = _appending(storage, epoch, 1)
        await _sent(writer)
        given_up.cancel()
        await asyncio.gather(given_up, return_exceptions=True)
        await _appending(storage, epoch, 2)
        assert [e.seq for e in await storage.log("m")] == [1, 2]
        assert not writer._waiting and writer._child is not None
        assert _writes() - writes == 2

    with database("sqlite", tmp_path) as url:
        _with_one_match(url, monkeypatch, body)


def test_ops_that_come_while_the_writer_holds_others_leave_together_once_it_answered(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        first = _appending(storage, epoch, 1)
        await _sent(writer)
        batches = writer.stats.batches
        later = [_appending(storage, epoch, seq) for seq in (2, 3)]
        await asyncio.sleep(0)
        assert writer._waiting and len(writer._outbox) == 2, "held back while the first is with the writer"
        await asyncio.gather(first, *later)
        assert writer.stats.batches == batches + 2 and writer.stats.largest == 2, "the two went as one batch"
        assert [e.seq for e in await storage.log("m")] == [1, 2, 3]

    _with_one_match(db_url, monkeypatch, body)


def test_a_frame_is_committed_in_the_writers_batches_a_claim_alone_a_fenced_write_failing_alone(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ops held back behind a first one leave as one frame; the writer commits them in order, a claim in a
    transaction of its own, and answers each batch; a write fenced out fails alone."""

    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        first = _appending(storage, epoch, 1)
        await _sent(writer)
        batches = writer.stats.batches
        second = _appending(storage, epoch, 2)
        claim = asyncio.ensure_future(storage.claim("other", [5]))
        fenced = _appending(storage, epoch - 1, 3)
        third = _appending(storage, epoch, 3)
        await asyncio.sleep(0)
        assert len(writer._outbox) == 4, "all four held back behind the first"
        await asyncio.gather(first, second, third)
        assert (await claim)[5] >= 1
        with pytest.raises(FencedOut):
            await fenced
        assert writer.stats.batches == batches + 4, "the first; then the append, the claim, the last two"
        assert writer.stats.largest == 2
        assert [e.seq for e in await storage.log("m")] == [1, 2, 3]

    _with_one_match(db_url, monkeypatch, body)


def test_an_op_given_up_while_held_back_is_never_written(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its caller cancels while it waits behind what the writer holds: it never leaves; the one after it does."""

    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        first = _appending(storage, epoch, 1)
        await _sent(writer)
        given_up, kept = _appending(storage, epoch, 2), _appending(storage, epoch, 2)
        await asyncio.sleep(0)
        assert len(writer._outbox) == 2, "both held back behind the first"
        given_up.cancel()
        await asyncio.gather(first, kept)
        assert given_up.cancelled()
        assert [(e.seq, e.change) for e in await storage.log("m")] == [(1, 1), (2, 2)]
        assert not writer._waiting and not writer._outbox

    _with_one_match(db_url, monkeypatch, body)


def test_the_writer_killed_fails_the_ops_held_back_behind_what_it_held(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never sent, they fail at once (not frozen), and the next write starts a new writer."""

    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        await _appending(storage, epoch, 1)
        sent = _appending(storage, epoch, 2)
        await _sent(writer)
        held = _appending(storage, epoch, 3)
        await asyncio.sleep(0)
        assert writer._outbox, "held back behind the op the writer holds"
        child = writer._child
        assert child is not None
        os.kill(child.pid, signal.SIGKILL)
        outcomes = await asyncio.gather(sent, held, return_exceptions=True)
        assert isinstance(outcomes[1], WriterGone), outcomes
        assert outcomes[0] is None or isinstance(outcomes[0], WriterGone), outcomes
        logged = [e.seq for e in await storage.log("m")]
        await _appending(storage, epoch, len(logged) + 1)
        assert writer._child is not None and writer._child.pid != child.pid
        assert [e.seq for e in await storage.log("m")] == list(range(1, len(logged) + 2))

    _with_one_match(db_url, monkeypatch, body)


def test_an_op_longer_than_one_read_reaches_the_writer_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each side reads at most CHUNK bytes at a time into a buffer it keeps: the writer puts a frame of ops
    three reads long (a step with a large action) together from several reads, commits it, and answers."""

    async def body(storage: SqlStorage, writer: ProcessCommitter, epoch: int) -> None:
        big = {"n": "x" * (3 * CHUNK)}
        await asyncio.gather(
            _appending(storage, epoch, 1),
            storage.append_all("m", 0, epoch, [LogEntry(2, 2, "command", 0, big, 2)], Progress()),
        )
        logged = [(e.seq, e.action) for e in await storage.log("m")]
        assert logged == [(1, {"n": 1}), (2, big)]
        assert writer.stats.ops >= 2

    with database("sqlite", tmp_path) as url:
        _with_one_match(url, monkeypatch, body)


def test_frames_are_taken_whole_from_reads_cut_anywhere() -> None:
    """What `Reading` appends is taken off as whole frames, whatever the cuts between reads."""
    sent = [frame(("op", n, "y" * n)) for n in (0, 1, 700, CHUNK + 5)]
    stream = b"".join(sent)
    ours, theirs = socket.socketpair()
    inbox, reading, found = bytearray(), Reading(), []
    with ours, theirs:
        for cut in range(0, len(stream), 997):
            ours.sendall(stream[cut : cut + 997])
            assert reading.into(theirs, inbox) == len(stream[cut : cut + 997])
            found += frames(inbox)
        assert found == [("op", n, "y" * n) for n in (0, 1, 700, CHUNK + 5)] and not inbox
