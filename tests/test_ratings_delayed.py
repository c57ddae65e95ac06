"""A delayed tournament table's result does not leak through the ratings: through a real gateway (gRPC,
in-process worker, the tournament jobs) on SQLite and PostgreSQL, rated by the embedded jobs (the real
process pool) on an injected clock, `GetRatingHistory`, `GetRating` and `GetLeaderboard` carry the table's
rating change only once its recorded end is as old as the spectator delay (checked on the response bytes);
a player's casual match that ended after it waits with it, and both are then rated in end order, so the
ratings are those of rating each match as it ended. Without a delay the table is rated at once. A restart
between the end and the reveal loses nothing: the next service's backlog rates the table and the casual
match held with it. A real Celery worker holds the table and rates it at its reveal, never before.

A player's casual match waits for the table whether it ended before the casual match or still plays when it
ends (and so does a bye's, whose next table exists only once the round ended): the outsider's rating,
history and the leaderboard carry nothing of it until the table's reveal (rated at once while the table
plays, it would tell that the table has not ended yet), and both are then rated in end order: the ratings
of rating each as it ended."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from prometheus_client import REGISTRY
from sqlalchemy import select

from gateway.tournaments import schema
from protos.tablehall.v1 import host_pb2, matches_pb2, tournaments_pb2
from ratings import holds, rating
from ratings import models as r
from ratings.embedded import EmbeddedJobs
from tests.storage_backends import postgres_database
from tests.test_ratings_db import new_id, token
from tests.test_ratings_jobs import emptied, spawn, stop, wait_for
from tests.test_tournament_delayed_results import (
    Clock,
    a_tournament_table_ends,
    a_tournament_table_starts,
    ended_round_one,
    resign,
    round_one,
)
from tests.tournament_hall import Hall, run_hall
from workers import offload
from workers.sql.migrate import engine_for

GAME = "spectacular-bid"
DELAY_S = 60
OUTSIDER = "Dora"
"""Plays a casual match against one of the table's players after the table ended."""
PAUSE_S = 3600
"""Between rounds: round 2's tables start after the casual match ended, so only round 1's table holds it
(a table of the player's tournament begun before it ended would hold it too: ratings/holds.py `entered`)."""


@contextlib.contextmanager
def database(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "postgresql":
        with postgres_database() as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path / 'hall.db'}"


async def recorded(hall: Hall, tournament_id: str) -> tuple[str, ...]:
    """Waits (on the organizer's pushed pages) until the director recorded round 1's end; its players."""
    watch = tournaments_pb2.WatchTournamentRequest(tournament_id=tournament_id)
    stream = hall.tournaments.WatchTournament(watch, metadata=hall.auth())
    async for page in stream:
        if ended_round_one(page) and page.tournament.current_round == 2:
            stream.cancel()
            return tuple(round_one(page)[0].players)
    raise AssertionError("the organizer's stream ended before round 1 did")


def shown_from(hall: Hall, match_id: str, delay_s: int) -> int:
    """When the public sees the table's result: its end as the director recorded it, plus the delay."""
    bt = schema.batch_tables
    with hall.engine.connect() as conn:
        end = conn.execute(select(bt.c.ended_unix_ms).where(bt.c.match_id == match_id)).scalar_one()
    return int(end) + delay_s * 1000


async def casual(hall: Hall, clock: Clock, player: str) -> str:
    """`player` against the outsider, who resigns at once: `player` wins (created and played through the
    hall's match host on the injected clock, every step logged)."""
    (host,) = hall.hosts
    match_id = new_id(host.workers, host.ordinal)
    await host.create(host_pb2.HostCreateRequest(
        match_id=match_id, game=GAME, players=[player, OUTSIDER], options_json=json.dumps({"start_points": 20}),
        token_sha256=[token(match_id, s) for s in (0, 1)], created_unix_ms=clock.now,
    ))  # fmt: skip
    await host.actors[match_id].command(token(match_id, 1), None, {"do": "resign"}, clock.now)
    return match_id


async def reads(hall: Hall, players: tuple[str, ...]) -> tuple[bytes, list[matches_pb2.RatingHistory], Any]:
    """What the public reads: the leaderboard's bytes, each player's history and rating, through the gateway."""
    stub = hall.client.stub
    board = await stub.GetLeaderboard(matches_pb2.GetLeaderboardRequest(game=GAME, limit=50))
    histories = [await stub.GetRatingHistory(matches_pb2.GetRatingHistoryRequest(player=p, game=GAME)) for p in players]
    ratings = [await stub.GetRating(matches_pb2.GetRatingRequest(player=p, game=GAME)) for p in players]
    return board.SerializeToString(), histories, ratings


