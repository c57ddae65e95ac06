"""`tablehall serve`'s log writer: a fork of the fork server it forked at its start (workers/sql/writer_fork.py),
the serving role's default, on a real database file and on PostgreSQL. Stopped with SIGTERM, the serving
process commits what it acknowledged, ends its writer and fork server, and exits 0; killed -9, it leaves
neither behind and loses nothing acknowledged; restarted after either, it shows every acknowledged change;
a writer killed -9 is forked again and play goes on; with the fork server gone too, the next writer starts
as a new Python process and play goes on."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

import grpc
import pytest

from tablehall.client import Client, SeatClient, TablehallError
from tablehall.processes import children
from tablehall.typed_bots import choose_typed
from tests.durability import DB_BACKENDS, REPO, database
from tests.processes import stop_process
from tests.writer_processes import BOUND_S, descendants, ended, logged, outlived_by_none
from workers.sql.writer_fork import FORK_SERVER_NAME, WRITER_NAME


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    with database(request.param, tmp_path) as url:
        yield url


def _serve(url: str, said: IO[str]) -> tuple[subprocess.Popen[str], str]:
    """`tablehall serve` as a user starts it (no writer setting); what it says on stderr goes to `said` (a
    file: a pipe nobody reads while the test plays could fill and stop it)."""
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--web-port", "off"]
    env = {k: v for k, v in os.environ.items() if k != "TABLEHALL_LOG_WRITER"}
    server = subprocess.Popen(
        [*command, "--database-url", url], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=said, text=True
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    assert "serving on" in line, line
    return server, line.split()[3]


def _named(server: subprocess.Popen[str], name: str) -> list[int]:
    return [pid for pid, comm in descendants(server.pid).items() if comm == name]


class _Table:
    """Matches played by one client, each command's acknowledged change kept per match."""

    def __init__(self, client: Client, may_refuse: int = 0) -> None:
        self.client = client
        self.rng = random.Random(16)
        self.seats: dict[str, list[SeatClient]] = {}
        self.tokens: dict[str, str] = {}
        """Per match, its first seat's token (to look at it again after a restart)."""
        self.acked: dict[str, int] = {}
        self.may_refuse = may_refuse
        """Commands that may be refused UNAVAILABLE (a writer killed under them), each sent again once."""
        self.refused = 0

    async def open(self, matches: int) -> None:
        for _ in range(matches):
            created = await self.client.create_match("spectacular-bid", ["Ana", "Bia"])
            self.seats[created.match_id] = [self.client.seat(created.match_id, t) for t in created.tokens]
            self.tokens[created.match_id] = created.tokens[0]
            self.acked[created.match_id] = 0

    async def play(self, moves: int) -> None:
        """Each seat of each match, `moves` times; a refused change (`may_refuse`) is sent again, once."""
        for match_id, seats in self.seats.items():
            for _ in range(moves):
                for seat in seats:
                    for _attempt in range(2):
                        try:
                            await self._move(match_id, seat)
                            break
                        except TablehallError as refused:
                            assert refused.status == grpc.StatusCode.UNAVAILABLE, refused
                            assert self.refused < self.may_refuse, refused
                            self.refused += 1

    async def _move(self, match_id: str, seat: SeatClient) -> None:
        action = choose_typed((await seat.typed_view())[1], self.rng)
        if action is not None:
            self.acked[match_id] = (await seat.act(action))[0]


def _durable(url: str, acked: dict[str, int]) -> None:
    for match_id, seqs in logged(url, acked).items():
        assert acked[match_id] > 0 and seqs[-1] >= acked[match_id], f"{match_id}: an acknowledged change was lost"


def _said(said: IO[str]) -> str:
    said.seek(0)
    return said.read()


async def _played(address: str) -> tuple[dict[str, int], dict[str, str]]:
    """Per match, the newest change acknowledged, and a seat's token."""
    async with Client(address) as client:
        table = _Table(client)
        await table.open(4)
        await table.play(6)
        return table.acked, table.tokens


