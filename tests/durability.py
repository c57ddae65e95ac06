"""Helpers for the durability suites (tests/test_durability_*.py): real worker and gateway processes on
free ports over one database (a temp SQLite file or a fresh PostgreSQL database), kill -9 and restart,
and direct looks at the database and at a worker's internal API.

Every wait is bounded; the only waiting is for processes to start or die and for RPCs to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from sqlalchemy import create_engine, select

from protos.tablehall.v1 import host_pb2, host_pb2_grpc
from tablehall.ports import free_port, free_ports
from tests.processes import stop_process
from workers.errors import ERROR_CODE_KEY
from workers.games.catalog import game_named
from workers.sql import models
from workers.storage import LogEntry

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 30.0
DB_BACKENDS = ["sqlite", "postgresql"]


def run(body: Callable[[], Awaitable[T]], timeout: float) -> T:
    """Run an async test body in a fresh loop, bounded by `timeout` seconds."""

    async def main() -> T:
        return await asyncio.wait_for(body(), timeout)

    return asyncio.run(main())


@contextlib.contextmanager
def database(kind: str, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database: a temp SQLite file, or a fresh PostgreSQL database dropped afterwards
    (skipped when the server is unreachable, failed under CI: see tests/storage_backends.py)."""
    from workers.sql.migrate import migrate

    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'tablehall.db'}"
        migrate(url)
        yield url
        return
    from tests.storage_backends import postgres_database

    with postgres_database() as url:
        migrate(url)
        yield url


class Proc:
    """A `tablehall` child process; stdout is drained by a thread (the 'serving on' line is awaited),
    stderr (the log) goes to a file."""

    def __init__(
        self, name: str, args: list[str], env: dict[str, str], log_dir: Path, port: int = 0, stdin: bool = False
    ) -> None:
        self.name = name
        self.port = port
        self.log_path = log_dir / f"{name}-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("w")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "tablehall.cli", *args], stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE, stderr=self._log, text=True, env=env, cwd=REPO,
        )  # fmt: skip
        self.lines: list[str] = []
        self.serving = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line)
            if "serving on" in line:
                self.serving.set()
        self.serving.set()  # stdout closed: the process ended (started() tells which)

    async def started(self) -> Proc:
        if not await asyncio.to_thread(self.serving.wait, START_TIMEOUT_S) or self.popen.poll() is not None:
            raise AssertionError(f"{self.name} did not start: {self.lines!r}\n{self.log()}")
        return self

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def type(self, line: str) -> None:
        """A line on its standard input (started with `stdin=True`), as typed in its terminal."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    async def kill9(self) -> None:
        self.popen.send_signal(signal.SIGKILL)
        code = await asyncio.to_thread(self.popen.wait, 10)
        assert code == -signal.SIGKILL, f"{self.name} ended with {code}, not by SIGKILL"

    def stop(self) -> None:
        stop_process(self.popen, grace=10)
        self._log.close()


@dataclass
class Cluster:
    """N worker processes (ordinal k on base + k) and optionally a gateway, over one database."""

    url: str
    workers: int
    log_dir: Path
    tolerance_s: float
    base: int = 0
    procs: list[Proc] = field(default_factory=list)
    worker_procs: dict[int, Proc] = field(default_factory=dict)
    gateway_port: int = 0

    def __post_init__(self) -> None:
        self.base = free_ports(self.workers)

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            TABLEHALL_TOLERANCE_S=str(self.tolerance_s),
            TABLEHALL_WORKER_BASE_PORT=str(self.base),
            TABLEHALL_LOG_LEVEL="INFO",
            PYTHONUNBUFFERED="1",
        )
        env.pop("TABLEHALL_DATABASE_URL", None)
        return env

    def worker_address(self, ordinal: int) -> str:
        return f"127.0.0.1:{self.base + ordinal}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gateway_port}"

    def spawn_worker(self, ordinal: int, port: int | None = None) -> Proc:
        port = self.base + ordinal if port is None else port
        args = ["worker", "--ordinal", str(ordinal), "--workers", str(self.workers), "--port", str(port)]
        proc = Proc(f"worker{ordinal}", [*args, "--database-url", self.url], self.env, self.log_dir, port)
        self.procs.append(proc)
        if port == self.base + ordinal:
            self.worker_procs[ordinal] = proc
        return proc

    def spawn_gateway(self) -> Proc:
        self.gateway_port = free_port()
        args = ["gateway", "--workers", str(self.workers), "--worker-address", "127.0.0.1:{port}"]
        proc = Proc("gateway", [*args, "--port", str(self.gateway_port)], self.env, self.log_dir, self.gateway_port)
        self.procs.append(proc)
        return proc

    async def start(self, gateway: bool = True) -> Cluster:
        """All workers and the gateway, started side by side."""
        spawned = [self.spawn_worker(k) for k in range(self.workers)]
        if gateway:
            spawned.append(self.spawn_gateway())
        await asyncio.gather(*(p.started() for p in spawned))
        return self

    async def restart_worker(self, ordinal: int) -> Proc:
        return await self.spawn_worker(ordinal).started()

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()


@contextlib.contextmanager
def cluster(url: str, workers: int, log_dir: Path, tolerance_s: float) -> Iterator[Cluster]:
    c = Cluster(url, workers, log_dir, tolerance_s)
    try:
        yield c
    finally:
        c.stop()


# --- the database, read directly -------------------------------------------------------------------


class Db:
    """Read-only looks at the tables the workers write."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)

    def close(self) -> None:
        self.engine.dispose()

    def log(self, match_id: str) -> list[LogEntry]:
        e = models.events
        query = select(e.c.seq, e.c.change, e.c.kind, e.c.seat, e.c.action, e.c.t_ms).where(e.c.match_id == match_id)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(e.c.seq)).all()
        return [LogEntry(int(r.seq), int(r.change), str(r.kind), r.seat, dict(r.action), int(r.t_ms)) for r in rows]

    def match_row(self, match_id: str) -> Any:
        m = models.matches
        with self.engine.connect() as conn:
            return conn.execute(select(m).where(m.c.id == match_id)).one()

    def epochs(self) -> dict[int, tuple[int, str]]:
        p = models.partitions
        with self.engine.connect() as conn:
            return {row.partition: (row.epoch, row.owner) for row in conn.execute(select(p))}

    def writes_after(self, epochs: dict[int, int], after_unix_ms: int) -> list[tuple[str, int, int]]:
        """Steps of matches in these partitions written after `after_unix_ms` with the epoch given here (the
        old owner's) or an older one: (match, seq, epoch). A fenced old owner has none."""
        e, m = models.events, models.matches
        query = (
            select(e.c.match_id, e.c.seq, e.c.epoch, m.c.partition)
            .select_from(e.join(m, m.c.id == e.c.match_id))
            .where(m.c.partition.in_(list(epochs)), e.c.written_unix_ms > after_unix_ms)
        )
        with self.engine.connect() as conn:
            found = conn.execute(query).all()
        return [(r.match_id, r.seq, r.epoch) for r in found if r.epoch is not None and r.epoch <= epochs[r.partition]]


