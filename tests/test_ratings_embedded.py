"""`tablehall serve`'s embedded ratings (ratings/embedded.py) on SQLite and PostgreSQL: the backlog leaves
alone a match whose rating the host's hook has under way, so a match that just ended is rated once, not
once more by every beat that comes while matches keep ending; matches that end together go to the pool in
one call, in end order."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from ratings import models as r
from ratings import rating
from ratings.embedded import EmbeddedJobs
from tests.test_ratings_db import SB_FAST, create, hosted, play_out, run, url  # noqa: F401
from workers import offload
from workers.actor import unix_ms
from workers.host import MatchHost
from workers.sql import models as m
from workers.sql.migrate import engine_for


def test_the_backlog_leaves_a_rating_under_way_to_the_hook(url: str) -> None:  # noqa: F811
    async def body(host: MatchHost, finished: list[str]) -> None:
        engine = engine_for(url)
        match_id = await create(host, "spectacular-bid", ["ann", "bob"], SB_FAST)
        await play_out(host, match_id, 3)
        assert finished == [match_id] and rating.backlog(engine) == [match_id], "ended, not rated yet"
        jobs = EmbeddedJobs(engine, None)
        jobs.on_finished(match_id)  # the hook: the rating goes to the process pool, which takes a while
        assert match_id in jobs.rating
        assert await jobs.tick() == {}, "the backlog found it, and left it to the hook"
        (hooked,) = jobs.tasks
        assert await hooked == {match_id: "rated"} and match_id not in jobs.rating
        assert rating.backlog(engine) == [] and await jobs.tick() == {}

    try:
        run(hosted(url, body))
    finally:
        offload.shutdown()


def test_matches_ending_together_are_rated_in_one_call_in_end_order(url: str) -> None:  # noqa: F811
    """Three matches of the same two players, hooked as they end while the first is still being rated: one
    call to the pool rates them all in end order (none held for the backlog), so each starts from the
    ratings the one before left; a match id the database does not know is answered, not a failure."""

    async def body(host: MatchHost, finished: list[str]) -> None:
        engine = engine_for(url)
        for seed in range(3):
            await play_out(host, await create(host, "spectacular-bid", ["ann", "bob"], SB_FAST), seed)
        jobs = EmbeddedJobs(engine, None)
        first, *rest = finished
        jobs.on_finished(first)
        for match_id in [*rest, "no-such-match"]:
            jobs.on_finished(match_id)
        (rater,) = jobs.tasks
        assert await rater == dict.fromkeys(finished, "rated") | {"no-such-match": "unknown"}
        assert not jobs.rating and rating.backlog(engine) == []
        with engine.connect() as conn:
            h = r.rating_history
            rows = conn.execute(
                select(h.c.match_id, h.c.mu_before, h.c.mu_after)
                .join(m.players, m.players.c.id == h.c.player_id)
                .where(m.players.c.name == "ann")
            ).all()
        before, after = {row[0]: row[1] for row in rows}, {row[0]: row[2] for row in rows}
        assert [before[match_id] for match_id in finished[1:]] == [after[match_id] for match_id in finished[:-1]]

    try:
        run(hosted(url, body))
    finally:
        offload.shutdown()


def test_a_match_hooked_before_one_that_ended_with_it_is_rated_with_the_next_batch(url: str) -> None:  # noqa: F811
    """Two matches of the same players whose ends the log committed together (one millisecond: the id orders
    them), hooked against that order, the first alone in the pool: it is held behind the second, then goes
    again with it, and both are rated — neither is left to the backlog."""

    async def body(host: MatchHost, finished: list[str]) -> None:
        engine = engine_for(url)
        for seed in range(2):
            await play_out(host, await create(host, "spectacular-bid", ["ann", "bob"], SB_FAST), seed)
        with engine.begin() as conn:  # as one commit of the log's writer stamps them
            conn.execute(m.matches.update().where(m.matches.c.id.in_(finished)).values(updated_unix_ms=unix_ms()))
        earlier, later = sorted(finished)
        jobs = EmbeddedJobs(engine, None)
        jobs.on_finished(later)
        while jobs.queued:  # the rater took it: it is in the pool, alone
            await asyncio.sleep(0)
        jobs.on_finished(earlier)
        (rater,) = jobs.tasks
        assert await rater == {earlier: "rated", later: "rated"}
        assert not jobs.rating and rating.backlog(engine) == []

    try:
        run(hosted(url, body))
    finally:
        offload.shutdown()
