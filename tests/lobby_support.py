"""A real Lobby for the tests: a gRPC gateway on a free port, an in-process worker on a real database
(SQLite in a temp dir, or a fresh PostgreSQL database), and a pairing hall whose clock the test moves
(the test calls `tick()`; no loop runs unless asked)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, func, select

from gateway.lobby.hall import LobbyHall, LobbySettings
from gateway.lobby.pairing import Widening
from gateway.lobby.service import LobbyService
from gateway.server import Gateway, public_servicers, start_gateway
from gateway.workers import Router
from tablehall.client import Client
from tablehall.lobby_client import LobbyClient, Me, register
from workers.host import MatchHost
from workers.sql import SqlStorage
from workers.sql.migrate import engine_for

T = TypeVar("T")

SETTINGS = LobbySettings(Widening(base=2.0, per_s=1.0), beat_s=0.05, lease_ms=2000)


@dataclass
class Clock:
    """Unix ms, moved by the test."""

    now: int = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


@dataclass
class Lobby:
    host: MatchHost
    router: Router
    gateway: Gateway
    client: Client
    hall: LobbyHall
    engine: Engine
    clock: Clock
    url: str
    players: dict[str, Me] = field(default_factory=dict)

    async def player(self, name: str, ordinal: float | None = None, game: str = "spectacular-bid") -> LobbyClient:
        """A registered player (rated `ordinal` for `game`, if given), with their Lobby client."""
        me = await register(self.client, name)
        self.players[name] = me
        if ordinal is not None:
            await asyncio.to_thread(set_rating, self.engine, me.player_id, game, ordinal)
        return LobbyClient(self.client, me.key)

    def count(self, table: Any) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)


def set_rating(engine: Engine, player_id: int, game: str, ordinal: float) -> None:
    """A rating row as the rating job writes it, with σ at its default (μ = ordinal + 3σ)."""
    from ratings import models as r
    from ratings.rating import DEFAULT_SIGMA

    with engine.begin() as conn:
        conn.execute(
            r.ratings.insert().values(
                player_id=player_id, game=game, mu=ordinal + 3 * DEFAULT_SIGMA, sigma=DEFAULT_SIGMA, ordinal=ordinal,
                games=1, updated_unix_ms=0,
            )
        )


def lobby_hall(engine: Engine, router: Router, clock: Clock) -> LobbyHall:
    return LobbyHall(engine, router, SETTINGS, clock=clock)


async def open_lobby(url: str, clock: Clock) -> AsyncIterator[Lobby]:
    storage = await SqlStorage.open(url)
    host = MatchHost(storage, 0, 1)
    await host.start()
    router = Router([host])
    os.environ["TABLEHALL_DATABASE_URL"] = url
    engine = await asyncio.to_thread(engine_for, url)
    hall = lobby_hall(engine, router, clock)
    servicers = public_servicers(router, lobby=LobbyService(router, hall))
    gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
    try:
        async with Client(f"127.0.0.1:{gateway.port}") as client:
            yield Lobby(host, router, gateway, client, hall, engine, clock, url)
    finally:
        host.close()
        await gateway.stop(grace=0.5)
        await storage.close()


def run_lobby(tmp_path: Path, body: Callable[[Lobby], Awaitable[T]], url: str | None = None, timeout: float = 60) -> T:
    saved = os.environ.get("TABLEHALL_DATABASE_URL")

    async def main() -> T:
        opened = contextlib.asynccontextmanager(open_lobby)(url or f"sqlite:///{tmp_path / 'lobby.db'}", Clock())
        async with opened as lobby:
            return await asyncio.wait_for(body(lobby), timeout)

    try:
        return asyncio.run(main())
    finally:
        if saved is None:
            os.environ.pop("TABLEHALL_DATABASE_URL", None)
        else:
            os.environ["TABLEHALL_DATABASE_URL"] = saved
