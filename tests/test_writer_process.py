"""The log's writer in a process of its own (workers/sql/writer_process.py), on a real database file and on
PostgreSQL: the serving process killed -9 leaves no writer behind and loses nothing it acknowledged; the
writer killed -9 fails only the writes it held (their outcome unknown), and the next write starts a new one;
a caller that gave up before its op left is never written; `tablehall serve` stopped with SIGTERM (its
graceful path) commits what it acknowledged, ends its writer and exits cleanly."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import pytest

from tablehall.client import Client
from tablehall.typed_bots import choose_typed
from tests.batch_writer import heard
from tests.durability import DB_BACKENDS, REPO, database
from tests.processes import stop_process
from workers.sql import SqlStorage
from workers.sql.writer_process import ProcessCommitter, WriterGone
from workers.storage import LogEntry, MatchEntry, Progress

BOUND_S = 60.0


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    with database(request.param, tmp_path) as url:
        yield url


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _ended(pid: int) -> bool:
    """The process is gone (or a zombie nobody reaped: it runs no more)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _outlived_by_none(writers: list[int]) -> None:
    """Every one of these writer processes ends (its serving process is gone), within the bound."""
    deadline = time.monotonic() + BOUND_S
    while not all(_ended(pid) for pid in writers) and time.monotonic() < deadline:
        time.sleep(0.05)  # another process's exit: nothing here to wait on but its /proc entry
    assert all(_ended(pid) for pid in writers), "the writer outlived the process it wrote for"


def _logged(url: str, match_ids: Iterable[str]) -> dict[str, list[int]]:
    """Per match, the seqs its log holds, read by a fresh storage (as after a restart)."""

    async def logs() -> dict[str, list[int]]:
        storage = await SqlStorage.open(url)
        try:
            return {m: [e.seq for e in await storage.log(m)] for m in match_ids}
        finally:
            await storage.close()

    return asyncio.run(asyncio.wait_for(logs(), BOUND_S))


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
        writers = _children(appender.pid)
        assert writers, "no writer process"
        appender.send_signal(signal.SIGKILL)
        assert appender.wait(10) == -signal.SIGKILL
    finally:
        stop_process(appender)
    _outlived_by_none(writers)
    for match_id, seqs in _logged(db_url, acked).items():
        assert seqs == list(range(1, len(seqs) + 1)), match_id
        assert len(seqs) >= acked[match_id], f"{match_id}: an acknowledged append was lost"


