"""Embedded mode: `tablehall serve` runs the rating and sweep task functions with no broker: the sweep on its
event loop (short database reads in threads), each match's rating — a replay of its log — in a process
pool (`workers.offload`), so no rating holds the GIL the match clocks need."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from sqlalchemy import Engine

from ratings import rating, settings
from ratings.sweep import Settle, sweep_once
from workers import offload

log = logging.getLogger("tablehall.ratings")


BACKLOG = 500
"""Matches rated per backlog read."""
PROGRESS = frozenset({"rated", "skipped"})


class EmbeddedJobs:
    def __init__(
        self,
        engine: Engine,
        settle: Settle | None,
        sweep_s: float | None = None,
        clock: Callable[[], int] = rating.now_ms,
    ) -> None:
        self.engine = engine
        self.clock = clock
        """Unix ms: what a tournament table's spectator delay is counted against."""
        self.settle = settle
        """None: another process owns the matches' sweeps (they still are rated from here)."""
        self.sweep_s = settings.sweep_s() if sweep_s is None else sweep_s
        self.tasks: set[asyncio.Task[object]] = set()
        self.rating: set[str] = set()
        """Matches whose rating is under way here: the backlog leaves them alone (it would rate each match
        that just ended a second time, and find more of them, over and over while matches keep ending)."""
        self.sweeps = 0

    def on_finished(self, match_id: str) -> None:
        """The match host's hook: rate the match in a thread, off the event loop."""
        self.rating.add(match_id)
        task = asyncio.ensure_future(self.rate(match_id))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def rate(self, match_id: str) -> str:
        """Rate one match now, or leave it `held` (ratings/holds.py) for a later beat's backlog."""
        self.rating.add(match_id)
        try:
            now = self.clock()
            if self.engine.url.database in (None, "", ":memory:"):  # private to this process: rate it here
                return await asyncio.to_thread(rating.rate_match, self.engine, match_id, now)
            url = self.engine.url.render_as_string(hide_password=False)
            return rating.observe(await offload.run("ratings", rating.rate_by_url, url, match_id, now))
        except Exception:
            log.exception("match %s: rating failed (the backlog retries it)", match_id)
            return "failed"
        finally:
            self.rating.discard(match_id)

    async def tick(self) -> dict[str, str]:
        """One beat: the sweep, then the finished matches due and still unrated, again while that rates some
        (a player's next match is due once the one before it is rated). Returns what the backlog rated, and how."""
        if self.settle is not None:
            report = await sweep_once(self.engine, self.settle)
            self.sweeps += 1
            if report.found:
                log.info("sweep: %s", report.to_json())
        done: dict[str, str] = {}
        while True:
            due = await asyncio.to_thread(rating.backlog, self.engine, BACKLOG, self.clock())
            results = {match_id: await self.rate(match_id) for match_id in due if match_id not in self.rating}
            done |= results
            if not PROGRESS.intersection(results.values()):
                return done

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_s)
            try:
                await self.tick()
            except Exception:
                log.exception("an embedded sweep failed; the next one retries")


@contextlib.asynccontextmanager
async def embedded_jobs(
    url: str, make_settle: Callable[[], Settle | None]
) -> AsyncIterator[EmbeddedJobs | None]:
    """The jobs for a database URL (None for `memory`: no ratings without a database)."""
    if url == "memory":
        log.warning("ratings and sweeps need a database: none with TABLEHALL_DATABASE_URL=memory")
        yield None
        return
    from workers.sql.migrate import engine_for  # alembic is imported only where a database is used

    engine = await asyncio.to_thread(engine_for, url)
    jobs = EmbeddedJobs(engine, make_settle())
    loop = asyncio.create_task(jobs.run())
    try:
        yield jobs
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
        for task in list(jobs.tasks):
            with contextlib.suppress(Exception):
                await task
        offload.shutdown()
