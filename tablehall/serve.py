"""`tablehall serve`, `tablehall gateway` and `tablehall worker`: the service's processes.

`serve` is the whole service in one process (gateway + one in-process worker on the embedded SQLite
file), or with `--workers N` the gateway here and N real worker processes beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from gateway.lobby.jobs import lobby_loop
from gateway.server import LOBBY, Gateway, public_servicers, start_gateway, tournament_spectators
from gateway.tls import ServerTls
from gateway.tournaments.jobs import EndedTables, tournament_jobs
from gateway.web import WebDoor, WebSettings, start_web_door
from gateway.workers import NoLeases, Router, router_for
from tablehall.worker_role import configure_logging, default_url, stop_asked, stop_exporter, until_stopped
from workers import metrics
from workers.clocks_first import clocks_first
from workers.host import MatchHost
from workers.loop_first import BATCH_ENV
from workers.settings import MEMORY, Topology, open_storage, tolerance_ms


async def serve(
    host: str,
    port: int,
    workers: int = 0,
    database_url: str | None = None,
    metrics_port: int | None = None,
    web: WebSettings | None = None,
    tls: ServerTls | None = None,
) -> None:
    stop = stop_asked()  # before any worker process starts: a SIGTERM from now on stops them with us
    configure_logging()
    topology = Topology.from_env(workers)
    scrape = metrics.metrics_port(metrics_port)
    exporter = metrics.serve_metrics(scrape, metrics.metrics_host(host))
    child_metrics = exporter.server_address[1] + 1 if exporter is not None else 0
    ended = EndedTables()  # in-process workers tell the tournaments when a table ends
    async with _workers(topology, database_url, child_metrics, ended.notify) as backends, AsyncExitStack() as jobs:
        router = backends.router
        await jobs.enter_async_context(tournament_jobs(default_url(), router, ended))
        servicers = public_servicers(router, spectators=tournament_spectators())
        await jobs.enter_async_context(lobby_loop(servicers[LOBBY], default_url()))
        door = await _web_door(servicers, host, web, tls)  # first: a port it cannot have stops us before we serve
        gateway = await _with_door(start_gateway(router, host, port, servicers, tls), door)
        where = "in process" if topology.workers == 0 else f"in {topology.workers} worker processes"
        print(f"tablehall serving on {host}:{gateway.port} (matches {where}){_tls(gateway)}", flush=True)
        _announce(door)
        await until_stopped(stop)
        print("tablehall: shutting down", flush=True)
        gateway.health.enter_graceful_shutdown()
        for matches in backends.hosts:
            await matches.stop()  # ends the watch streams, so calls in flight finish within the grace
        if door is not None:
            await door.stop(grace=5.0)
        await gateway.stop(grace=5.0)
    stop_exporter(exporter)


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


async def run_gateway(
    host: str,
    port: int,
    workers: int | None,
    address: str | None,
    metrics_port: int | None = None,
    web: WebSettings | None = None,
    tls: ServerTls | None = None,
    database_url: str | None = None,
) -> None:
    """The stateless front alone. It finds the workers in the lease table of the database
    (`TABLEHALL_DATABASE_URL`), or, in the static mode, routes to `workers` worker processes at `address`
    (`--workers N` or TABLEHALL_WORKERS, with TABLEHALL_WORKER_ADDRESS)."""
    stop = stop_asked()
    configure_logging()
    exporter = metrics.serve_metrics(metrics.metrics_port(metrics_port), metrics.metrics_host(host))
    topology = Topology.from_env(workers, address)
    async with AsyncExitStack() as stack:
        try:
            router = await stack.enter_async_context(router_for(topology, database_url or default_url()))
        except NoLeases as error:
            raise SystemExit(f"tablehall gateway: {error}") from None
        servicers = public_servicers(router, spectators=tournament_spectators())
        await stack.enter_async_context(lobby_loop(servicers[LOBBY], database_url or default_url()))
        door = await _web_door(servicers, host, web, tls)
        gateway = await _with_door(start_gateway(router, host, port, servicers, tls), door)
        print(f"tablehall gateway serving on {host}:{gateway.port}{_tls(gateway)}", flush=True)
        _announce(door)
        await until_stopped(stop)
        if door is not None:
            await door.stop(grace=5.0)
        await gateway.stop(grace=5.0)
    stop_exporter(exporter)


@dataclass
class Backends:
    """What `serve` routes to: its router, and the in-process hosts it must stop before the gateway."""

    router: Router
    hosts: list[MatchHost]


@contextlib.asynccontextmanager
async def _workers(
    topology: Topology, database_url: str | None, metrics_port: int = 0, on_ended: Callable[[str], None] | None = None
) -> AsyncIterator[Backends]:
    """The in-process worker (`topology.workers` 0), or worker processes: with leases on a database,
    static (p mod N) in memory. `metrics_port`: the first worker process's /metrics port (the next ones
    count up); 0 = off. `on_ended`: the in-process worker's hook for every match that ends (tournaments)."""
    from ratings.embedded import embedded_jobs

    url = database_url or default_url()
    os.environ["TABLEHALL_DATABASE_URL"] = url  # the gateway's rating RPCs read the same database
    if topology.workers == 0:
        from ratings.owners import in_process

        clocks_first()  # this process runs the clocks (workers/clocks_first.py)
        storage = await open_storage(database_url)
        hosts: list[MatchHost] = []
        async with embedded_jobs(url, lambda: in_process(hosts)) as jobs:  # rating + sweeps, no broker
            matches = MatchHost(
                storage, tolerance_ms=tolerance_ms(), on_finished=jobs.on_finished if jobs else None, on_ended=on_ended,
                hop=False,  # the gateway is this process: no hop to measure
            )
            hosts.append(matches)
            await matches.start()
            try:
                yield Backends(Router([matches]), hosts)
            finally:
                await matches.stop()
                await storage.close()
        return
    static = url == MEMORY  # in-memory worker processes share nothing: each serves a fixed share
    if not static:
        from workers.sql.migrate import migrate

        await asyncio.to_thread(migrate, url)  # once, before the workers start (they would race on it)
    children = []
    try:
        for k in range(topology.workers):
            command = [sys.executable, "-m", "tablehall.cli", "worker", "--database-url", url]
            command += ["--ordinal", str(k), "--workers", str(topology.workers)] if static else ["--port", "0"]
            command += ["--metrics-port", str(metrics_port + k if metrics_port else 0)]
            env = {**os.environ, BATCH_ENV: os.environ.get(BATCH_ENV, "1")}  # beside this gateway: it first
            children.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env))
        for child in children:
            assert child.stdout is not None
            line = await asyncio.to_thread(child.stdout.readline)
            if "metrics on" in line:  # its /metrics address comes first (--metrics-port)
                line = await asyncio.to_thread(child.stdout.readline)
            if "serving on" not in line:
                raise SystemExit(f"a worker did not start: {line!r}")
        from ratings.owners import over_grpc, over_leases

        routes = Topology(topology.workers if static else 0, topology.address, topology.base_port)
        async with (
            router_for(routes, url) as router,
            (over_grpc(topology) if static else over_leases(url)) as settle,
            embedded_jobs(url, lambda: settle),
        ):
            yield Backends(router, [])
    finally:
        for child in children:
            child.terminate()
        for child in children:
            await asyncio.to_thread(child.wait, 10)


def settings(host: str | None, port: int | None) -> tuple[str, int]:
    return (
        host or os.environ.get("TABLEHALL_HOST", "127.0.0.1"),
        port if port is not None else int(os.environ.get("TABLEHALL_PORT", "50051")),
    )
