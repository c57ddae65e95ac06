"""Ratings in the database: a finished match rated once, numbers equal to openskill's, 501♠ ranks,
four-player tables, voids never rated, racing raters (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import hashlib
import random
import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openskill.models import PlackettLuce
from sqlalchemy import func, select

from protos.tablehall.v1 import host_pb2
from ratings import api, rating
from ratings import models as r
from tablehall.bots import choose
from tests.storage_backends import SQL_BACKENDS, backend_for
from workers.actor import unix_ms
from workers.games.engine import Millis, Seat
from workers.host import MatchHost
from workers.partitions import owner_of
from workers.sql import SqlStorage
from workers.sql.migrate import engine_for

SB_FAST = {"start_points": 20, "bank_s": 60, "delay_s": 10}
F501_FAST = {"start_score": 60}


@pytest.fixture(params=SQL_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with backend_for(request.param, tmp_path) as b:
        assert b.url is not None
        yield b.url


def token(match_id: str, seat: int) -> bytes:
    return hashlib.sha256(f"{match_id}/{seat}".encode()).digest()


def new_id(workers: int = 1, ordinal: int = 0) -> str:
    while True:
        match_id = secrets.token_hex(8)
        if owner_of(match_id, workers) == ordinal:
            return match_id


async def create(host: MatchHost, game: str, players: list[str], options: dict[str, Any]) -> str:
    match_id = new_id(host.workers, host.ordinal)
    await host.create(
        host_pb2.HostCreateRequest(
            match_id=match_id, game=game, players=players, options_json=__import__("json").dumps(options),
            token_sha256=[token(match_id, s) for s in range(len(players))], created_unix_ms=unix_ms(),
        )
    )
    return match_id


async def play_out(host: MatchHost, match_id: str, seed: int) -> dict[str, Any]:
    """Greedy bots play the match to its end through the actor (every step logged as in production)."""
    rng = random.Random(seed)
    actor = host.actors[match_id]
    seats = len(actor.entry.players)
    while not actor.match.over:
        for seat in range(seats):
            view = actor.game.view(actor.match.state, Seat(seat)).to_json()
            action = choose(view, rng, greedy=True)
            if action is not None:
                await actor.command(token(match_id, seat), None, action, unix_ms())
                break
        else:
            await asyncio.sleep(0.005)
    return actor.match.outcome()


def counts(url: str) -> tuple[int, int, int]:
    engine = engine_for(url)
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            int(conn.execute(select(func.count()).select_from(t)).scalar() or 0)
            for t in (r.rated_matches, r.rating_history, r.ratings)
        )


def run(body: Any) -> Any:
    return asyncio.run(asyncio.wait_for(body, 120))


async def hosted(url: str, body: Any, clock: Callable[[], int] = unix_ms) -> Any:
    storage = await SqlStorage.open(url)
    finished: list[str] = []
    host = MatchHost(storage, on_finished=finished.append, clock=clock)
    await host.start()
    try:
        return await body(host, finished)
    finally:
        host.close()
        await storage.close()


def expected(before: list[tuple[float, float]], ranks: Any) -> list[tuple[float, float]]:
    model = PlackettLuce()
    teams = [[model.rating(mu=mu, sigma=sigma)] for mu, sigma in before]
    return [(t[0].mu, t[0].sigma) for t in model.rate(teams, ranks=ranks)]


def flat(pairs: Any) -> list[float]:
    return [x for pair in pairs for x in pair]


def test_spectacular_bid_rated_once_as_openskill_computes(url: str) -> None:
    async def body(host: MatchHost, finished: list[str]) -> None:
        first = await create(host, "spectacular-bid", ["ann", "bob"], SB_FAST)
        out1 = await play_out(host, first, 1)
        assert finished == [first]  # the host's hook fires once, on the result
        engine = engine_for(url)
        assert rating.rate_match(engine, first) == "rated"
        for _ in range(3):
            assert rating.rate_match(engine, first) == "already"
        assert counts(url) == (1, 2, 2)
        d0 = rating.DEFAULT_MU, rating.DEFAULT_SIGMA
        ranks = [1 if seat == out1["winner"] else 2 for seat in (0, 1)]
        want = expected([d0, d0], ranks)
        got = [api.rating_of(engine, name, "spectacular-bid") for name in ("ann", "bob")]
        assert flat((g.mu, g.sigma) for g in got) == pytest.approx(flat(want))
        assert [g.games for g in got] == [1, 1]

        # a second match builds on the first ratings
        second = await create(host, "spectacular-bid", ["bob", "ann"], SB_FAST)
        out2 = await play_out(host, second, 2)
        assert rating.rate_match(engine, second) == "rated"
        ranks2 = [1 if seat == out2["winner"] else 2 for seat in (0, 1)]
        want2 = expected([want[1], want[0]], ranks2)
        bob, ann = (api.rating_of(engine, n, "spectacular-bid") for n in ("bob", "ann"))
        assert [bob.mu, bob.sigma, ann.mu, ann.sigma] == pytest.approx(flat(want2))
        history = api.history(engine, "ann", "spectacular-bid", 10)
        assert [h.match_id for h in history] == [second, first]
        assert [history[1].mu_after, history[1].sigma_after] == pytest.approx(list(want[0]))
        assert [history[0].mu_before, history[0].sigma_before] == pytest.approx(list(want[0]))
        board = api.leaderboard(engine, "spectacular-bid", 10)
        assert {b.player for b in board} == {"ann", "bob"} and all(b.games == 2 for b in board)
        assert board[0].ordinal >= board[1].ordinal
        assert api.rating_of(engine, "ann", "501").games == 0  # one rating per game

    run(hosted(url, body))


def test_501_four_players_all_rated_by_score(url: str) -> None:
    async def body(host: MatchHost, finished: list[str]) -> None:
        players = ["ann", "bob", "cid", "dee"]
        match_id = await create(host, "501", players, F501_FAST)
        outcome = await play_out(host, match_id, 3)
        engine = engine_for(url)
        assert rating.rate_match(engine, match_id) == "rated"
        scores = outcome["scores"]
        ranks = [1 + sum(o < s for o in scores) for s in scores]
        d0 = rating.DEFAULT_MU, rating.DEFAULT_SIGMA
        want = expected([d0] * 4, ranks)
        got = [api.rating_of(engine, p, "501") for p in players]
        assert flat((g.mu, g.sigma) for g in got) == pytest.approx(flat(want))
        assert all(g.games == 1 for g in got)
        assert [h.rank for p in players for h in api.history(engine, p, "501", 5)] == ranks

    run(hosted(url, body))


def test_a_void_is_never_rated(url: str) -> None:
    async def body(host: MatchHost, finished: list[str]) -> None:
        match_id = await create(host, "spectacular-bid", ["ann", "bob"], SB_FAST)
        actor = host.actors[match_id]
        for seat in (0, 1):
            await actor.command(token(match_id, seat), None, {"do": "ready"}, unix_ms())
        await actor.void("worker_down", Millis(unix_ms() - actor.entry.created_unix_ms))
        assert finished == []
        engine = engine_for(url)
        assert rating.rate_match(engine, match_id) == "voided"
        assert rating.backlog(engine) == []
        assert counts(url) == (0, 0, 0)

    run(hosted(url, body))


def test_racing_raters_change_ratings_once(url: str) -> None:
    async def body(host: MatchHost, finished: list[str]) -> list[str]:
        match_id = await create(host, "501", ["ann", "bob", "cid"], F501_FAST)
        await play_out(host, match_id, 4)
        return [match_id]

    (match_id,) = run(hosted(url, body))
    engine = engine_for(url)
    assert rating.backlog(engine) == [match_id]  # finished, not yet rated
    results: list[str] = []
    gate = threading.Barrier(8)

    def rater() -> None:
        gate.wait()
        results.append(rating.rate_match(engine, match_id))

    threads = [threading.Thread(target=rater) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["already"] * 7 + ["rated"]
    assert counts(url) == (1, 3, 3)
    assert all(api.rating_of(engine, p, "501").games == 1 for p in ("ann", "bob", "cid"))
    assert rating.backlog(engine) == []
