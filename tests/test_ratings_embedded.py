"""`tablehall serve`'s embedded ratings (ratings/embedded.py) on SQLite and PostgreSQL: the backlog leaves
alone a match whose rating the host's hook has under way, so a match that just ended is rated once, not
once more by every beat that comes while matches keep ending."""

from __future__ import annotations

from ratings import rating
from ratings.embedded import EmbeddedJobs
from tests.test_ratings_db import SB_FAST, create, hosted, play_out, run, url  # noqa: F401
from workers import offload
from workers.host import MatchHost
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
        assert await hooked == "rated" and match_id not in jobs.rating
        assert rating.backlog(engine) == [] and await jobs.tick() == {}

    try:
        run(hosted(url, body))
    finally:
        offload.shutdown()
