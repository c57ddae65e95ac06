"""`tablehall serve`, `tablehall gateway` and `tablehall worker`: the service's processes.

`serve` is the whole service in one process (gateway + one in-process worker on the embedded SQLite
file), or with `--workers N` the gateway here and N real worker processes beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

from gateway.server import Gateway, public_servicers, start_gateway
from gateway.tls import ServerTls
from gateway.tournaments.jobs import EndedTables, tournament_jobs
from gateway.web import WebDoor, WebSettings, start_web_door
from gateway.workers import GrpcWorker, Router, WorkerClient
from workers import metrics
from workers.host import MatchHost
from workers.service import start_worker_server
from workers.settings import Topology, open_storage, tolerance_ms


def _logging() -> None:
    logging.basicConfig(level=os.environ.get("TABLEHALL_LOG_LEVEL", "INFO"), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def serve(
    host: str,
    port: int,
    workers: int = 0,
    database_url: str | None = None,
    metrics_port: int | None = None,
    web: WebSettings | None = None,
    tls: ServerTls | None = None,
) -> None:
    _logging()
    topology = Topology.from_env(workers)
    scrape = metrics.metrics_port(metrics_port)
    exporter = metrics.serve_metrics(scrape, metrics.metrics_host(host))
    child_metrics = exporter.server_address[1] + 1 if exporter is not None else 0
    ended = EndedTables()  # in-process workers tell the tournaments when a table ends
    async with _workers(topology, database_url, child_metrics, ended.notify) as clients, AsyncExitStack() as jobs:
        router = Router(clients)
        await jobs.enter_async_context(tournament_jobs(_default_url(), router, ended))
        servicers = public_servicers(router)
        door = await _web_door(servicers, host, web, tls)  # first: a port it cannot have stops us before we serve
        gateway = await _with_door(start_gateway(router, host, port, servicers, tls), door)
        where = "in process" if topology.workers == 0 else f"in {topology.workers} worker processes"
        print(f"tablehall serving on {host}:{gateway.port} (matches {where}){_tls(gateway)}", flush=True)
        _announce(door)
        await _until_stopped()
        print("tablehall: shutting down", flush=True)
        gateway.health.enter_graceful_shutdown()
        for client in clients:
            if isinstance(client, MatchHost):
                await client.stop()  # ends the watch streams, so calls in flight finish within the grace
        if door is not None:
            await door.stop(grace=5.0)
        await gateway.stop(grace=5.0)
    _stop(exporter)


async def _web_door(
    servicers: Mapping[str, Any], host: str, web: WebSettings | None, tls: ServerTls | None = None
) -> WebDoor | None:
    """The HTTP door for browsers (gateway/web.py) beside the gRPC server, in the same event loop."""
    if web is None or web.port is None:
        return None
    try:
        return await start_web_door(servicers, host, web.port, web.origins, tls)
    except OSError as error:
        raise SystemExit(f"tablehall: {error} (choose another with --web-port, or --web-port off)") from None


async def _with_door(starting: Awaitable[Gateway], door: WebDoor | None) -> Gateway:
    """The gRPC server; if it cannot start, the HTTP door already listening is closed first."""
    try:
        return await starting
    except BaseException:
        if door is not None:
            await door.stop(grace=0)
        raise


def _tls(gateway: Gateway) -> str:
    if not gateway.tls:
        return ""
    probes = f"; plaintext health for probes on {gateway.health_port}" if gateway.health_port is not None else ""
    return f" with TLS{probes}"


def _announce(door: WebDoor | None) -> None:
    if door is not None:
        print(f"tablehall web page, Connect and gRPC-Web on {door.url}", flush=True)


def _stop(exporter: object) -> None:
    shutdown = getattr(exporter, "shutdown", None)
    if shutdown is not None:
        shutdown()


async def run_gateway(
    host: str,
    port: int,
    workers: int | None,
    address: str | None,
    metrics_port: int | None = None,
    web: WebSettings | None = None,
    tls: ServerTls | None = None,
) -> None:
    """The stateless front alone, routing to `workers` worker processes at `address` (None: from the
    environment, TABLEHALL_WORKERS and TABLEHALL_WORKER_ADDRESS, as k8s/ configures it)."""
    _logging()
    exporter = metrics.serve_metrics(metrics.metrics_port(metrics_port), metrics.metrics_host(host))
    topology = Topology.from_env(workers, address)
    if topology.workers < 1:
        raise SystemExit("tablehall gateway needs --workers N ≥ 1 (or TABLEHALL_WORKERS)")
    clients = [GrpcWorker(topology.worker_address(k)) for k in range(topology.workers)]
    router = Router(clients)
    servicers = public_servicers(router)
    door = await _web_door(servicers, host, web, tls)
    gateway = await _with_door(start_gateway(router, host, port, servicers, tls), door)
    print(f"tablehall gateway serving on {host}:{gateway.port}{_tls(gateway)}", flush=True)
    _announce(door)
    await _until_stopped()
    if door is not None:
        await door.stop(grace=5.0)
    await gateway.stop(grace=5.0)
    _stop(exporter)


async def run_worker(
    ordinal: int,
    workers: int | None,
    host: str,
    port: int | None,
    database_url: str | None,
    metrics_port: int | None = None,
) -> None:
    """Worker `ordinal` of `workers` (None: TABLEHALL_WORKERS; unset, 1)."""
    _logging()
    exporter = metrics.serve_metrics(metrics.metrics_port(metrics_port), metrics.metrics_host(host))
    topology = Topology.from_env(workers)
    if not 0 <= ordinal < max(1, topology.workers):
        raise SystemExit(f"--ordinal must be from 0 to {topology.workers - 1}")
    storage = await open_storage(database_url)
    matches = MatchHost(
        storage, ordinal, max(1, topology.workers), tolerance_ms=tolerance_ms(), on_finished=_rating_queue(),
        on_ended=_tournament_queue(),
    )
    await matches.start()
    listen = f"{host}:{port if port is not None else topology.base_port + ordinal}"
    server, bound = await start_worker_server(matches, listen)
    print(f"tablehall worker {ordinal} of {topology.workers} serving on {host}:{bound}", flush=True)
    await _until_stopped()
    await server.stop(grace=5.0)
    await matches.stop()
    await storage.close()
    _stop(exporter)


@contextlib.asynccontextmanager
async def _workers(
    topology: Topology, database_url: str | None, metrics_port: int = 0, on_ended: Callable[[str], None] | None = None
) -> AsyncIterator[list[WorkerClient]]:
    """`metrics_port`: the first worker process's /metrics port (the next ones count up); 0 = off.
    `on_ended`: the in-process worker's hook for every match that ends (tournaments)."""
    from ratings.embedded import embedded_jobs

    url = database_url or _default_url()
    os.environ["TABLEHALL_DATABASE_URL"] = url  # the gateway's rating RPCs read the same database
    if topology.workers == 0:
        from ratings.owners import in_process

        storage = await open_storage(database_url)
        hosts: list[MatchHost] = []
        async with embedded_jobs(url, lambda: in_process(hosts)) as jobs:  # rating + sweeps, no broker
            matches = MatchHost(
                storage, tolerance_ms=tolerance_ms(), on_finished=jobs.on_finished if jobs else None, on_ended=on_ended
            )
            hosts.append(matches)
            await matches.start()
            try:
                yield [matches]
            finally:
                await matches.stop()
                await storage.close()
        return
    children = []
    if url != "memory":
        from workers.sql.migrate import migrate

        await asyncio.to_thread(migrate, url)  # once, before the workers start (they would race on it)
    try:
        for k in range(topology.workers):
            command = [sys.executable, "-m", "tablehall.cli", "worker", "--ordinal", str(k)]
            command += ["--workers", str(topology.workers), "--database-url", url]
            command += ["--metrics-port", str(metrics_port + k if metrics_port else 0)]
            children.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
        for child in children:
            assert child.stdout is not None
            line = await asyncio.to_thread(child.stdout.readline)
            if "metrics on" in line:  # its /metrics address comes first (--metrics-port)
                line = await asyncio.to_thread(child.stdout.readline)
            if "serving on" not in line:
                raise SystemExit(f"a worker did not start: {line!r}")
        from ratings.owners import over_grpc

        async with over_grpc(topology) as settle, embedded_jobs(url, lambda: settle):
            yield [GrpcWorker(topology.worker_address(k)) for k in range(topology.workers)]
    finally:
        for child in children:
            child.terminate()
        for child in children:
            await asyncio.to_thread(child.wait, 10)