async def nothing_shown(hall: Hall, players: tuple[str, ...], match_ids: list[str]) -> None:
    board, histories, ratings = await reads(hall, players)
    for name in players:
        assert name.encode() not in board, f"{name} is on the leaderboard"
    for history in histories:
        shown = history.SerializeToString()
        assert not history.changes and not any(m.encode() in shown for m in match_ids), "a change is in a history"
    assert all(r.games == 0 and r.mu == rating.DEFAULT_MU for r in ratings)


def lags() -> tuple[float, float]:
    """This process's rating-lag histogram for the game: (count, sum of seconds)."""
    labels = {"game": GAME}
    count = REGISTRY.get_sample_value("tablehall_rating_lag_seconds_count", labels) or 0.0
    return count, REGISTRY.get_sample_value("tablehall_rating_lag_seconds_sum", labels) or 0.0


@pytest.fixture(autouse=True)
def _rating_pool() -> Iterator[None]:
    """The embedded ratings' process pool is shut after each test, whatever the test did."""
    yield
    offload.shutdown()


async def rated_once(hall: Hall, players: tuple[str, ...], match_id: str) -> None:
    """Each of `players` has exactly one rated game: `match_id`."""
    _, histories, ratings = await reads(hall, players)
    assert [[c.match_id for c in h.changes] for h in histories] == [[match_id]] * len(players)
    assert [r.games for r in ratings] == [1] * len(players)


def sequence(table_ranks: list[int]) -> dict[str, tuple[float, float]]:
    """openskill's ratings after the table (seats `a`, `b`), then `a` beating the outsider."""
    d0 = rating.DEFAULT_MU, rating.DEFAULT_SIGMA
    a, b = rating.rate_ranks([d0, d0], tuple(table_ranks))
    a2, outsider = rating.rate_ranks([a, d0], (1, 2))
    return {"a": a2, "b": b, OUTSIDER: outsider}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_delayed_tables_rating_is_shown_only_with_its_result(backend: str, tmp_path: Path) -> None:
    clock = Clock()

    async def body(hall: Hall) -> None:
        tid, _, table = await a_tournament_table_ends(hall, DELAY_S, PAUSE_S)
        seated = await recorded(hall, tid)
        later = await casual(hall, clock, seated[0])
        everyone = (*seated, OUTSIDER)
        reveal = shown_from(hall, table, DELAY_S)
        jobs = EmbeddedJobs(hall.engine, None, clock=clock)

        clock.now = reveal - 1
        assert await jobs.rate(table) == "held"  # the host's hook, as the table ended
        assert await jobs.rate(later) == "held", "behind the held table: its `before` would give the result away"
        assert rating.backlog(hall.engine, now=clock.now) == [], "the backlog finds neither due"
        await jobs.tick()
        await nothing_shown(hall, everyone, [table, later])

        clock.now = reveal
        assert rating.backlog(hall.engine, now=clock.now) == [table], "the casual match is due after the table"
        lag_before = lags()
        await jobs.tick()
        # the lag counts from when each could first be rated (the reveal; the table's rating), not the end
        assert lags() == (lag_before[0] + 2, lag_before[1]), "rated at once when due: no lag"
        board, histories, ratings = await reads(hall, everyone)
        first, second, outsider = histories
        changes = {c.match_id: c for c in first.changes}  # rated at one instant: the history's order is the id's
        assert sorted(changes) == sorted([later, table]) and [c.match_id for c in second.changes] == [table]
        assert [c.match_id for c in outsider.changes] == [later]
        assert all(name.encode() in board for name in everyone)
        assert [r.games for r in ratings] == [2, 1, 1]
        # applied in end order: the casual match starts from the table's result
        assert (changes[later].mu_before, changes[later].sigma_before) == (
            changes[table].mu_after, changes[table].sigma_after
        )
        ranks = [changes[table].rank, second.changes[0].rank]
        want = sequence(ranks)
        got = {"a": ratings[0], "b": ratings[1], OUTSIDER: ratings[2]}
        for key, (mu, sigma) in want.items():
            assert (got[key].mu, got[key].sigma) == pytest.approx((mu, sigma))
        d0 = rating.DEFAULT_MU, rating.DEFAULT_SIGMA
        other_order = rating.rate_ranks([rating.rate_ranks([d0, d0], (1, 2))[0], d0], tuple(ranks))[0]
        assert other_order != pytest.approx(want["a"]), "the order matters here, so the test can tell"
        assert await jobs.rate(table) == "already"

    with database(backend, tmp_path) as url:
        run_hall(tmp_path, body, timeout=120, url=url, clock=clock)


