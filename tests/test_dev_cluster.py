"""The k8s topology run locally (`tablehall dev-cluster`): bot matches through the gateway across 3 worker
processes, a Celery worker rating them and beat scheduling the sweeps. In the middle of the run one worker
and the Celery worker are killed with SIGKILL and the dev-cluster starts them again (as the kubelet would);
a third worker is stopped with SIGTERM (a pod deletion) and exits cleanly.

Every match ends rated, or voided with its reason and unrated; no command a bot had acknowledged is missing
from the log; Ctrl-C stops every process the cluster started.

Real processes on the machine's PostgreSQL (a scratch database, created and dropped here) and Redis
(database 12, flushed before and after)."""

from __future__ import annotations

import asyncio
import collections
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from sqlalchemy import create_engine, select

from protos.tablehall.v1 import matches_pb2, matches_pb2_grpc
from ratings.models import rated_matches, rating_history
from tablehall.bots import is_over, run_bot
from tablehall.client import Client, CreatedMatch
from tablehall.ports import free_port, free_ports
from tests.durability import Db, Proc, normal, run
from tests.storage_backends import postgres_database
from workers.partitions import partition_of
from workers.sql import models
from workers.sql.leases import Board

REDIS_URL = os.environ.get("TABLEHALL_TEST_DEV_CLUSTER_REDIS_URL", "redis://127.0.0.1:6379/12")
WORKERS = 3
SB = ("spectacular-bid", {"start_points": 25}, 2)
F501 = ("501", {"start_score": 60}, 3)
"""Short matches (a few dozen commands), clockless 501♠ beside Spectacular Bid's running clocks."""
ACKS_BEFORE_KILL = 5
VOID_REASONS = {"worker_down", "timer_late", "owner_unreachable", "abandoned"}
START_S = 120.0
"""Bound on the cluster's start: 6 Python processes on a shared 2-core machine."""
RATED_WITHIN_S = 180.0
"""Bound on rating every finished match: tasks the killed Celery worker held come back through the backlog
job (every 30 s)."""


@pytest.fixture
def redis_db() -> Iterator[str]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as error:
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable at {REDIS_URL} (.ci/run starts it): {error}")
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {error}")
    client.flushdb()
    yield REDIS_URL
    client.flushdb()


@pytest.fixture
def scratch_db() -> Iterator[str]:
    with postgres_database() as url:  # CREATE DATABASE tablehall_test_<random>; DROP ... WITH (FORCE) after
        yield url


class Roles:
    """The pids the dev-cluster printed: its listing at the start, and each role it started again."""

    LISTED = re.compile(r"^\s+(\S+)\s+\S+\s+pid (\d+)\s")
    AGAIN = re.compile(r"^(\S+) started again, pid (\d+)")

    def __init__(self, proc: Proc) -> None:
        self.proc = proc

    def pids(self) -> dict[str, list[int]]:
        found: dict[str, list[int]] = collections.defaultdict(list)
        for line in list(self.proc.lines):
            match = self.LISTED.match(line) or self.AGAIN.match(line)
            if match:
                found[match.group(1)].append(int(match.group(2)))
        return found

    def current(self, role: str) -> int:
        return self.pids()[role][-1]


async def until(check: Callable[[], bool], seconds: float, what: str, detail: Callable[[], str] = str) -> None:
    give_up = time.monotonic() + seconds
    while not check():
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out waiting for {what}: {detail()}")
        await asyncio.sleep(0.2)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def owners(url: str, match_ids: list[str]) -> dict[str, int]:
    """Each match's worker now (the pid in its owner name, from the lease table)."""
    board = Board(url)
    try:
        table = await board.leases()
    finally:
        await board.close()
    found = {}
    for match_id in match_ids:
        lease = table.lease(partition_of(match_id))
        assert lease is not None and lease.owner, (match_id, lease)
        found[match_id] = int(lease.owner.split("-")[-2])
    return found