def _rating_queue() -> Callable[[str], None] | None:
    """A worker process sends each finished match's rating task to Celery when a broker is configured
    (TABLEHALL_REDIS_URL); without one, `tablehall serve`'s embedded backlog rates it. Either way a lost
    task is caught by the backlog job, and a duplicate is harmless (ratings/rating.py)."""
    if not os.environ.get("TABLEHALL_REDIS_URL"):
        return None
    from ratings.celery import enqueue

    def send(match_id: str) -> None:
        future = asyncio.get_running_loop().run_in_executor(None, enqueue, match_id)
        future.add_done_callback(lambda f: _unsent(match_id, f.exception()))

    return send


def _tournament_queue() -> Callable[[str], None] | None:
    """A worker process tells the tournaments a match ended through a Celery task (TABLEHALL_REDIS_URL);
    without a broker the periodic pass of whoever runs the tournament jobs notices within its period."""
    if not os.environ.get("TABLEHALL_REDIS_URL"):
        return None
    from ratings.tournaments import enqueue_ended

    def send(match_id: str) -> None:
        future = asyncio.get_running_loop().run_in_executor(None, enqueue_ended, match_id)
        future.add_done_callback(lambda f: _unsent(match_id, f.exception(), "tournament"))

    return send


def _unsent(match_id: str, error: BaseException | None, task: str = "rating") -> None:
    if error is not None:
        logging.getLogger("tablehall.ratings").warning(
            "match %s: %s task not sent (%s); a periodic job catches up", match_id, task, error
        )


def _default_url() -> str:
    from workers.sql.engine import database_url

    return database_url()


def settings(host: str | None, port: int | None) -> tuple[str, int]:
    return (
        host or os.environ.get("TABLEHALL_HOST", "127.0.0.1"),
        port if port is not None else int(os.environ.get("TABLEHALL_PORT", "50051")),
    )