def in_end_order(first: str, table_ranks: tuple[int, int]) -> dict[str, tuple[float, float]]:
    """openskill's ratings of the table's winner `w`, its loser `l` and the outsider (whom `w` beats), the
    table and the casual match rated in end order (`first` is `table` or `casual`): as with no delay."""
    d0 = rating.DEFAULT_MU, rating.DEFAULT_SIGMA
    if first == "table":
        w, loser = rating.rate_ranks([d0, d0], table_ranks)
        w, outsider = rating.rate_ranks([w, d0], (1, 2))
    else:
        w, outsider = rating.rate_ranks([d0, d0], (1, 2))
        w, loser = rating.rate_ranks([w, d0], table_ranks)
    return {"w": w, "l": loser, OUTSIDER: outsider}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("table_when_casual_ends", ["playing", "ended"])
def test_a_casual_match_does_not_tell_that_its_players_delayed_table_ended(
    backend: str, table_when_casual_ends: str, tmp_path: Path
) -> None:
    """The table's winner beats the outsider in a casual match that ends while the table still plays, or
    after it ended (its result hidden): either way the outsider's rating, history and the leaderboard show
    nothing of the casual match until the table's reveal, then both are rated in the order they ended."""
    clock = Clock()

    async def body(hall: Hall) -> None:
        tid, roles, table, names = await a_tournament_table_starts(hall, DELAY_S, PAUSE_S)
        winner, loser = names["won"], names["resigned"]
        everyone = (winner, loser, OUTSIDER)
        jobs = EmbeddedJobs(hall.engine, None, clock=clock)
        if table_when_casual_ends == "playing":
            later = await casual(hall, clock, winner)
            assert await jobs.rate(later) == "held", "rated now, it would tell that the table still plays"
            await jobs.tick()
            await nothing_shown(hall, everyone, [later])
            await resign(hall, roles, table)
            await recorded(hall, tid)
        else:
            await resign(hall, roles, table)
            await recorded(hall, tid)
            later = await casual(hall, clock, winner)
        reveal = shown_from(hall, table, DELAY_S)

        clock.now = reveal - 1
        assert await jobs.rate(table) == "held"
        assert await jobs.rate(later) == "held"
        with hall.engine.connect() as conn:
            held = holds.hold(conn, later, clock.now)
        assert held == holds.Hold("entered", reveal), "a Celery task is sent again for the reveal"
        assert rating.backlog(hall.engine, now=clock.now) == []
        await jobs.tick()
        await nothing_shown(hall, everyone, [table, later])

        clock.now = reveal
        first, second = (later, table) if table_when_casual_ends == "playing" else (table, later)
        assert rating.backlog(hall.engine, now=clock.now) == [first], "the one that ended first"
        lag_before = lags()
        await jobs.tick()
        assert lags() == (lag_before[0] + 2, lag_before[1]), "the lag counts from the reveal: rated at once"
        board, histories, ratings = await reads(hall, everyone)
        changes = {c.match_id: c for c in histories[0].changes}
        assert sorted(changes) == sorted([table, later])
        assert [c.match_id for c in histories[1].changes] == [table]
        assert [c.match_id for c in histories[2].changes] == [later]
        assert all(name.encode() in board for name in everyone)
        assert [r.games for r in ratings] == [2, 1, 1]
        after_first = (changes[first].mu_after, changes[first].sigma_after)
        assert (changes[second].mu_before, changes[second].sigma_before) == after_first, "applied in end order"
        table_ranks = (changes[table].rank, histories[1].changes[0].rank)
        assert table_ranks == (1, 2)
        want = in_end_order("casual" if first == later else "table", table_ranks)
        got = {"w": ratings[0], "l": ratings[1], OUTSIDER: ratings[2]}
        for key, (mu, sigma) in want.items():
            assert (got[key].mu, got[key].sigma) == pytest.approx((mu, sigma))
        other = in_end_order("table" if first == later else "casual", table_ranks)
        assert other["l"] != pytest.approx(want["l"]), "the order matters here (to the loser), so the test can tell"
        assert other[OUTSIDER] != pytest.approx(want[OUTSIDER])

    with database(backend, tmp_path) as url:
        run_hall(tmp_path, body, timeout=120, url=url, clock=clock)


def test_a_bye_does_not_tell_that_the_round_ended(tmp_path: Path) -> None:
    """Round 1's bye plays a casual match that ends while round 1's table plays: held until that table's
    reveal too. Rated at once, it would tell the table still plays: once the round ends the player sits at
    a table of round 2, which holds their matches."""
    clock = Clock()

    async def body(hall: Hall) -> None:
        tid, roles, table, names = await a_tournament_table_starts(hall, DELAY_S, PAUSE_S)
        resting = (names["bye"], OUTSIDER)
        jobs = EmbeddedJobs(hall.engine, None, clock=clock)
        later = await casual(hall, clock, names["bye"])
        assert await jobs.rate(later) == "held"
        await resign(hall, roles, table)
        await recorded(hall, tid)
        reveal = shown_from(hall, table, DELAY_S)
        clock.now = reveal - 1
        await jobs.tick()
        await nothing_shown(hall, resting, [later])
        clock.now = reveal
        await jobs.tick()
        await rated_once(hall, resting, later)

    run_hall(tmp_path, body, timeout=120, clock=clock)