async def create_spread(client: Client, url: str) -> list[tuple[str, CreatedMatch]]:
    """Matches of both games on every worker: two Spectacular Bid and one 501♠ per worker at least."""
    created: list[tuple[str, CreatedMatch]] = []
    for (game, options, seats), wanted in ((SB, 2), (F501, 1)):
        mine: list[str] = []
        for i in range(40):
            per_owner = collections.Counter((await owners(url, mine)).values())
            if len(per_owner) == WORKERS and min(per_owner.values()) >= wanted:
                break
            players = [f"{game}-{i}-{seat}" for seat in range(seats)]  # new names: one rated game each
            match = await client.create_match(game, players, options)
            mine.append(match.match_id)
            created.append((game, match))
        per_owner = collections.Counter((await owners(url, mine)).values())
        assert len(per_owner) == WORKERS and min(per_owner.values()) >= wanted, per_owner
    return created


def test_dev_cluster_survives_kill_9_of_a_worker_and_the_celery_worker(
    scratch_db: str, redis_db: str, tmp_path: Path
) -> None:
    base, gateway_port = free_ports(WORKERS), free_port()
    env = {**os.environ, "TABLEHALL_TOLERANCE_S": "1", "TABLEHALL_SWEEP_S": "1", "PYTHONUNBUFFERED": "1"}
    args = ["dev-cluster", f"--workers={WORKERS}", f"--port={gateway_port}", f"--worker-base-port={base}"]
    args += [f"--database-url={scratch_db}", f"--redis-url={redis_db}", f"--log-dir={tmp_path / 'logs'}"]
    cluster = Proc("dev-cluster", args, env, tmp_path)
    roles = Roles(cluster)
    address = f"127.0.0.1:{gateway_port}"

    async def body() -> None:
        if not await asyncio.to_thread(cluster.serving.wait, START_S) or cluster.popen.poll() is not None:
            raise AssertionError(f"the dev-cluster did not start: {cluster.lines!r}\n{cluster.log()}")
        listed = roles.pids()
        assert sorted(listed) == sorted(
            [f"worker-{k}" for k in range(WORKERS)] + ["gateway", "celery-worker", "celery-beat"]
        ), listed
        async with Client(address) as client:
            created = await create_spread(client, scratch_db)
            games = {m.match_id: game for game, m in created}
            held_by = await owners(scratch_db, list(games))
            victim_pid = collections.Counter(held_by.values()).most_common(1)[0][0]
            doomed = {m for m, pid in held_by.items() if pid == victim_pid}
            by_pid = {pids[-1]: name for name, pids in roles.pids().items()}
            victim = int(by_pid[victim_pid].removeprefix("worker-"))

            acked: dict[str, list[tuple[int, int, dict[str, Any]]]] = collections.defaultdict(list)
            latest: dict[str, dict[str, Any]] = {}
            victim_ready, one_over = asyncio.Event(), asyncio.Event()

            def reporter(match_id: str, seat: int) -> Any:
                def report(seq: int, action: dict[str, Any], after: dict[str, Any]) -> None:
                    acked[match_id].append((seq, seat, action))
                    latest[match_id] = after
                    if is_over(after):
                        one_over.set()
                    if all(len(acked[m]) >= ACKS_BEFORE_KILL or is_over(latest.get(m, {})) for m in doomed):
                        victim_ready.set()

                return report

            bots = [
                asyncio.create_task(
                    run_bot(address, m.match_id, token, greedy=False, seed=11 * i + seat, think_s=0.02,
                            report=reporter(m.match_id, seat), max_reconnects=60)
                )
                for i, (_, m) in enumerate(created)
                for seat, token in enumerate(m.tokens)
            ]  # fmt: skip

            await asyncio.wait_for(victim_ready.wait(), 60)
            os.kill(roles.current(f"worker-{victim}"), signal.SIGKILL)
            await asyncio.wait_for(one_over.wait(), 90)
            os.kill(roles.current("celery-worker"), signal.SIGKILL)
            # and another worker is stopped as Kubernetes stops a pod (SIGTERM): it hands over by exiting cleanly
            graceful = (victim + 1) % WORKERS
            os.kill(roles.current(f"worker-{graceful}"), signal.SIGTERM)

            finals = await asyncio.wait_for(asyncio.gather(*bots), 150)
            final = {}
            index = 0
            for _, m in created:
                final[m.match_id] = finals[index]
                index += len(m.tokens)

            # the dev-cluster started all three again; the SIGTERM'd worker had ended by itself, cleanly
            restarted = (f"worker-{victim}", "celery-worker", f"worker-{graceful}")
            await until(lambda: all(len(roles.pids()[r]) == 2 for r in restarted), 60, "the restarts", roles.pids)
            assert f"worker-{graceful} ended (exit code 0); starting it again in 0 s\n" in cluster.lines

            engine = create_engine(scratch_db)
            db = Db(scratch_db)
            try:
                ids = list(games)

                def statuses() -> dict[str, tuple[str, str | None]]:
                    t = models.matches
                    with engine.connect() as conn:
                        rows = conn.execute(select(t.c.id, t.c.status, t.c.void_reason).where(t.c.id.in_(ids)))
                        return {r.id: (r.status, r.void_reason) for r in rows}

                def rated() -> dict[str, str]:
                    with engine.connect() as conn:
                        rows = conn.execute(select(rated_matches.c.match_id, rated_matches.c.result))
                        return {r.match_id: r.result for r in rows}

                ended = statuses()
                assert {status for status, _ in ended.values()} <= {"finished", "voided"}, ended
                finished = {m for m, (status, _) in ended.items() if status == "finished"}
                assert finished, f"no match finished: nothing was rated ({ended})"
                logs = tmp_path / "logs"
                await until(
                    lambda: finished <= set(rated()),
                    RATED_WITHIN_S,
                    "every finished match to be rated",
                    lambda: (
                        f"unrated {sorted(finished - set(rated()))}; Celery worker's log ends:\n"
                        + "".join((logs / "celery-worker.log").read_text().splitlines(keepends=True)[-40:])
                    ),
                )

                results = rated()
                with engine.connect() as conn:
                    history = collections.Counter(r.match_id for r in conn.execute(select(rating_history.c.match_id)))
                for match_id, (status, reason) in ended.items():
                    seats = 2 if games[match_id] == "spectacular-bid" else 3
                    assert final[match_id]["status"] == status, (match_id, final[match_id]["status"], status)
                    if status == "finished":
                        assert results[match_id] == "rated", (match_id, results[match_id])
                        assert history[match_id] == seats
                    else:
                        assert reason in VOID_REASONS, (match_id, reason)
                        assert results.get(match_id) != "rated" and history[match_id] == 0, match_id
                    # no acknowledged command lost: each is in the log at its seq, by its seat, as sent
                    commands = {e.change: e for e in db.log(match_id) if e.kind == "command"}
                    for seq, seat, action in acked[match_id]:
                        entry = commands.get(seq)
                        assert entry is not None, f"{match_id}: acknowledged seq {seq} {action} is not in the log"
                        assert entry.seat == seat
                        assert normal(games[match_id], entry.action) == normal(games[match_id], action)
                # clockless 501♠ matches of the killed worker carried on after its restart and were rated
                assert all(ended[m][0] == "finished" for m in doomed if games[m] == "501"), ended

                # the gateway answers from the ratings the Celery side wrote
                async with grpc.aio.insecure_channel(address) as channel:
                    board = await matches_pb2_grpc.MatchesStub(channel).GetLeaderboard(
                        matches_pb2.GetLeaderboardRequest(game="spectacular-bid", limit=1000), timeout=10
                    )
                sb_rated = sum(1 for m in finished if games[m] == "spectacular-bid")
                assert sum(entry.games for entry in board.entries) == 2 * sb_rated
            finally:
                db.close()
                engine.dispose()

    try:
        run(body, timeout=420)
        # Ctrl-C: every role stops (the dev-cluster's own handler), nothing is left running
        started = [pid for pids in roles.pids().values() for pid in pids]
        cluster.popen.send_signal(signal.SIGINT)
        assert cluster.popen.wait(150) == 0, cluster.log()
        assert not [pid for pid in started if alive(pid)], "processes left running after Ctrl-C"
    finally:
        cluster.stop()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers=0"], "--workers must be at least 1"),
        (["--database-url=memory"], "need a shared database"),
        (["--redis-url=redis://127.0.0.1:1/0"], "Redis is not reachable at redis://127.0.0.1:1/0"),
        (["--database-url=nonsense"], "not a database URL"),
    ],
)
def test_bad_settings_are_refused_before_anything_starts(flags: list[str], message: str, tmp_path: Path) -> None:
    base, gateway_port = free_ports(WORKERS), free_port()
    args = [f"--port={gateway_port}", f"--worker-base-port={base}", f"--log-dir={tmp_path / 'logs'}", *flags]
    done = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "dev-cluster", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "logs").exists(), "nothing started"


