"""The Lobby's pairing loop beside a gateway's servers (`tablehall serve`, `tablehall gateway`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from gateway.lobby.hall import LobbyHall
from gateway.lobby.service import LobbyService


@contextlib.asynccontextmanager
async def lobby_loop(service: object, url: str) -> AsyncIterator[LobbyHall | None]:
    """Run the pairing loop of a gateway's Lobby servicer (`service`: it, or the guard around it) for
    the database at `url` (none for `memory`: the Lobby needs a database)."""
    inner = getattr(service, "servicer", service)
    if url == "memory" or not isinstance(inner, LobbyService):
        yield None
        return
    hall = await inner.hall(url)
    task = asyncio.create_task(hall.run())
    try:
        yield hall
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
