"""`tablehall bench service` as a real process: both games run to their figures (501♠ bids carry a range the
bots choose an amount from), and a Ctrl-C leaves no match of its running: Spectacular Bid resigns, 501♠
matches carry a decision limit that ends them. A hang fails through the bounds (no timing thresholds)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from gateway.server import start_gateway
from gateway.workers import Router
from tablehall.bench_database import DatabaseServer, uncounted
from tablehall.bench_loop import LoopCounters, LoopShare
from tablehall.bench_service import DECISION_LIMIT_S
from tablehall.client import Client
from tests.storage_backends import postgres_database
from tests.test_cli_edges import run, tablehall
from workers.host import MatchHost

BOUND_S = 120.0
WAITS = (
    r"a durable write's wait on average \([\d,]+ writes\): [\d.]+ ms queued behind the batch before it, [\d.]+ ms "
    r"on its way to the writer, [\d.]+ ms its batch written and committed, [\d.]+ ms the answer waiting for the "
    r"serving loop; a change's append waited [\d.]+ ms in its match's actor, of which [\d.]+ ms its turn after"
)


@pytest.mark.parametrize("game", ["501", "spectacular-bid"])
def test_a_small_bench_plays_every_match_and_prints_its_figures(game: str) -> None:
    ran = run("bench", "service", "--game", game, "--matches", "4", "--concurrency", "4", stdin="")
    assert ran.code == 0, ran.err[-3000:]
    assert "Traceback" not in ran.err and "4 matches played to the end" in ran.out, ran.out
    assert "command p50" in ran.out and "CPU per command" in ran.out
    assert re.search(r"event-loop thread: [\d.]+ ms of CPU a command, on a core \d+% of the time, waiting for one "
                     r"\d+%, preempted [\d,]+ times a second", ran.out), ran.out  # fmt: skip
    assert "durable write" not in ran.out, "an in-memory log writes nothing durable"


@pytest.mark.parametrize("same", [False, True])
def test_each_bench_match_has_players_of_its_own_unless_asked_for_the_same(same: bool, tmp_path: Path) -> None:
    """Players are in one match at a time, as a service's are; `--same-players` seats the same two in every
    match (each rating then waits for the one before: the rating backlog's worst case)."""
    url = f"sqlite:///{tmp_path / 'b.db'}"
    flags = ["--same-players"] if same else []
    ran = run("bench", "service", "--matches", "4", "--concurrency", "4", "--database-url", url, *flags, stdin="")
    assert ran.code == 0 and "4 matches played to the end" in ran.out, ran.err[-3000:]
    assert ("every match between the same players" in ran.out) is same, ran.out
    assert re.search(WAITS, ran.out), ran.out
    engine = create_engine(url)
    with engine.connect() as conn:
        seated = conn.execute(text("SELECT match_id, player_id FROM seats")).all()
    engine.dispose()
    assert len({match for match, _ in seated}) == 4
    assert len({player for _, player in seated}) == (2 if same else 8)


def test_the_loop_share_is_the_counters_difference_over_the_run() -> None:
    before = LoopCounters(on_core_ns=1_000_000_000, waiting_ns=0, preempted=10)
    after = LoopCounters(on_core_ns=2_500_000_000, waiting_ns=200_000_000, preempted=410)
    share = LoopShare.over(before, after, wall_s=2.0, commands=3_000)
    assert share == LoopShare(cpu_ms_per_command=0.5, on_core=0.75, waiting=0.1, preempted_per_s=200.0)
    assert LoopShare.over(None, after, 2.0, 3_000) is None and LoopShare.over(before, after, 2.0, 0) is None


def test_the_counters_follow_a_live_process_and_are_none_without_one() -> None:
    before = LoopCounters.read(os.getpid())
    assert before is not None, "this kernel has no per-thread scheduler counters (the bench's line needs them)"
    spent = time.thread_time() + 0.05
    while time.thread_time() < spent:  # this thread on a core for 50 ms of its own CPU
        pass
    after = LoopCounters.read(os.getpid())
    assert after is not None and after.on_core_ns - before.on_core_ns >= 40_000_000
    no_such_pid = int(Path("/proc/sys/kernel/pid_max").read_text())  # every pid is below it
    assert LoopCounters.read(no_such_pid) is None and LoopCounters.read(None) is None


@pytest.fixture
def ctrl_c_as_at_a_terminal() -> Iterator[None]:
    """SIGINT handled in this process while the test starts the bench, so the bench does not inherit it
    ignored: a shell's background job (`.ci/run &`) ignores it, and so would every process it starts
    (seen: the bench played on after its Ctrl-C, and both cases hung to the bound)."""
    kept = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, kept)