def test_writer_killed_fails_only_what_it_held_and_the_next_write_starts_a_new_one(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLEHALL_LOG_WRITER", "process")

    async def body() -> None:
        storage = await SqlStorage.open(db_url)
        try:
            writer = storage._writer
            assert isinstance(writer, ProcessCommitter)
            epoch = (await storage.claim("w", [0]))[0]
            entry = MatchEntry("m", "spectacular-bid", ("a", "b"), {}, (bytes(32), bytes(32)), 0, 0)
            await storage.create(entry, epoch)
            seq = 0

            async def append() -> int:
                nonlocal seq
                seq += 1
                entry = LogEntry(seq, seq, "command", seq % 2, {"n": seq}, seq)
                await storage.append_all("m", 0, epoch, [entry], Progress())
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
        finally:
            await storage.close()

    asyncio.run(asyncio.wait_for(body(), BOUND_S))


def test_an_op_given_up_before_it_left_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEHALL_LOG_WRITER", "process")
    with database("sqlite", tmp_path) as url:

        async def body() -> None:
            storage = await SqlStorage.open(url)
            try:
                epoch = (await storage.claim("w", [0]))[0]
                entry = MatchEntry("m", "spectacular-bid", ("a", "b"), {}, (bytes(32), bytes(32)), 0, 0)
                await storage.create(entry, epoch)
                kept = asyncio.ensure_future(
                    storage.append_all("m", 0, epoch, [LogEntry(1, 1, "command", 0, {}, 1)], Progress())
                )
                given_up = asyncio.ensure_future(
                    storage.append_all("m", 0, epoch, [LogEntry(2, 2, "command", 1, {}, 2)], Progress())
                )
                await asyncio.sleep(0)  # both queued in this turn of the loop, not yet sent
                given_up.cancel()
                await kept
                assert [e.seq for e in await storage.log("m")] == [1]
            finally:
                await storage.close()

        asyncio.run(asyncio.wait_for(body(), BOUND_S))


def test_an_op_given_up_after_it_left_is_committed_and_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As any write whose answer was lost: the caller that gave up does not know, the log does."""
    monkeypatch.setenv("TABLEHALL_LOG_WRITER", "process")
    with database("sqlite", tmp_path) as url:

        async def body() -> None:
            storage = await SqlStorage.open(url)
            try:
                writer = storage._writer
                assert isinstance(writer, ProcessCommitter)
                epoch = (await storage.claim("w", [0]))[0]
                entry = MatchEntry("m", "spectacular-bid", ("a", "b"), {}, (bytes(32), bytes(32)), 0, 0)
                await storage.create(entry, epoch)
                given_up = asyncio.ensure_future(
                    storage.append_all("m", 0, epoch, [LogEntry(1, 1, "command", 0, {}, 1)], Progress())
                )
                while not writer._waiting:  # turns of the loop until its frame left
                    await asyncio.sleep(0)
                given_up.cancel()
                await asyncio.gather(given_up, return_exceptions=True)
                await storage.append_all("m", 0, epoch, [LogEntry(2, 2, "command", 1, {}, 2)], Progress())
                assert [e.seq for e in await storage.log("m")] == [1, 2]
                assert not writer._waiting and writer._child is not None
            finally:
                await storage.close()

        asyncio.run(asyncio.wait_for(body(), BOUND_S))


def _serve_with_a_writer_process(url: str, said: IO[str]) -> tuple[subprocess.Popen[str], str]:
    """`tablehall serve` with its log writer in a process; what it says on stderr goes to `said` (a file:
    a pipe nobody reads while the test plays could fill and stop it)."""
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--web-port", "off"]
    command += ["--database-url", url]
    env = {**os.environ, "TABLEHALL_LOG_WRITER": "process"}
    server = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=said, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    assert "serving on" in line, line
    return server, line.split()[3]


async def _play_some(address: str, matches: int, moves: int) -> dict[str, int]:
    """Per match, the newest change the service acknowledged to a seat's command."""
    rng = random.Random(16)
    acked: dict[str, int] = {}
    async with Client(address) as client:
        for _ in range(matches):
            created = await client.create_match("spectacular-bid", ["Ana", "Bia"])
            seats = [client.seat(created.match_id, token) for token in created.tokens]
            acked[created.match_id] = 0
            for _ in range(moves):
                for seat in seats:
                    action = choose_typed((await seat.typed_view())[1], rng)
                    if action is not None:
                        acked[created.match_id] = (await seat.act(action))[0]
    return acked


def test_serve_stopped_with_sigterm_commits_what_it_acknowledged_and_ends_its_writer(db_url: str) -> None:
    with tempfile.TemporaryFile("w+") as said:
        server, address = _serve_with_a_writer_process(db_url, said)
        try:
            acked = asyncio.run(asyncio.wait_for(_play_some(address, matches=4, moves=6), BOUND_S))
            writers = [p for p in _children(server.pid) if b"writer_child" in Path(f"/proc/{p}/cmdline").read_bytes()]
            assert writers, "no writer process"
            server.send_signal(signal.SIGTERM)
            server.communicate(timeout=BOUND_S)
        finally:
            stop_process(server)
        said.seek(0)
        errors = said.read()
    assert server.returncode == 0, errors[-2000:]
    assert "Traceback" not in errors, errors[-2000:]
    _outlived_by_none(writers)
    for match_id, seqs in _logged(db_url, acked).items():
        assert acked[match_id] > 0 and seqs[-1] >= acked[match_id], f"{match_id}: an acknowledged change was lost"
