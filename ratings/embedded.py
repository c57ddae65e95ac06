"""Embedded mode: `tablehall serve` runs the rating and sweep task functions with no broker: the sweep on its
event loop (short database reads in threads), each match's rating — a replay of its log — in a process
pool (`workers.offload`), so no rating holds the GIL the match clocks need. Matches that end while a rating
runs go to the pool together, in end order: one call for a burst, not one each. (Rated one call each in the
order they were hooked, two matches of the same players that ended in one commit of the log — one
millisecond, so their ids order them — could be taken the wrong way round: the first held behind the second,
and every later match of theirs behind it, until the beat's backlog.)"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy import Engine

from ratings import rating, settings
from ratings.sweep import Settle, sweep_once
from workers import offload

log = logging.getLogger("tablehall.ratings")


BACKLOG = 500
"""Matches rated per backlog read."""
BATCH = 100
"""Matches rated per call to the process pool at most (a burst of ended matches)."""
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
        self.tasks: set[asyncio.Task[Any]] = set()
        self.rating: set[str] = set()
        """Matches whose rating is under way here: the backlog leaves them alone (it would rate each match
        that just ended a second time, and find more of them, over and over while matches keep ending)."""
        self.sweeps = 0
        self._queued: list[str] = []
        """Ended matches waiting for the rater (in `rating` too)."""
        self._rater: asyncio.Task[dict[str, str]] | None = None

    def on_finished(self, match_id: str) -> None:
        """The match host's hook: queue the match for rating off the event loop. Matches ending while a
        rating runs wait and go together, in end order, in the next call to the process pool."""
        if match_id in self.rating:
            return
        self.rating.add(match_id)
        self._queued.append(match_id)
        if self._rater is None:
            self._rater = asyncio.ensure_future(self._rate_queued())
            self.tasks.add(self._rater)
            self._rater.add_done_callback(self.tasks.discard)

    @property
    def queued(self) -> int:
        """Ended matches hooked and not yet sent to the pool."""
        return len(self._queued)

    async def _rate_queued(self) -> dict[str, str]:
        """Rate what the hook queued, a batch at a time, until nothing is queued. A match held in one batch
        goes once more with the next (it may have been hooked before an earlier-ended one it waited for: the
        two ended in one commit of the log, so in one millisecond, and the id decides); held again, it is
        the backlog's. Returns what it rated, and how."""
        done: dict[str, str] = {}
        again: list[str] = []
        try:
            while self._queued:
                batch, self._queued = [*again, *self._queued[:BATCH]], self._queued[BATCH:]
                rated = await self.rate_all(batch)
                done |= rated
                again = [match_id for match_id in batch if rated[match_id] == "held" and match_id not in again]
                self.rating.update(again)
        finally:
            self._rater = None
            self.rating.difference_update(again)
        return done

    async def rate(self, match_id: str) -> str:
        """Rate one match now, or leave it `held` (ratings/holds.py) for a later beat's backlog."""
        return (await self.rate_all([match_id]))[match_id]

    async def rate_all(self, match_ids: list[str]) -> dict[str, str]:
        """Rate matches in the order given, in one call to the process pool (a thread for a database private
        to this process). A match that fails is logged and left to the backlog; the others go on."""
        if not match_ids:
            return {}
        self.rating.update(match_ids)
        try:
            now = self.clock()
            if self.engine.url.database in (None, "", ":memory:"):  # private to this process: rate it here
                outcomes = await asyncio.to_thread(rating.rate_all, self.engine, match_ids, now)
            else:
                url = self.engine.url.render_as_string(hide_password=False)
                outcomes = await offload.run("ratings", rating.rate_all_by_url, url, match_ids, now)
        except Exception:
            log.exception("matches %s: rating failed (the backlog retries them)", ", ".join(match_ids[:5]))
            return dict.fromkeys(match_ids, "failed")
        finally:
            self.rating.difference_update(match_ids)
        for match_id, rated in zip(match_ids, outcomes, strict=True):
            if rated.result == "failed":
                log.error("match %s: rating failed (the backlog retries it): %s", match_id, rated.why)
        return {match_id: rating.observe(rated) for match_id, rated in zip(match_ids, outcomes, strict=True)}

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
            results = await self.rate_all([match_id for match_id in due if match_id not in self.rating])
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