@pytest.mark.parametrize("game", ["spectacular-bid", "501"])
@pytest.mark.usefixtures("ctrl_c_as_at_a_terminal")
def test_ctrl_c_ends_the_bench_and_none_of_its_matches_stays_running(game: str) -> None:
    async def body() -> tuple[int, str, list[dict[str, object]]]:
        host = MatchHost()
        gateway = await start_gateway(Router([host]), "127.0.0.1", 0)
        address = f"127.0.0.1:{gateway.port}"
        args = ["bench", "service", "--game", game, "--matches", "2000", "--concurrency", "8", "--address", address]
        bench = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tablehall.cli", *args, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            async with asyncio.timeout(BOUND_S):
                while len(host.actors) < 8:  # the bench has matches in play
                    await asyncio.sleep(0.05)
                bench.send_signal(signal.SIGINT)
                _, err = await bench.communicate()
            async with Client(address) as client:
                views = [(await client.spectator(match_id).view())[1] for match_id in list(host.actors)]
            assert bench.returncode is not None
            return bench.returncode, err.decode(), views
        finally:
            if bench.returncode is None:
                bench.kill()
            host.close()
            await gateway.stop(grace=0.5)

    code, err, views = asyncio.run(body())
    assert code == 130 and "Traceback" not in err, err[-3000:]
    assert "tablehall bench service: interrupted; " in err
    running = [view for view in views if view["status"] == "in_progress"]
    if game == "spectacular-bid":
        assert not running, f"{len(running)} matches left running: {err}"
        assert "ended by resigning" in err
    else:  # no resignation in 501♠: what is left ends on its decision limit
        assert all(view["limit_ms"] == DECISION_LIMIT_S * 1000 for view in running)
        assert f"left to end on their {DECISION_LIMIT_S:g} s decision limit" in err or not running


def test_a_bench_over_its_connections_rate_waits_as_told_and_plays_every_match() -> None:
    """The bench's own `serve` with a small budget a connection (`TABLEHALL_RATE_PER_S`, `TABLEHALL_BURST`; a
    501♠ match at full speed asks more): its streams are refused `rate_limited`, each bot resumes after the
    refusal's retry-after, and every match is played to the end (before: resumed at once and counted as a
    failure, bots gave up and left their matches to the decision limit, as CI once saw at the default budget)."""
    ran = asyncio.run(tablehall("bench", "service", "--game", "501", "--matches", "2", "--concurrency", "2", stdin="",
                                env={"TABLEHALL_RATE_PER_S": "150", "TABLEHALL_BURST": "260"}))  # fmt: skip
    assert ran.code == 0, ran.err[-3000:]
    assert "2 matches played to the end" in ran.out and "rate_limited" in ran.out, ran.out


def test_a_local_postgresql_server_is_counted_and_other_stores_are_not() -> None:
    """The database server's CPU joins the figures: a backend's work counts, even once it ended (the
    postmaster reaped it). SQLite and memory have no server of their own to count."""
    assert DatabaseServer.of("memory") is None and DatabaseServer.of("sqlite:////tmp/x.db") is None
    assert "not counted" in uncounted("postgresql+psycopg://elsewhere/db", {"gateway": 1.0})
    assert uncounted("postgresql+psycopg://here/db", {"PostgreSQL": 1.0}) == uncounted("sqlite:///b.db", {}) == ""
    with postgres_database() as url:
        server = DatabaseServer.of(url)
        assert server is not None
        before = server.cpu_s()
        engine = create_engine(url, poolclass=NullPool)
        with engine.connect() as conn:  # its backend ends with the connection, before the second reading
            backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            conn.execute(text("SELECT count(*) FROM generate_series(1, 3000000)")).scalar_one()
        engine.dispose()
        bound = time.monotonic() + BOUND_S
        while Path(f"/proc/{backend}").exists():  # until the postmaster reaped it (its CPU is then its parent's)
            assert time.monotonic() < bound, f"backend {backend} still there after {BOUND_S} s"
            time.sleep(0.01)
        assert server.cpu_s() > before


def test_a_postgresql_bench_prints_the_servers_cpu_among_its_own() -> None:
    with postgres_database() as url:
        ran = run("bench", "service", "--matches", "2", "--concurrency", "2", "--database-url", url, stdin="")
    assert ran.code == 0 and "2 matches played to the end" in ran.out, ran.err[-3000:]
    assert re.search(r"CPU per command during the load: PostgreSQL [\d.]+ ms, gateway", ran.out), ran.out
    assert "not counted" not in ran.out, ran.out
    assert re.search(WAITS, ran.out), ran.out


def test_a_bench_with_worker_processes_reads_their_writes_waits(tmp_path: Path) -> None:
    """The gateway writes nothing to the log there: the figures come from the workers' /metrics."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    ran = run("bench", "service", "--matches", "2", "--concurrency", "2", "--workers", "2", "--database-url", url,
              stdin="")  # fmt: skip
    assert ran.code == 0 and "2 matches played to the end" in ran.out, ran.err[-3000:]
    assert re.search(WAITS, ran.out), ran.out
