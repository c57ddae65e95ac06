"""The jobs for real: a Celery worker process on a real Redis rating a match once however often its task
arrives, two beat processes sending each sweep once (redbeat's lock), and sweeps against a killed owner
(void `owner_unreachable`), a live owner whose timer was lost (the flagged player loses), and an
abandoned table — each sweep run twice changing nothing more."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from celery import Celery

from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from ratings import rating
from ratings.owners import in_process, over_grpc
from ratings.sweep import sweep_once
from tablehall.ports import free_port
from tests.processes import stop_process
from tests.storage_backends import backend_for
from tests.test_ratings_db import F501_FAST, counts, create, hosted, new_id, play_out, run, token
from workers.actor import unix_ms
from workers.host import MatchHost
from workers.settings import Topology
from workers.sql.migrate import engine_for
from workers.sql.reads import log as read_log

REDIS = os.environ.get("TABLEHALL_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
REPO = Path(__file__).resolve().parents[1]


def on_this_worker(url: str) -> str:
    """`url`'s Redis database as this pytest-xdist worker's own: the second worker takes the database 8 below
    (the files' own are 11-15, so 3-7), so that a file's tests on the two workers never empty each other's."""
    base, _, db = url.rpartition("/")
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0" or not db.isdigit() or int(db) < 8:
        return url
    return f"{base}/{int(db) - 8}"


def emptied(url: str) -> Iterator[str]:
    """A Redis database of the tests' own, empty before and after (a broker fixture's body)."""
    url = on_this_worker(url)
    client = redis.Redis.from_url(url)
    client.ping()  # .ci/run starts Redis when it is down
    client.flushdb()
    yield url
    client.flushdb()


@pytest.fixture
def broker() -> Iterator[str]:
    yield from emptied(REDIS)


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    full = {**os.environ, **env}
    out = log.open("wb")
    return subprocess.Popen([sys.executable, *args], cwd=REPO, env=full, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes]) -> None:
    stop_process(proc)


def wait_for(check: Any, seconds: float, what: str) -> None:
    give_up = time.monotonic() + seconds
    while not check():
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_celery_workers_rate_a_match_once(broker: str, tmp_path: Path) -> None:
    with backend_for("postgresql", tmp_path) as b:
        assert b.url is not None
        url = b.url

        async def body(host: MatchHost, finished: list[str]) -> str:
            match_id = await create(host, "501", ["ann", "bob", "cid"], F501_FAST)
            await play_out(host, match_id, 5)
            return match_id

        match_id = run(hosted(url, body))
        env = {"TABLEHALL_REDIS_URL": broker, "TABLEHALL_DATABASE_URL": url}
        logs = [tmp_path / f"worker{k}.log" for k in range(2)]
        workers = [
            spawn(["-m", "celery", "-A", "ratings", "worker", "-c", "2", "-l", "INFO", "-n", f"w{k}@%h",
                   "--without-mingle", "--without-gossip"], env, logs[k])
            for k in range(2)
        ]  # fmt: skip
        try:
            client = Celery(broker=broker)
            for _ in range(3):  # the same task delivered three times ...
                client.send_task("ratings.rate", args=[match_id])
            for _ in range(3):  # ... and three more, for the two workers to race on
                client.send_task("ratings.rate", args=[match_id])

            def lines() -> list[str]:
                return [ln for p in logs for ln in p.read_text().splitlines() if f"match {match_id}: " in ln]

            wait_for(lambda: len(lines()) >= 6, 60, "six rating tasks to run")
            results = [ln.rsplit(": ", 1)[1] for ln in lines()]
            assert sorted(results) == ["already"] * 5 + ["rated"], results
            assert counts(url) == (1, 3, 3)
        finally:
            for w in workers:
                stop(w)


BEAT_BOUND_S = 120.0
"""Bound on each wait for the beats (a hang fails; no timing threshold: a slow start only waits longer)."""
WINDOW = 4
"""Sweeps the lock holder sends while the other beat waits: the window in which nothing may double."""


def test_a_second_beat_does_not_double_the_sweeps(broker: str, tmp_path: Path) -> None:
    """Both beats start together; once both are past start-up (each logged that it is acquiring redbeat's
    lock) and one holds it, the holder sends WINDOW sweeps and the other sends none. Waits are on log lines,
    bounded; the window is counted in sweeps, not seconds."""
    env = {"TABLEHALL_REDIS_URL": broker, "TABLEHALL_SWEEP_S": "1"}
    logs = [tmp_path / f"beat{k}.log" for k in range(2)]
    beats = [
        spawn(["-m", "celery", "-A", "ratings", "beat", "-l", "DEBUG", "-s", str(tmp_path / f"schedule{k}")], env, log)
        for k, log in enumerate(logs)
    ]

    def said(k: int, text: str) -> int:
        return sum(text in line for line in logs[k].read_text().splitlines())

    def sent(k: int) -> int:
        return said(k, "Sending due task tablehall-sweep")

    try:
        wait_for(
            lambda: (
                all(said(k, "beat: Acquiring lock...") for k in range(2))
                and any(said(k, "Acquired lock") for k in range(2))
            ),
            BEAT_BOUND_S,
            "both beats to start, one of them holding the lock",
        )
        holder = next(k for k in range(2) if said(k, "beat: Acquired lock"))
        waiter = 1 - holder
        start = sent(holder)
        wait_for(lambda: sent(holder) >= start + WINDOW, BEAT_BOUND_S, f"{WINDOW} sweeps from the lock holder")
        assert (sent(waiter), said(waiter, "beat: Acquired lock")) == (0, 0)  # not one sweep twice
        # the holder dies: the other takes the lock over and carries on
        beats[holder].kill()
        beats[holder].wait()
        wait_for(lambda: sent(waiter) >= 2, BEAT_BOUND_S, "the second beat to take over")
    finally:
        for b in beats:
            stop(b)


