"""Tournaments on the Celery side (`celery -A ratings` loads this module through the app's `include`):
a worker process sends `tournaments.table_ended` for every match that ends, and beat runs
`tournaments.advance` every sweep period (the catch-all: lost tasks, batches left half-created, rounds of
tournaments whose tables ended while nobody listened).

Both run the director (`director.py`) against the workers over gRPC (found in the lease table, or the
static `TABLEHALL_WORKERS` at `TABLEHALL_WORKER_ADDRESS`) and the database of `TABLEHALL_DATABASE_URL`.
Running a task twice, or beside another director, is harmless: the database lets one writer plan a round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from gateway.tournaments.director import Director
from gateway.workers import router_for
from ratings.celery import app
from workers.settings import Topology
from workers.sql.engine import database_url
from workers.sql.migrate import engine_for

log = logging.getLogger("tablehall.tournaments")


def _with_director(work: Callable[[Director], Awaitable[None]]) -> bool:
    """Run `work` with a director reaching the workers (static addresses, or by the lease table)."""

    async def run() -> None:
        async with router_for(Topology.from_env(), database_url(), probe=False) as router:
            await work(Director(engine_for(database_url()), router))

    asyncio.run(run())
    return True


# The task names are explicit and predate this module (it was ratings/tournaments.py): queued tasks and
# beat's redbeat schedule name them, so they must not change when the code moves.
@app.task(name="tournaments.table_ended")  # type: ignore[untyped-decorator]
def table_ended(match_id: str) -> bool:
    """A match ended: if it was a tournament's table, the next step of that tournament."""
    return _with_director(lambda director: director.tables_ended([match_id]))


@app.task(name="tournaments.advance")  # type: ignore[untyped-decorator]
def advance() -> bool:
    return _with_director(lambda director: director.advance_all())


def enqueue_ended(match_id: str) -> None:
    """Send the task (from a worker process, off its event loop)."""
    table_ended.delay(match_id)
