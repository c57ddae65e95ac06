"""The service `tablehall bench service` loads: a gateway given by its address, or a `tablehall serve` started
here (its /metrics on free ports, for `bench_commits`); and the CPU its processes spend, by role."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tablehall.ports import free_ports
from tablehall.processes import children, stat_fields
from workers.sql.writer_fork import FORK_SERVER_NAME, WRITER_NAME

STOP_S = 10.0
"""How long the service started here may take to stop before it is killed (its figures are taken already)."""


@dataclass(frozen=True, slots=True)
class Served:
    """The gateway under load: its address, its process (one started here) and the /metrics it serves."""

    address: str
    pid: int | None
    metrics: tuple[str, ...]


class ServiceDidNotStart(Exception):
    """`tablehall serve` exited (or said something else) before serving; the message is its last words."""


def cpu_seconds(root: int | None) -> dict[str, float]:
    """User + system CPU of the `tablehall serve` process and its worker processes, from /proc (Linux);
    the load generator's own as "load generator"."""
    out = {"load generator": time.process_time()}
    pending = [] if root is None else [root]
    while pending:
        pid = pending.pop()
        fields = stat_fields(pid)
        if fields is None:
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            pending += children(pid)
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        name = "gateway" if pid == root else _role(words, comm) or str(pid)
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def _role(words: list[str], comm: str) -> str:
    """A child's name in the figures: a worker by its arguments, a pool process (ratings, pairing) as such,
    the log's writers (forks of a serving process: by their /proc comm) as such."""
    if "workers.sql.writer_child" in words or comm == WRITER_NAME:
        return "log writer"
    if comm == FORK_SERVER_NAME:
        return "log writer fork server"
    if any("multiprocessing.resource_tracker" in w for w in words):
        return "pool tracker"
    if any("multiprocessing" in w for w in words):
        return "pool process"
    if words[3:4] == ["worker"]:
        return "workers"
    return " ".join(w for w in words[3:6] if w != "--ordinal")


@contextlib.asynccontextmanager
async def service(address: str | None, workers: int, database_url: str) -> AsyncIterator[Served]:
    """The gateway to load: `address`, or a `tablehall serve` started here in its own session, so that a
    Ctrl-C in the terminal reaches the bench alone, which ends its matches before stopping the service. One
    started here serves /metrics (`bench_commits`): the gateway's, then each worker process's on the next port."""
    if address is not None:
        yield Served(address, None, ())
        return
    env = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING"}
    metrics = free_ports(1 + workers)
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", database_url]
    command += ["--workers", str(workers), "--web-port", "off", "--metrics-port", str(metrics)]
    scraped = tuple(f"http://127.0.0.1:{metrics + k}/metrics" for k in range(1 + workers))
    with tempfile.TemporaryFile("w+") as said:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=said, text=True, env=env,
                                   start_new_session=True)  # fmt: skip
        try:
            assert process.stdout is not None
            line = await asyncio.to_thread(process.stdout.readline)
            while line.startswith("tablehall metrics on "):  # TABLEHALL_METRICS_PORT: its exporter speaks first
                line = await asyncio.to_thread(process.stdout.readline)
            if "serving on" not in line:
                await asyncio.to_thread(process.wait, 10)
                said.seek(0)
                last = (said.read().strip().splitlines() or [line.strip() or "it said nothing"])[-1]
                raise ServiceDidNotStart(last.removeprefix("tablehall serve: "))
            yield Served(line.split("serving on ", 1)[1].split()[0], process.pid, scraped)
        finally:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, STOP_S)
            except subprocess.TimeoutExpired:  # a service slow to stop under load must not cost the figures
                process.kill()
                await asyncio.to_thread(process.wait)