async def _seen_again(address: str, acked: dict[str, int], tokens: dict[str, str]) -> None:
    """After a restart, each match's seat sees at least every change acknowledged before it."""
    async with Client(address) as client:
        for match_id, seq in acked.items():
            seen, _ = await client.seat(match_id, tokens[match_id]).typed_view()
            assert seen >= seq, f"{match_id}: change {seq} acknowledged before the restart, {seen} after"


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_serve_stopped_ends_its_fork_server_and_writer_and_loses_nothing_acknowledged(db_url: str, stop: int) -> None:
    """SIGTERM, its graceful path: exits 0 once its writer committed what it acknowledged; -9: its writer
    commits what it was sent and ends, as does the fork server, when their sockets close."""
    with tempfile.TemporaryFile("w+") as said:
        server, address = _serve(db_url, said)
        try:
            acked, tokens = asyncio.run(asyncio.wait_for(_played(address), BOUND_S))
            forks = {pid: comm for pid, comm in descendants(server.pid).items() if comm.startswith(WRITER_NAME)}
            assert sorted(forks.values()) == [WRITER_NAME, FORK_SERVER_NAME], forks
            assert not any(b"writer_child" in Path(f"/proc/{p}/cmdline").read_bytes() for p in forks), "not forked"
            server.send_signal(stop)
            server.communicate(timeout=BOUND_S)
        finally:
            stop_process(server)
        errors = _said(said)
    assert server.returncode == (0 if stop == signal.SIGTERM else -signal.SIGKILL), errors[-2000:]
    assert "Traceback" not in errors, errors[-2000:]
    outlived_by_none(forks)
    _durable(db_url, acked)
    with tempfile.TemporaryFile("w+") as said:
        again, address = _serve(db_url, said)
        try:
            asyncio.run(asyncio.wait_for(_seen_again(address, acked, tokens), BOUND_S))
        finally:
            stop_process(again)


@pytest.mark.parametrize("also_the_fork_server", [False, True], ids=["writer", "writer-and-fork-server"])
def test_a_killed_writer_is_started_again_and_play_goes_on(db_url: str, also_the_fork_server: bool) -> None:
    """The writer killed -9 between commands: at most one command is refused (UNAVAILABLE, send it again),
    the next is written by a new writer (a fork again; with the fork server killed too, a new process)."""
    with tempfile.TemporaryFile("w+") as said:
        server, address = _serve(db_url, said)
        try:
            asyncio.run(asyncio.wait_for(_kill_between_moves(server, address, db_url, also_the_fork_server), BOUND_S))
            assert server.poll() is None, _said(said)[-2000:]
        finally:
            stop_process(server)
        assert "Traceback" not in _said(said)


async def _kill_between_moves(
    server: subprocess.Popen[str], address: str, url: str, also_the_fork_server: bool
) -> None:
    async with Client(address) as client:
        table = _Table(client, may_refuse=1)
        await table.open(3)
        await table.play(3)
        (first,) = _named(server, WRITER_NAME)
        killed = [first, *(_named(server, FORK_SERVER_NAME) if also_the_fork_server else [])]
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        await asyncio.to_thread(outlived_by_none, killed)
        before = dict(table.acked)
        await table.play(3)
        assert all(table.acked[m] > before[m] for m in before), (before, table.acked)
        if also_the_fork_server:
            started = [p for p in children(server.pid) if b"writer_child" in Path(f"/proc/{p}/cmdline").read_bytes()]
            assert len(started) == 1 and not _named(server, FORK_SERVER_NAME)
        else:
            assert [p for p in _named(server, WRITER_NAME) if not ended(p)] not in ([], [first])
    await asyncio.to_thread(_durable, url, table.acked)


def test_no_fork_server_is_forked_beside_a_running_thread(tmp_path: Path) -> None:
    """A fork copies only the forking thread: beside another (its locks held, say), the writers start as new
    processes instead, and a storage opened here keeps its writer thread."""
    from workers.sql import writer_child, writer_fork
    from workers.sql.writer_process import writer_in_process

    beside = threading.Event()
    other = threading.Thread(target=beside.wait)
    other.start()
    try:
        assert writer_fork.start(f"sqlite:///{tmp_path / 'x.db'}", writer_child.run) is None
        assert writer_fork.running() is None and FORK_SERVER_NAME not in descendants(os.getpid()).values()
        assert not writer_in_process() or os.environ.get("TABLEHALL_LOG_WRITER") == "process"
    finally:
        beside.set()
        other.join()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_a_forked_writer_is_waited_for_and_killed_by_pid(pidfd: bool) -> None:
    """`Forked` waits for a process that is not this one's child (its fork server reaps it): through a pidfd,
    or on a kernel without them by asking after the pid; a timeout is `subprocess.TimeoutExpired`."""
    from workers.sql.writer_fork import Forked

    blocked = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    reaper = threading.Thread(target=blocked.wait)  # stands in for the fork server, which reaps its writers
    reaper.start()
    try:
        forked = Forked(blocked.pid)
        if not pidfd:
            forked._release()
        with pytest.raises(subprocess.TimeoutExpired):
            forked.wait(0.05)  # it reads a pipe nobody writes to: it cannot have ended
        forked.kill()
        assert forked.wait(BOUND_S) is None
        reaper.join(BOUND_S)
        assert blocked.returncode == -signal.SIGKILL
    finally:
        blocked.kill()
        reaper.join(BOUND_S)