def normal(game: str, action: dict[str, Any]) -> dict[str, Any]:
    """An action as the engine writes it back (wire and record spellings compared alike)."""
    engine = game_named(game)
    assert engine is not None
    fields = {k: v for k, v in action.items() if k not in ("seat", "t")}
    return dict(engine.parse_action(fields).to_json())


# --- a worker's internal API, asked directly -------------------------------------------------------


@dataclass
class Refusal:
    status: grpc.StatusCode
    code: str
    message: str


class Internal:
    """The internal MatchHost stub of one worker process (what the gateway would call)."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = host_pb2_grpc.MatchHostStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    async def call(self, method: str, request: Any) -> Any:
        """The reply, or a `Refusal` with the status and the service's error code."""
        try:
            return await getattr(self.stub, method)(request, timeout=10)
        except grpc.aio.AioRpcError as error:
            code = next((str(v) for k, v in error.trailing_metadata() or () if k == ERROR_CODE_KEY), "")
            return Refusal(error.code(), code, error.details() or "")

    async def view(self, match_id: str) -> Any:
        return await self.call("View", host_pb2.HostViewRequest(match_id=match_id))

    async def seq(self, match_id: str) -> int:
        reply = await self.view(match_id)
        assert not isinstance(reply, Refusal), reply
        return int(reply.seq)

    async def view_json(self, match_id: str) -> dict[str, Any]:
        reply = await self.view(match_id)
        assert not isinstance(reply, Refusal), reply
        return dict(json.loads(reply.view_json))


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


def pg_or_sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as url:
        yield url

