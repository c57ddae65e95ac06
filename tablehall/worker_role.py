"""`tablehall worker`: a match worker process (leases, or the static share), and what every role shares:
logging, signals, the stop of a /metrics exporter, the default database.

Kept apart from `tablehall.serve` so that a worker starts without importing the gateway: a worker that
joins during a roll serves within a second or two (`tablehall bench roll` prints it)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable

from workers import metrics
from workers.clocks_first import clocks_first
from workers.host import MatchHost
from workers.keeper import LeaseKeeper, LeaseSettings
from workers.service import MatchHostService, start_worker_server
from workers.settings import MEMORY, Topology, lease_ms, open_storage, tolerance_ms


def configure_logging() -> None:
    logging.basicConfig(level=os.environ.get("TABLEHALL_LOG_LEVEL", "INFO"), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)


def stop_asked() -> asyncio.Event:
    """Set by SIGTERM from now on. Called first thing in a role, before it starts anything: a SIGTERM
    during the start is kept (the role stops as soon as it serves, its clean-ups run) instead of ending the
    process at once, which left `serve`'s worker processes running on their own."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    return stop


def serving(stop: asyncio.Event) -> asyncio.Event:
    """Once the role serves, Ctrl-C (SIGINT) asks for the same stop; until then it interrupts the start."""
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    return stop


async def until_stopped(stop: asyncio.Event) -> None:
    await serving(stop).wait()


def stop_exporter(exporter: object) -> None:
    shutdown = getattr(exporter, "shutdown", None)
    if shutdown is not None:
        shutdown()


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
    stop = stop_asked()
    configure_logging()
    exporter = metrics.serve_metrics(metrics.metrics_port(metrics_port), metrics.metrics_host(host))
    if ordinal is not None:
        await _static_worker(ordinal, workers, host, port, database_url, stop)
        stop_exporter(exporter)
        return 0
    url = database_url or default_url()
    if url == MEMORY:
        raise SystemExit("tablehall worker: leases need a shared database (--database-url or "
                         "TABLEHALL_DATABASE_URL); for an in-memory worker give --ordinal K --workers N")  # fmt: skip
    clocks_first()  # threads hand over every ms, no full GC pass on its own (workers/clocks_first.py)
    storage = await open_storage(url)
    owner = f"worker-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
    matches = MatchHost(
        storage, tolerance_ms=tolerance_ms(), owner=owner, on_finished=rating_queue(), on_ended=tournament_queue()
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
    await stopping.requested(serving(stop))
    handed = 0 if stopping.is_down else await keeper.drain()
    stopping.drained(handed)
    service.closing.set()  # its streams end cleanly: the gateway knows what was not read
    await server.stop(grace=5.0)
    await keeper.stop()
    matches.close()
    await storage.close()
    stop_exporter(exporter)
    print(f"tablehall worker {matches.owner}: handed {handed} partitions over; stopped", flush=True)
    return EXIT_DOWN if stopping.is_down else 0


async def _static_worker(
    ordinal: int, workers: int | None, host: str, port: int | None, url: str | None, stop: asyncio.Event
) -> None:
    topology = Topology.from_env(workers)
    if not 0 <= ordinal < max(1, topology.workers):
        raise SystemExit(f"--ordinal must be from 0 to {topology.workers - 1}")
    clocks_first()
    storage = await open_storage(url)
    matches = MatchHost(
        storage, ordinal, max(1, topology.workers), tolerance_ms=tolerance_ms(), on_finished=rating_queue(),
        on_ended=tournament_queue(),
    )
    await matches.start()
    listen = f"{host}:{port if port is not None else topology.base_port + ordinal}"
    server, bound = await start_worker_server(matches, listen)
    print(f"tablehall worker {ordinal} of {topology.workers} serving on {host}:{bound}", flush=True)
    await until_stopped(stop)
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


def _dial_host(host: str) -> str:
    """An address others can dial for this listen address (a wildcard: this machine's name's address)."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def rating_queue() -> Callable[[str], None] | None:
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


def tournament_queue() -> Callable[[str], None] | None:
    """A worker process tells the tournaments a match ended through a Celery task (TABLEHALL_REDIS_URL);
    without a broker the periodic pass of whoever runs the tournament jobs notices within its period."""
    if not os.environ.get("TABLEHALL_REDIS_URL"):
        return None
    from gateway.tournaments.tasks import enqueue_ended

    def send(match_id: str) -> None:
        future = asyncio.get_running_loop().run_in_executor(None, enqueue_ended, match_id)
        future.add_done_callback(lambda f: _unsent(match_id, f.exception(), "tournament"))

    return send


def _unsent(match_id: str, error: BaseException | None, task: str = "rating") -> None:
    if error is not None:
        logging.getLogger("tablehall.ratings").warning(
            "match %s: %s task not sent (%s); a periodic job catches up", match_id, task, error
        )


def default_url() -> str:
    from workers.sql.engine import database_url

    return database_url()