def test_a_busy_port_is_refused(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "tablehall.cli", "dev-cluster", f"--port={port}", f"--log-dir={tmp_path}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 2 and f"port {port} on 127.0.0.1 is not free" in done.stderr, done.stderr


def test_dev_cluster_rolls_and_scales_its_workers_under_load(scratch_db: str, redis_db: str, tmp_path: Path) -> None:
    """`roll` and `scale N` typed into the dev-cluster: the workers are replaced one at a time (each new one
    serving before the old one drains), then scaled to 3 and to 1, while bots play; no match is voided, no
    player sees an error, and the lease table ends with one worker holding every partition."""
    base, gateway_port = free_ports(8), free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = ["dev-cluster", "--workers=2", f"--port={gateway_port}", f"--worker-base-port={base}"]
    args += [f"--database-url={scratch_db}", f"--redis-url={redis_db}", f"--log-dir={tmp_path / 'logs'}"]
    cluster = Proc("dev-cluster", args, env, tmp_path, stdin=True)
    address = f"127.0.0.1:{gateway_port}"

    def said(text: str) -> Callable[[], bool]:
        return lambda: any(text in line for line in cluster.lines)

    async def body() -> None:
        if not await asyncio.to_thread(cluster.serving.wait, START_S) or cluster.popen.poll() is not None:
            raise AssertionError(f"the dev-cluster did not start: {cluster.lines!r}\n{cluster.log()}")
        async with Client(address) as client:
            created = [await client.create_match(SB[0], [f"p{i}a", f"p{i}b"], SB[1]) for i in range(6)]
            acked: dict[str, list[tuple[int, int, dict[str, Any]]]] = collections.defaultdict(list)
            bots = [
                asyncio.create_task(run_bot(
                    address, m.match_id, token, greedy=False, seed=i, think_s=0.05, max_reconnects=60,
                    report=lambda seq, action, after, m=m: acked[m.match_id].append((seq, after["seat"], action)),
                ))
                for i, m in enumerate(created)
                for token in m.tokens
            ]  # fmt: skip
            cluster.type("roll")
            await until(said("roll done: 2 workers"), 180, "the roll", lambda: "".join(cluster.lines[-10:]))
            cluster.type("scale 3")
            await until(said("scaled to 3 workers"), 120, "scaling up", lambda: "".join(cluster.lines[-10:]))
            cluster.type("scale 1")
            await until(said("scaled to 1 workers"), 120, "scaling down", lambda: "".join(cluster.lines[-10:]))
            finals = await asyncio.wait_for(asyncio.gather(*bots), 150)
        assert {f["status"] for f in finals} == {"finished"}, [f.get("void_reason") for f in finals]
        assert said("drained and stopped (exit code 0)")()
        assert not said("ended (")(), "no worker died: each one stopped was drained"
        board = Board(scratch_db)
        try:
            table = await board.leases()
        finally:
            await board.close()
        assert len({lease.owner for lease in table.partitions.values()}) == 1
        db = Db(scratch_db)
        try:
            for m in created:
                commands = {e.change: e for e in db.log(m.match_id) if e.kind == "command"}
                for seq, seat, action in acked[m.match_id]:
                    assert seq in commands and commands[seq].seat == seat, (m.match_id, seq, action)
        finally:
            db.close()

    try:
        run(body, timeout=600)
        cluster.popen.send_signal(signal.SIGINT)
        assert cluster.popen.wait(150) == 0, cluster.log()
    finally:
        cluster.stop()