def test_without_a_delay_the_table_is_rated_at_once(tmp_path: Path) -> None:
    clock = Clock()

    async def body(hall: Hall) -> None:
        tid, _, table = await a_tournament_table_ends(hall, 0)
        seated = await recorded(hall, tid)
        jobs = EmbeddedJobs(hall.engine, None, clock=clock)
        assert await jobs.rate(table) == "rated"
        await rated_once(hall, seated, table)

    run_hall(tmp_path, body, timeout=120, clock=clock)


def test_a_restart_between_the_end_and_the_reveal_still_rates_the_table(tmp_path: Path) -> None:
    """The table and its winner's casual match (which ended while the table played) are held when the service
    stops; the next service's backlog rates both at the reveal."""
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'hall.db'}"

    async def before_restart(hall: Hall) -> tuple[str, str, tuple[str, ...], int]:
        tid, roles, table, names = await a_tournament_table_starts(hall, DELAY_S, PAUSE_S)
        later = await casual(hall, clock, names["won"])
        await resign(hall, roles, table)
        await recorded(hall, tid)
        reveal = shown_from(hall, table, DELAY_S)
        clock.now = reveal - 1
        jobs = EmbeddedJobs(hall.engine, None, clock=clock)
        assert [await jobs.rate(table), await jobs.rate(later)] == ["held", "held"]
        return table, later, (names["won"], names["resigned"], OUTSIDER), reveal

    async def after_restart(hall: Hall) -> None:
        jobs = EmbeddedJobs(hall.engine, None, clock=clock)
        await jobs.tick()
        await nothing_shown(hall, everyone, [table, later])
        clock.now = reveal
        await jobs.tick()
        _, histories, ratings = await reads(hall, everyone)
        assert [sorted(c.match_id for c in h.changes) for h in histories] == [sorted([table, later]), [table], [later]]
        assert [r.games for r in ratings] == [2, 1, 1]

    table, later, everyone, reveal = run_hall(tmp_path, before_restart, timeout=120, url=url, clock=clock)
    run_hall(tmp_path, after_restart, timeout=120, url=url, clock=clock, organizer="Arbiter again")


REDIS = os.environ.get("TABLEHALL_TEST_DELAYED_REDIS_URL", "redis://127.0.0.1:6379/11")
"""A Redis database of this file's own: under pytest-xdist the other Celery tests run beside it, and each
empties its database before and after."""


@pytest.fixture
def broker() -> Iterator[str]:
    """This file's own Redis database, empty before and after."""
    yield from emptied(REDIS)


def test_a_celery_worker_rates_a_held_table_when_its_result_is_shown(broker: str, tmp_path: Path) -> None:
    """The task finds the table held and sends itself again for end + delay (no beat runs here, so no backlog):
    it is rated then, never before."""
    delay_s = 5
    with postgres_database() as url:
        log = tmp_path / "worker.log"
        worker = spawn(["-m", "celery", "-A", "ratings", "worker", "-c", "1", "-l", "INFO", "-n", "held@%h",
                        "--without-mingle", "--without-gossip"],
                       {"TABLEHALL_REDIS_URL": broker, "TABLEHALL_DATABASE_URL": url}, log)  # fmt: skip
        client = Celery(broker=broker)

        def results(match_id: str) -> list[str]:
            return [ln.rsplit(": ", 1)[1] for ln in log.read_text().splitlines() if f"match {match_id}: " in ln]

        try:
            client.send_task("ratings.rate", args=["0000000000000000"])  # the worker is up once it answers
            wait_for(lambda: results("0000000000000000") == ["unknown"], 120, "the worker to start")

            async def body(hall: Hall) -> tuple[str, int]:
                tid, _, table = await a_tournament_table_ends(hall, delay_s)
                client.send_task("ratings.rate", args=[table])  # as the worker process does when it ends
                await recorded(hall, tid)  # the director records the end (before or after the task runs)
                return table, shown_from(hall, table, delay_s)

            table, reveal = run_hall(tmp_path, body, timeout=120, url=url)
            wait_for(lambda: "rated" in results(table), 120, "the held table to be rated")
            assert set(results(table)[:-1]) <= {"held"} and results(table)[-1] == "rated", results(table)
            done = r.rated_matches
            with engine_for(url).connect() as conn:
                rated_at = conn.execute(select(done.c.rated_unix_ms).where(done.c.match_id == table)).scalar_one()
            assert rated_at >= reveal, "rated before its result was shown"
        finally:
            stop(worker)
