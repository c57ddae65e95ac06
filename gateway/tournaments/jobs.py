"""Tournaments moving on by themselves in one process (`tablehall serve`): the workers' `on_ended` hook
feeds ended match ids to a director, and a periodic pass catches anything a hook missed (a restart, a
batch left half-created). The distributed setup runs the same director calls as Celery tasks
(`tasks.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from gateway.tournaments import pairing
from gateway.tournaments.director import Director
from gateway.workers import Router

log = logging.getLogger("tablehall.tournaments")


class EndedTables:
    """The `on_ended` hook of in-process workers: a queue of ended match ids (never blocks the actor)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.listening = False
        """Set while a consumer runs (none without a database: then nothing is kept)."""

    def notify(self, match_id: str) -> None:
        if self.listening:
            self.queue.put_nowait(match_id)

    def drain(self) -> list[str]:
        out = []
        while not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out


@contextlib.asynccontextmanager
async def tournament_jobs(
    url: str, router: Router, ended: EndedTables | None = None, period_s: float | None = None
) -> AsyncIterator[Director | None]:
    """Run the hook's consumer and the periodic pass for the database at `url` (none for `memory`)."""
    if url == "memory":
        yield None
        return
    from ratings import settings
    from workers.sql.migrate import engine_for

    engine = await asyncio.to_thread(engine_for, url)
    director = Director(engine, router)
    period = settings.sweep_s() if period_s is None else period_s

    async def consume(queue: EndedTables) -> None:
        while True:
            first = await queue.queue.get()
            try:
                await director.tables_ended([first, *queue.drain()])  # many tables ending at once: one pass
            except Exception:
                log.exception("tournaments: could not move on after a table ended; the periodic pass retries")

    async def periodic() -> None:
        while True:
            try:
                await director.advance_all()
            except Exception:
                log.exception("tournaments: the periodic pass failed; the next one retries")
            await asyncio.sleep(period)

    tasks = [asyncio.create_task(periodic())]
    if ended is not None:
        ended.listening = True
        tasks.append(asyncio.create_task(consume(ended)))
    try:
        yield director
    finally:
        if ended is not None:
            ended.listening = False
        for task in [*tasks, *director.tasks]:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        pairing.shutdown()  # the pools' processes end with the service, not at the interpreter's exit
