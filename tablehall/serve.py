"""`tablehall serve`, `tablehall gateway` and `tablehall worker`: the service's processes.

`serve` is the whole service in one process (gateway + one in-process worker on the embedded SQLite
file), or with `--workers N` the gateway here and N real worker processes beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from gateway.server import Gateway, public_servicers, start_gateway
from gateway.tls import ServerTls
from gateway.tournaments.jobs import EndedTables, tournament_jobs
from gateway.web import WebDoor, WebSettings, start_web_door
from gateway.workers import NoLeases, Router, router_for
from workers import metrics
from workers.host import MatchHost
from workers.keeper import LeaseKeeper, LeaseSettings
from workers.service import MatchHostService, start_worker_server
from workers.settings import MEMORY, Topology, lease_ms, open_storage, tolerance_ms


def _logging() -> None:
    logging.basicConfig(level=os.environ.get("TABLEHALL_LOG_LEVEL", "INFO"), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)


async def _until_stopped() -> None:
    await _signals().wait()


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
    async with _workers(topology, database_url, child_metrics, ended.notify) as backends, AsyncExitStack() as jobs:
        router = backends.router
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
        for matches in backends.hosts:
            await matches.stop()  # ends the watch streams, so calls in flight finish within the grace
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
    database_url: str | None = None,
) -> None:
    """The stateless front alone. It finds the workers in the lease table of the database
    (`TABLEHALL_DATABASE_URL`), or, in the static mode, routes to `workers` worker processes at `address`
    (`--workers N` or TABLEHALL_WORKERS, with TABLEHALL_WORKER_ADDRESS)."""
    _logging()
    exporter = metrics.serve_metrics(metrics.metrics_port(metrics_port), metrics.metrics_host(host))
    topology = Topology.from_env(workers, address)
    async with AsyncExitStack() as stack:
        try:
            router = await stack.enter_async_context(router_for(topology, database_url or _default_url()))
        except NoLeases as error:
            raise SystemExit(f"tablehall gateway: {error}") from None
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
    ordinal: int | None,
    workers: int | None,
    host: str,
    port: int | None,
    database_url: str | None,
    metrics_port: int | None = None,
    advertise: str | None = None,
) -> int:
    """A match worker. With leases (no `ordinal`): it joins the lease table, takes an even share of the
    partitions from whoever has them, and on SIGTERM (or `tablehall worker drain`) hands them all to live
    peers before it stops. Static (`ordinal` of `workers`): partitions p mod N = ordinal, as configured."""
    _logging()
    exporter = metrics.serve_metrics(metrics.metrics_port(metrics_port), metrics.metrics_host(host))
    if ordinal is not None:
        await _static_worker(ordinal, workers, host, port, database_url)
        _stop(exporter)
        return 0
    url = database_url or _default_url()
    if url == MEMORY:
        raise SystemExit("tablehall worker: leases need a shared database (--database-url or "
                         "TABLEHALL_DATABASE_URL); for an in-memory worker give --ordinal K --workers N")  # fmt: skip
    storage = await open_storage(url)
    owner = f"worker-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
    matches = MatchHost(
        storage, tolerance_ms=tolerance_ms(), owner=owner, on_finished=_rating_queue(), on_ended=_tournament_queue()
    )
    stopping = Stopping()
    service = MatchHostService(matches, drain=stopping.drain)
    listen = f"{host}:{port if port is not None else os.environ.get('TABLEHALL_WORKER_PORT', '0')}"
    server, bound = await start_worker_server(matches, listen, service)
    where = advertise or os.environ.get("TABLEHALL_WORKER_ADVERTISE") or f"{_dial_host(host)}:{bound}"
    keeper = LeaseKeeper(matches, where, LeaseSettings(lease_ms()), on_down=stopping.down)
    service.keeper = keeper
    await keeper.start()
    print(f"tablehall worker {matches.owner} serving on {host}:{bound} (as {where})", flush=True)
    await stopping.requested(_signals())
    handed = 0 if stopping.is_down else await keeper.drain()
    stopping.drained(handed)
    service.closing.set()  # its streams end cleanly: the gateway knows what was not read
    await server.stop(grace=5.0)
    await keeper.stop()
    matches.close()
    await storage.close()
    _stop(exporter)
    print(f"tablehall worker {matches.owner}: handed {handed} partitions over; stopped", flush=True)
    return EXIT_DOWN if stopping.is_down else 0


async def _static_worker(ordinal: int, workers: int | None, host: str, port: int | None, url: str | None) -> None:
    topology = Topology.from_env(workers)
    if not 0 <= ordinal < max(1, topology.workers):
        raise SystemExit(f"--ordinal must be from 0 to {topology.workers - 1}")
    storage = await open_storage(url)
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


def drain_worker(address: str, timeout_s: float = 120.0) -> int:
    """`tablehall worker drain ADDRESS`: the worker hands every partition to live peers, then stops."""
    import grpc

    from protos.tablehall.v1 import host_pb2, host_pb2_grpc

    async def ask() -> int:
        async with grpc.aio.insecure_channel(address) as channel:
            reply = await host_pb2_grpc.MatchHostStub(channel).Drain(host_pb2.DrainRequest(), timeout=timeout_s)
        return int(reply.handed)

    try:
        handed = asyncio.run(ask())
    except grpc.aio.AioRpcError as error:
        print(f"tablehall worker drain: {address}: {error.details() or error.code().name}", file=sys.stderr)
        return 2
    print(f"tablehall worker drain: {address} handed {handed} partitions over and stops")
    return 0


EXIT_DOWN = 3
"""A worker marked down by a gateway that could not reach it ends with this code (its supervisor starts a
fresh one)."""


class Stopping:
    """Why and when a worker stops: a signal, `tablehall worker drain` (answered once drained), or being
    marked down."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.is_down = False
        self._drained: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def drain(self) -> int:
        self.event.set()
        return await asyncio.shield(self._drained)

    def down(self) -> None:
        self.is_down = True
        self.event.set()

    def drained(self, handed: int) -> None:
        if not self._drained.done():
            self._drained.set_result(handed)

    async def requested(self, signalled: asyncio.Event) -> None:
        waiters = {asyncio.ensure_future(self.event.wait()), asyncio.ensure_future(signalled.wait())}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()


def _signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _dial_host(host: str) -> str:
    """An address others can dial for this listen address (a wildcard: this machine's name's address)."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


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
            children.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
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