class AheadClock:
    """The real clock plus an offset the test moves forward (the host's and the sweep's time, injected)."""

    def __init__(self) -> None:
        self.ahead_ms = 0

    def __call__(self) -> int:
        return unix_ms() + self.ahead_ms


def test_sweep_voids_a_match_whose_owner_was_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEHALL_SWEEP_GRACE_S", "0.3")
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    port = free_port()
    worker = spawn(["-m", "tablehall.cli", "worker", "--ordinal", "0", "--workers", "1", "--port", str(port),
                    "--database-url", url], {"TABLEHALL_REDIS_URL": ""}, tmp_path / "worker.log")  # fmt: skip
    topology = Topology(1, f"127.0.0.1:{port}", port)

    async def body() -> None:
        log = tmp_path / "worker.log"
        await asyncio.to_thread(wait_for, lambda: "serving on" in log.read_text(), BEAT_BOUND_S, "the worker to serve")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = host_pb2_grpc.MatchHostStub(channel)
            match_id = new_id()
            created = unix_ms()
            await stub.Create(host_pb2.HostCreateRequest(
                match_id=match_id, game="spectacular-bid", players=["ann", "bob"],
                options_json='{"bank_s": 10, "delay_s": 0}',
                token_sha256=[token(match_id, 0), token(match_id, 1)], created_unix_ms=created))  # fmt: skip
            for seat in (0, 1):  # both press Continue: the clock runs
                await stub.Command(host_pb2.HostCommandRequest(
                    match_id=match_id, token_sha256=token(match_id, seat),
                    action=matches_pb2.Action(ready=matches_pb2.Ready()), arrival_unix_ms=unix_ms()))  # fmt: skip
        worker.kill()  # the owner dies with the clock running; its timer dies with it
        worker.wait()
        engine = engine_for(url)
        later = unix_ms() + 11_000  # the sweep runs as if 11 s had passed: past the deadline (10 s) and the grace
        async with over_grpc(topology) as settle:
            report = await sweep_once(engine, settle, now=later)
            assert (report.found, report.settled, report.voided) == (1, 0, {"owner_unreachable": 1})
            again = await sweep_once(engine, settle, now=later)
            assert (again.found, again.voided) == (0, {})
        with engine.connect() as conn:
            steps = read_log(conn, match_id)
        assert steps[-1].kind == "void" and steps[-1].action == {"reason": "owner_unreachable"}
        assert rating.rate_match(engine, match_id) == "voided"

    try:
        asyncio.run(asyncio.wait_for(body(), 60))
    finally:
        stop(worker)


def test_sweep_settles_through_a_live_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEHALL_SWEEP_GRACE_S", "0.3")
    monkeypatch.setenv("TABLEHALL_ABANDON_S", "0.5")
    url = f"sqlite:///{tmp_path / 'live.db'}"

    clock = AheadClock()

    async def body(host: MatchHost, finished: list[str]) -> None:
        host.tolerance_ms = 30_000  # the late settlement is within tolerance: a verdict, not a void
        fast = {"bank_s": 10, "delay_s": 0}
        match_id = await create(host, "spectacular-bid", ["ann", "bob"], fast)
        idle = await create(host, "spectacular-bid", ["cid", "dee"], fast)  # nobody ever presses Continue
        actor = host.actors[match_id]
        for seat in (0, 1):
            await actor.command(token(match_id, seat), None, {"do": "ready"}, clock())
        turn = actor.game.view(actor.match.state, None).to_json()["turn"]
        for a in host.actors.values():  # the timers are lost
            if a.timer is not None:
                a.timer.cancel()
                a.timer = None
        clock.ahead_ms += 11_000  # past the bank (10 s), the grace and the abandon time: time injected, not slept
        assert not actor.match.over
        engine = engine_for(url)
        report = await sweep_once(engine, in_process([host]), now=clock())
        assert (report.found, report.settled, report.voided) == (2, 2, {})
        outcome = actor.match.outcome()
        assert outcome["status"] == "finished" and outcome["winner"] == 1 - turn  # the flagged player loses
        assert host.actors[idle].match.void_reason == "abandoned"
        again = await sweep_once(engine, in_process([host]), now=clock())
        assert again.found == 0
        assert finished == [match_id]
        assert rating.rate_match(engine, match_id) == "rated"
        assert rating.rate_match(engine, idle) == "voided"

    run(hosted(url, body, clock))
