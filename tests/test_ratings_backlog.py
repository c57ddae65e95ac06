"""The rating backlog's read (`rating.backlog`) against the per-match hold it stands for (`holds.hold`), on
SQLite and PostgreSQL: the backlog ranks each player's unrated matches once (`holds.blocked`) instead of
asking, for each unrated match, about every match of its players; both must say the same thing of every
match. Random tables of finished, voided and running matches among a few players, some rated, some ended
before the window, some ending in the same millisecond, one player in two seats of a match."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, insert

from ratings import holds, rating
from ratings import models as r
from tests.storage_backends import SQL_BACKENDS, backend_for
from workers.sql import models as m
from workers.sql.migrate import engine_for

NOW = 1_800_000_000_000
PLAYERS = 5


@pytest.fixture(params=SQL_BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with backend_for(request.param, tmp_path) as b:
        assert b.url is not None
        made = engine_for(b.url)
        yield made
        made.dispose()


def _ended(rng: random.Random) -> int:
    """Mostly inside the window, some before it; few distinct values, so that ends tie."""
    if rng.random() < 0.15:
        return NOW - holds.ORDER_WINDOW_MS - rng.choice((1, 60_000, 3_600_000))
    return NOW - rng.choice((0, 1, 5, 1_000, 60_000, 60_000, 3_000_000))


def _seat(match_id: str, seat: int, player: int) -> dict[str, object]:
    return {"match_id": match_id, "seat": seat, "player_id": player, "token_sha256": bytes(32)}


def _rated(match_id: str) -> dict[str, object]:
    return {"match_id": match_id, "game": "spectacular-bid", "result": "rated", "rated_unix_ms": NOW}


def _fill(engine: Engine, rng: random.Random, count: int) -> None:
    players = [{"id": n + 1, "name": f"p{n}"} for n in range(PLAYERS)]
    matches, seats, rated = [], [], []
    for number in range(count):
        match_id = f"{number:04x}{rng.randrange(16**4):04x}"
        status = rng.choice(("finished", "finished", "finished", "voided", "in_progress"))
        matches.append({
            "id": match_id, "game": "spectacular-bid", "options": {}, "created_unix_ms": NOW - 10_000_000,
            "lot": 0, "partition": 0, "status": status, "void_reason": None, "deadline_unix_ms": None,
            "clock_running": False, "updated_unix_ms": _ended(rng),
        })  # fmt: skip
        who = rng.sample(range(1, PLAYERS + 1), 2)
        if rng.random() < 0.1:
            who = [who[0], who[0]]  # one player in both seats
        seats += [_seat(match_id, seat, player) for seat, player in enumerate(who)]
        if status == "finished" and rng.random() < 0.4:
            rated.append(_rated(match_id))
    with engine.begin() as conn:
        conn.execute(insert(m.Player.__table__), players)  # type: ignore[attr-defined]
        if not matches:
            return
        conn.execute(insert(m.MatchRow.__table__), matches)  # type: ignore[attr-defined]
        conn.execute(insert(m.SeatRow.__table__), seats)  # type: ignore[attr-defined]
        if rated:
            conn.execute(insert(r.rated_matches), rated)


def _due_one_by_one(engine: Engine) -> list[str]:
    """What the backlog must give: each finished, unrated match that `holds.hold` lets be rated, in end order."""
    t = m.MatchRow.__table__  # type: ignore[attr-defined]
    with engine.connect() as conn:
        rows = conn.execute(t.select().where(t.c.status == "finished")).mappings().all()
        done = {row[0] for row in conn.execute(r.rated_matches.select()).all()}
        unrated = sorted((row["updated_unix_ms"], row["id"]) for row in rows if row["id"] not in done)
        return [match_id for _, match_id in unrated if holds.hold(conn, match_id, NOW) is None]


@pytest.mark.parametrize("seed", range(6))
def test_the_backlog_gives_exactly_the_matches_the_hold_lets_be_rated(engine: Engine, seed: int) -> None:
    rng = random.Random(seed)
    _fill(engine, rng, 40)
    due = _due_one_by_one(engine)
    assert rating.backlog(engine, now=NOW) == due
    assert rating.backlog(engine, limit=3, now=NOW) == due[:3]


def test_a_chain_of_one_pair_gives_its_first_unrated_match_only(engine: Engine) -> None:
    """Every match between the same two players (the bench's `--same-players`): one is due at a time."""
    _fill(engine, random.Random(7), 0)
    t = m.MatchRow.__table__  # type: ignore[attr-defined]
    ids = [f"m{n:03d}" for n in range(30)]
    with engine.begin() as conn:
        conn.execute(insert(t), [{
            "id": match_id, "game": "spectacular-bid", "options": {}, "created_unix_ms": NOW - 100_000, "lot": 0,
            "partition": 0, "status": "finished", "void_reason": None, "deadline_unix_ms": None,
            "clock_running": False, "updated_unix_ms": NOW - 50_000 + n,
        } for n, match_id in enumerate(ids)])  # fmt: skip
        seats = [_seat(match_id, seat, seat + 1) for match_id in ids for seat in (0, 1)]
        conn.execute(insert(m.SeatRow.__table__), seats)  # type: ignore[attr-defined]
        conn.execute(insert(r.rated_matches), [_rated(match_id) for match_id in ids[:12]])
    assert rating.backlog(engine, now=NOW) == [ids[12]] == _due_one_by_one(engine)


def _subplan_loops(node: dict[str, Any]) -> Iterator[int]:
    """The loops of every correlated subplan in a PostgreSQL plan (its JSON form), at any depth."""
    if node.get("Parent Relationship") == "SubPlan" and not str(node.get("Subplan Name", "")).startswith("hashed"):
        yield int(node["Actual Loops"])
    for child in node.get("Plans", []):
        yield from _subplan_loops(child)


def test_the_holds_are_asked_of_the_unrated_matches_alone_however_many_have_been_rated() -> None:
    """300 finished matches in the holds' window, 290 of them rated: PostgreSQL runs no hold's subquery more
    times than there are unrated matches. Asked of every finished match, then joined against the rated ones
    (the planner's choice on tables it has no statistics of yet, as just after a start), the holds ran 400
    times for 22 unrated matches: 35 ms a read, growing with every match that ends."""
    with backend_for("postgresql", Path()) as b:
        assert b.url is not None
        made = engine_for(b.url)
        try:
            players = [{"id": n + 1, "name": f"p{n}"} for n in range(2 * 300)]
            matches = [{
                "id": f"m{n:04d}", "game": "spectacular-bid", "options": {}, "created_unix_ms": NOW - 100_000,
                "lot": 0, "partition": 0, "status": "finished", "void_reason": None, "deadline_unix_ms": None,
                "clock_running": False, "updated_unix_ms": NOW - 60_000 + n,
            } for n in range(300)]  # fmt: skip
            seats = [_seat(f"m{n:04d}", seat, 2 * n + seat + 1) for n in range(300) for seat in (0, 1)]
            with made.begin() as conn:
                conn.execute(insert(m.Player.__table__), players)  # type: ignore[attr-defined]
                conn.execute(insert(m.MatchRow.__table__), matches)  # type: ignore[attr-defined]
                conn.execute(insert(m.SeatRow.__table__), seats)  # type: ignore[attr-defined]
                conn.execute(insert(r.rated_matches), [_rated(f"m{n:04d}") for n in range(10, 300)])
            assert rating.backlog(made, 500, NOW) == [f"m{n:04d}" for n in range(10)]
            compiled = rating._backlog_query().compile(dialect=made.dialect)
            with made.connect() as conn:
                cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + str(compiled),
                               {**compiled.params, "now": NOW, "limit": 500})  # fmt: skip
                (plan,) = cursor.fetchone()
            loops = list(_subplan_loops(plan[0]["Plan"]))
            assert loops and max(loops) <= 10, loops
        finally:
            made.dispose()
