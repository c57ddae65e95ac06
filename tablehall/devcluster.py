"""`tablehall dev-cluster`: the Kubernetes topology (k8s/) as separate local processes — N workers on
leases, the gateway, a Celery worker and one beat — on this machine's PostgreSQL and Redis.

Like the kubelet, it starts a role again when it dies (kill -9 a worker to watch a takeover: its peers take
its partitions over when its lease runs out; the Celery task is delivered again or found by the backlog
job). Lines typed on its standard input change the workers as a Deployment would: `roll` replaces every
worker, one at a time, the new one joining before the old one drains (maxSurge 1, maxUnavailable 0);
`scale N` adds workers, or drains the newest ones. Ctrl-C (or SIGTERM) stops them all: the gateway first,
the workers last. Each role writes to its own log file.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tablehall.preflight import DevClusterError, Settings, preflight

DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/tablehall_dev"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
START_TIMEOUT_S = 60.0
POLL_S = 0.2
BACKOFF_S = (0.0, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Delays before starting a crashed role again, one step further each time it dies young (CrashLoopBackOff)."""
STABLE_S = 30.0
"""A role that ran this long before it died is started again at once."""
EXIT_SETTINGS = 2


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) while the roles were starting."""


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    command: tuple[str, ...]
    serves: str
    """What it listens on, for the listing ('' for the Celery side)."""
    ready: str
    """A line the role prints once it works (its 'serving on', Celery's 'ready.')."""
    grace_s: float
    """How long a SIGTERM may take before SIGKILL (its terminationGracePeriodSeconds in k8s/)."""
    metrics: int = 0
    extra_env: tuple[tuple[str, str], ...] = ()


def worker_role(settings: Settings, slot: int) -> Role:
    """Worker slot `slot`: its own port (base + slot), advertised to the others through the lease table."""
    cli = [sys.executable, "-m", "tablehall.cli"]
    port, metrics = settings.worker_port(slot), settings.metrics_of(2 + slot)
    command = [*cli, "worker", f"--host={settings.host}", f"--port={port}"]
    command += [f"--advertise={settings.dial_host}:{port}", f"--database-url={settings.database_url}"]
    command += [f"--metrics-port={metrics}"]
    return Role(f"worker-{slot}", tuple(command), f"{settings.dial_host}:{port}", "serving on", 30.0, metrics)


def roles(settings: Settings) -> list[Role]:
    """The roles in start order: workers, gateway, Celery worker, beat (stopped in the reverse order)."""
    cli = [sys.executable, "-m", "tablehall.cli"]
    celery = [sys.executable, "-m", "celery", "--app=ratings"]
    n, host, dial = settings.workers, settings.host, settings.dial_host
    found = [worker_role(settings, k) for k in range(n)]
    command = [*cli, "gateway", f"--database-url={settings.database_url}", f"--host={host}"]
    command += [f"--port={settings.port}", f"--metrics-port={settings.metrics_of(0)}"]
    found.append(Role("gateway", tuple(command), f"{dial}:{settings.port}", "serving on", 30.0, settings.metrics_of(0)))
    metrics = settings.metrics_of(1)
    command = [*celery, "worker", "--loglevel=INFO", f"--concurrency={settings.celery_concurrency}"]
    command += [f"--hostname=tablehall-dev-{settings.port}@%h", "--without-mingle", "--without-gossip"]
    scrape = (("TABLEHALL_METRICS_PORT", str(metrics)), ("PROMETHEUS_MULTIPROC_DIR", str(settings.log_dir / "prom")))
    found.append(Role("celery-worker", tuple(command), "", " ready.", 60.0, metrics, scrape if metrics else ()))
    command = [*celery, "beat", "--loglevel=INFO", f"--schedule={settings.log_dir / 'celerybeat-schedule'}"]
    found.append(Role("celery-beat", tuple(command), "", "beat: Starting", 30.0))
    return found


class Running:
    """One role's current process: its output copied to the role's log file, its 'ready' line watched."""

    def __init__(self, role: Role, env: dict[str, str], log_path: Path) -> None:
        self.role = role
        self.env = {**env, **dict(role.extra_env)}
        self.log_path = log_path
        self.process: subprocess.Popen[str] | None = None
        self.ready = threading.Event()
        self.started_at = 0.0
        self.crashes = 0
        self.restart_at: float | None = None
        self.retired = False
        """Stopped on purpose (a roll, a scale down): not started again."""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        self.ready = threading.Event()
        self.started_at = time.monotonic()
        self.restart_at = None
        log = self.log_path.open("a", encoding="utf-8")
        # a session of its own: Ctrl-C reaches only the dev-cluster, which stops the roles in order, and the
        # whole group (a Celery worker's prefork children) can be ended together, as a container would be
        self.process = subprocess.Popen(
            self.role.command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        threading.Thread(target=self._pump, args=(self.process, log, self.ready), daemon=True).start()

    def _pump(self, process: subprocess.Popen[str], log: IO[str], ready: threading.Event) -> None:
        assert process.stdout is not None
        with log:
            for line in process.stdout:
                log.write(line)
                log.flush()
                if self.role.ready in line:
                    ready.set()

    def ended(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def finish(self) -> None:
        """Wait out the grace after `terminate`, then kill what is left of the group."""
        if self.process is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(self.role.grace_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def tail(self, lines: int = 15) -> str:
        try:
            return "".join(self.log_path.read_text(encoding="utf-8").splitlines(keepends=True)[-lines:])
        except OSError:
            return ""


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Cluster:
    """Starts the roles, starts a dead one again (with back-off if it keeps dying), rolls and scales the
    workers on request, stops them all."""

    def __init__(self, settings: Settings, out: IO[str]) -> None:
        self.settings = settings
        self.out = out
        self.env = settings.environment()
        self.running = [Running(r, self.env, settings.log_dir / f"{r.name}.log") for r in roles(settings)]
        self.slots = settings.workers
        """Worker slots used so far: a new worker takes the next one (its port, its metrics port)."""
        self.requests: queue.SimpleQueue[str] = queue.SimpleQueue()

    @property
    def workers(self) -> list[Running]:
        return [r for r in self.running if r.role.name.startswith("worker-") and not r.retired]

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def start(self, stop: threading.Event) -> None:
        """Workers first (they take the partitions), then the gateway, then the Celery side."""
        n = self.settings.workers
        for tier in (self.running[:n], self.running[n : n + 1], self.running[n + 1 :]):
            for r in tier:
                r.start()
            for r in tier:
                self._await_ready(r, stop)

    def _await_ready(self, r: Running, stop: threading.Event) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not r.ready.wait(POLL_S):
            if stop.is_set():
                raise Interrupted
            code = r.ended()
            if code is not None or time.monotonic() > deadline:
                why = describe_exit(code) if code is not None else f"not ready after {START_TIMEOUT_S:.0f} s"
                raise RuntimeError(f"{r.role.name} did not start ({why}); the end of {r.log_path}:\n{r.tail()}")

    def listing(self) -> Iterable[str]:
        for r in self.running:
            if r.retired:
                continue
            metrics = f"  metrics {self.settings.dial_host}:{r.role.metrics}" if r.role.metrics else ""
            yield f"  {r.role.name:<14} {r.role.serves or '-':<22} pid {r.pid:<8} log {r.log_path}{metrics}"

    def listen(self, lines: IO[str]) -> None:
        """Requests typed on standard input (a thread of its own; the supervisor carries them out)."""
        for line in lines:
            if line.strip():
                self.requests.put(line.strip())

    def supervise(self, stop: threading.Event) -> None:
        while not stop.wait(POLL_S):
            self._restart_dead()
            with contextlib.suppress(queue.Empty):
                self._carry_out(self.requests.get_nowait(), stop)

    def _restart_dead(self) -> None:
        now = time.monotonic()
        for r in self.running:
            code = r.ended()
            if code is None or r.retired:
                continue
            if r.restart_at is None:
                young = now - r.started_at < STABLE_S
                r.crashes = r.crashes + 1 if young else 0
                delay = BACKOFF_S[min(r.crashes - 1, len(BACKOFF_S) - 1)] if young else 0.0
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(r.pid, signal.SIGKILL)  # what is left of its group goes with it
                r.restart_at = now + delay
                self.say(f"{r.role.name} ended ({describe_exit(code)}); starting it again in {delay:.0f} s")
            if now >= r.restart_at:
                r.start()
                self.say(f"{r.role.name} started again, pid {r.pid}")

    def _carry_out(self, request: str, stop: threading.Event) -> None:
        words = request.split()
        try:
            if words == ["roll"]:
                self.roll(stop)
            elif len(words) == 2 and words[0] == "scale" and words[1].isdigit() and int(words[1]) >= 1:
                self.scale(int(words[1]), stop)
            else:
                self.say(f"dev-cluster: {request!r}? type 'roll' or 'scale N' (N ≥ 1)")
        except RuntimeError as error:
            self.say(f"dev-cluster: {request} stopped: {error}")

    def roll(self, stop: threading.Event) -> None:
        """Every worker replaced, one at a time: the new one serves before the old one drains and stops."""
        for old in self.workers:
            new = self._add_worker(stop)
            self._retire(old)
            self.say(f"rolled {old.role.name} (pid {old.pid}) to {new.role.name} (pid {new.pid})")
        self.say(f"roll done: {len(self.workers)} workers")

    def scale(self, count: int, stop: threading.Event) -> None:
        while len(self.workers) < count:
            new = self._add_worker(stop)
            self.say(f"added {new.role.name}, pid {new.pid}")
        while len(self.workers) > count:
            self._retire(self.workers[-1])
        self.say(f"scaled to {count} workers")

    def _add_worker(self, stop: threading.Event) -> Running:
        role = worker_role(self.settings, self.slots)
        self.slots += 1
        r = Running(role, self.env, self.settings.log_dir / f"{role.name}.log")
        self.running.insert(len([x for x in self.running if x.role.name.startswith("worker-")]), r)
        r.start()
        self._await_ready(r, stop)
        return r

    def _retire(self, r: Running) -> None:
        """SIGTERM: the worker hands its partitions to the others and exits; it is not started again."""
        r.retired = True
        r.terminate()
        r.finish()
        code = r.ended()
        self.say(f"{r.role.name} drained and stopped ({describe_exit(code if code is not None else 0)})")

    def stop(self) -> None:
        """The gateway first (no new calls), then the Celery side, then the workers (they hand over what
        they can, and their matches are in the log for the next start); each with its grace, then SIGKILL."""
        workers = [r for r in self.running if r.role.name.startswith("worker-")]
        others = [r for r in self.running if r not in workers]
        for tier in (others[:1], others[1:], workers):
            for r in tier:
                r.terminate()
            for r in tier:
                r.finish()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ
    parser.add_argument("--workers", type=int, default=3, help="worker processes (default 3)")
    parser.add_argument("--host", default="127.0.0.1", help="address every role listens on")
    parser.add_argument("--port", type=int, default=int(env.get("TABLEHALL_PORT", "50051")), help="the gateway's")
    parser.add_argument(
        "--worker-base-port", type=int, default=int(env.get("TABLEHALL_WORKER_BASE_PORT", "50061")),
        help="worker slot k listens on this + k (TABLEHALL_WORKER_BASE_PORT, default 50061)",
    )  # fmt: skip
    parser.add_argument(
        "--database-url", default=env.get("TABLEHALL_DATABASE_URL") or DEFAULT_DATABASE_URL,
        help=f"shared by every role; a missing PostgreSQL database is created (default {DEFAULT_DATABASE_URL})",
    )  # fmt: skip
    parser.add_argument("--redis-url", default=env.get("TABLEHALL_REDIS_URL") or DEFAULT_REDIS_URL)
    parser.add_argument(
        "--metrics-port", type=int, default=0,
        help="P: the gateway's /metrics on P, the Celery worker's on P+1, worker slot k's on P+2+k (default 0: off)",
    )  # fmt: skip
    parser.add_argument("--celery-concurrency", type=int, default=2, help="the Celery worker's prefork children")
    parser.add_argument("--log-dir", type=Path, default=None, help="one log file per role (default: a temp dir)")


def settings_from(args: argparse.Namespace) -> Settings:
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="tablehall-dev-"))
    return Settings(
        args.workers, args.host, args.port, args.worker_base_port, args.database_url, args.redis_url,
        args.metrics_port, args.celery_concurrency, log_dir,
    )  # fmt: skip


def run_dev_cluster(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    out = out or sys.stdout
    settings = settings_from(args)
    try:
        preflight(settings)
        (settings.log_dir / "prom").mkdir(parents=True, exist_ok=True)  # read when prometheus-client loads
    except (DevClusterError, OSError) as error:
        print(f"tablehall dev-cluster: {error}", file=sys.stderr)
        return EXIT_SETTINGS
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    cluster = Cluster(settings, out)
    from sqlalchemy.engine import make_url

    database = make_url(settings.database_url).render_as_string(hide_password=True)
    cluster.say(f"tablehall dev-cluster: {settings.workers} workers on {database}, Redis {settings.redis_url}")
    try:
        cluster.start(stop)
        for line in cluster.listing():
            cluster.say(line)
        cluster.say(f"tablehall dev-cluster serving on {settings.dial_host}:{settings.port} (Ctrl-C stops everything)")
        cluster.say("  type 'roll' to replace every worker one at a time, 'scale N' for N workers")
        threading.Thread(target=cluster.listen, args=(sys.stdin,), daemon=True).start()
        cluster.supervise(stop)
    except RuntimeError as error:
        print(f"tablehall dev-cluster: {error}", file=sys.stderr)
        return 1
    except Interrupted:
        return 130
    finally:
        cluster.say("tablehall dev-cluster: stopping")
        cluster.stop()
    return 0
