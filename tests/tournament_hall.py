"""A real service for the tournament tests: a gRPC gateway on a free port, in-process workers on a real
database (SQLite in a temp dir, or a fresh PostgreSQL database), the tournament jobs fed by the workers'
`on_ended` hook, an organizer key, and stubs for both public services."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
from sqlalchemy import Engine, func, select

from gateway.server import Gateway, public_servicers, start_gateway
from gateway.spectators import Spectators
from gateway.tournaments import schema
from gateway.tournaments.delays import TournamentDelays
from gateway.tournaments.director import Director
from gateway.tournaments.jobs import EndedTables, tournament_jobs
from gateway.tournaments.organizers import create_organizer
from gateway.workers import GrpcWorker, Router, WorkerClient
from protos.tablehall.v1 import tournaments_pb2_grpc
from tablehall.client import Client, TablehallError
from workers.actor import unix_ms
from workers.host import MatchHost
from workers.sql import SqlStorage
from workers.sql import models as m
from workers.sql.migrate import engine_for

T = TypeVar("T")


@dataclass
class Hall:
    hosts: list[MatchHost]
    gateway: Gateway
    client: Client
    tournaments: tournaments_pb2_grpc.TournamentsStub
    engine: Engine
    key: str
    director: Director | None
    ended: EndedTables = field(default_factory=EndedTables)
    spectators: Spectators | None = None
    """The gateway's delayed spectators (tests that move the clock call its `retime`)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gateway.port}"

    def auth(self, key: str | None = None) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {key or self.key}"),)

    async def call(self, method: str, request: Any, key: str | None = None) -> Any:
        """A Tournaments call with the organizer's key (or `key`); refusals as TablehallError."""
        try:
            return await getattr(self.tournaments, method)(request, metadata=self.auth(key))
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None

    def actor(self, match_id: str) -> Any:
        for host in self.hosts:
            if match_id in host.actors:
                return host.actors[match_id]
        raise KeyError(match_id)

    def count(self, table: Any) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)

    def matches(self) -> int:
        return self.count(m.matches)

    def batches(self) -> int:
        return self.count(schema.batches)


async def open_hall(
    url: str,
    *,
    clock: Callable[[], int] = unix_ms,
    remote_workers: tuple[str, ...] = (),
    jobs: bool = True,
    organizer: str = "Arbiter",
) -> AsyncIterator[Hall]:
    storage = await SqlStorage.open(url)
    ended = EndedTables()
    remote: list[WorkerClient] = [GrpcWorker(address) for address in remote_workers]
    host = MatchHost(storage, 0, 1 + len(remote), clock=clock, on_ended=ended.notify)
    await host.start()
    router = Router([host, *remote])
    os.environ["TABLEHALL_DATABASE_URL"] = url  # the gateway's Tournaments service reads it
    engine = await asyncio.to_thread(engine_for, url)
    key = await asyncio.to_thread(create_organizer, engine, organizer)
    spectators = Spectators(clock, TournamentDelays())
    gateway = await start_gateway(router, "127.0.0.1", 0, public_servicers(router, clock=clock, spectators=spectators))
    try:
        async with contextlib.AsyncExitStack() as stack:
            director = await stack.enter_async_context(tournament_jobs(url, router, ended)) if jobs else None
            async with Client(f"127.0.0.1:{gateway.port}") as client:
                stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
                yield Hall([host], gateway, client, stub, engine, key, director, ended, spectators)
    finally:
        spectators.close()
        host.close()
        for worker in remote:
            await worker.close()  # type: ignore[attr-defined]
        await gateway.stop(grace=0.5)
        await storage.close()


def run_hall(
    tmp_path: Path, body: Callable[[Hall], Awaitable[T]], timeout: float = 60.0, url: str | None = None, **kw: Any
) -> T:
    """Runs `body` against a fresh hall (SQLite in `tmp_path` unless `url`), bounded by `timeout`."""
    saved = os.environ.get("TABLEHALL_DATABASE_URL")

    async def main() -> T:
        async with contextlib.asynccontextmanager(open_hall)(url or f"sqlite:///{tmp_path / 'hall.db'}", **kw) as h:
            return await asyncio.wait_for(body(h), timeout)

    try:
        return asyncio.run(main())
    finally:
        if saved is None:
            os.environ.pop("TABLEHALL_DATABASE_URL", None)
        else:
            os.environ["TABLEHALL_DATABASE_URL"] = saved
