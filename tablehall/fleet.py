"""Worker processes on leases and a gateway over one database, as the benches (and the tests) run them:
start them, wait until the lease table has settled, roll them, stop one gracefully, kill one with -9.

Every wait is bounded and waits for a condition: a role's "serving on" line, its exit, the lease table
matching the plan.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from tablehall.ports import free_port
from workers.leases import LeaseTable, targets
from workers.partitions import PARTITIONS
from workers.settings import lease_ms
from workers.sql.leases import Board

START_S = 60.0
SETTLE_S = 60.0
"""Bounds on a role starting and on the lease table settling (a 2-core machine under load)."""


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


class Role:
    """One `tablehall` process: stdout drained by a thread (its "serving on" line awaited), stderr (the log)
    in a file."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path, port: int = 0) -> None:
        self.name = name
        self.port = port
        self.log_path = log_dir / f"{name}-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("w")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "tablehall.cli", *args], stdout=subprocess.PIPE, stderr=self._log, text=True,
            env=env,
        )  # fmt: skip
        self.started_at = time.monotonic()
        self.serving_at: float | None = None
        self.lines: list[str] = []
        self._serving = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line)
            if "serving on" in line and self.serving_at is None:
                self.serving_at = time.monotonic()
                self._serving.set()
        self._serving.set()  # stdout closed: the process ended (started() tells which)

    async def started(self) -> Role:
        if not await asyncio.to_thread(self._serving.wait, START_S) or self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} did not start: {self.lines!r}\n{self.log()[-3000:]}")
        return self

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    async def kill9(self) -> None:
        self.popen.send_signal(signal.SIGKILL)
        await asyncio.to_thread(self.popen.wait, 10)

    def stop(self, grace: float = 30.0) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self._log.close()


class Fleet:
    """Worker processes on leases and one gateway over the database at `url`."""

    def __init__(self, url: str, log_dir: Path, env: dict[str, str] | None = None) -> None:
        self.url = url
        self.log_dir = log_dir
        self.env = dict(os.environ)
        self.env.update({"TABLEHALL_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1", "TABLEHALL_REDIS_URL": ""})
        self.env.update(env or {})
        for static in ("TABLEHALL_DATABASE_URL", "TABLEHALL_WORKERS"):
            self.env.pop(static, None)
        self.workers: list[Role] = []
        self.gateway: Role | None = None
        self.gateway_metrics = 0
        self.roles: list[Role] = []
        self.board = Board(url)
        self.lease_ms = lease_ms(self.env)

    @property
    def address(self) -> str:
        assert self.gateway is not None
        return f"127.0.0.1:{self.gateway.port}"

    def spawn_worker(self, database_url: str | None = None, advertise: str | None = None) -> Role:
        args = ["worker", "--port", "0", "--database-url", database_url or self.url]
        if advertise is not None:
            args += ["--advertise", advertise]
        role = Role(f"worker{len(self.roles)}", args, self.env, self.log_dir)
        self.roles.append(role)
        self.workers.append(role)
        return role

    def spawn_gateway(self) -> Role:
        port, self.gateway_metrics = free_port(), free_port()
        args = ["gateway", "--database-url", self.url, "--port", str(port), "--metrics-port", str(self.gateway_metrics)]
        self.gateway = Role(f"gateway{len(self.roles)}", args, self.env, self.log_dir, port)
        self.roles.append(self.gateway)
        return self.gateway

    def gateway_metrics_text(self) -> str:
        """The gateway's /metrics page, as Prometheus would scrape it."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.gateway_metrics}/metrics", timeout=10) as page:
            return str(page.read().decode())

    async def start(self, workers: int) -> Fleet:
        spawned = [self.spawn_worker() for _ in range(workers)]
        await asyncio.gather(*(r.started() for r in [*spawned, self.spawn_gateway()]))
        await self.settled()
        return self

    async def table(self) -> LeaseTable:
        return await self.board.leases()

    async def settled(self, within_s: float = SETTLE_S) -> LeaseTable:
        """Wait until every partition is held by a live worker and each holds what the plan gives it."""
        give_up = time.monotonic() + within_s
        while True:
            table, now = await self.table(), unix_ms()
            target = targets(table, now, self.lease_ms)
            holders = [table.holder(p, now, self.lease_ms) for p in range(PARTITIONS)]
            if target and all(h is not None and h.owner == target[p] for p, h in enumerate(holders)):
                return table
            if time.monotonic() > give_up:
                raise RuntimeError(f"the leases did not settle within {within_s} s\n{self.logs()}")
            await asyncio.sleep(0.05)

    async def stop_worker(self, role: Role, within_s: float = 60.0) -> int:
        """SIGTERM: the worker hands its partitions over and exits; its exit code."""
        role.popen.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(role.popen.wait, within_s)
        self.workers.remove(role)
        return code

    async def kill9(self, role: Role) -> None:
        await role.kill9()
        if role in self.workers:
            self.workers.remove(role)

    async def roll(self) -> list[float]:
        """Every worker replaced, one at a time: the new one joins (serving), then the old one drains and
        stops. Returns each new worker's seconds from its start to serving."""
        starts = []
        for old in list(self.workers):
            new = await self.spawn_worker().started()
            assert new.serving_at is not None
            starts.append(new.serving_at - new.started_at)
            code = await self.stop_worker(old)
            if code != 0:
                raise RuntimeError(f"{old.name} ended with {code}\n{old.log()[-3000:]}")
            await self.settled()
        return starts

    def logs(self) -> str:
        return "\n".join(f"--- {r.name}\n{r.log()[-3000:]}" for r in self.roles)

    def stop(self) -> None:
        for role in [r for r in self.roles if r is not self.gateway] + ([self.gateway] if self.gateway else []):
            role.stop()

    async def close(self) -> None:
        await self.board.close()


def owners_of(table: LeaseTable) -> dict[int, int]:
    """Worker process id -> partitions it holds (owners are named worker-HOST-PID-RANDOM)."""
    held: dict[int, int] = {}
    for lease in table.partitions.values():
        if lease.owner:
            pid = int(lease.owner.split("-")[-2])
            held[pid] = held.get(pid, 0) + 1
    return held
