"""The schema comes from the Alembic migrations: upgrade from empty, downgrade to base and up again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

import gateway.lobby.schema
import gateway.tournaments.schema  # noqa: F401 - its tables (0003_tournaments) join the same metadata
import ratings.models  # noqa: F401 - its tables (0002_ratings) join the same metadata
from tests.storage_backends import SQL_BACKENDS, backend_for, run
from tests.test_storage_contract import RUNNING, match, step
from workers.sql import SqlStorage, make_engine
from workers.sql.migrate import current, downgrade, head, migrate
from workers.sql.models import metadata

TABLES = {
    "players", "matches", "seats", "events", "snapshots", "partitions", "workers",
    "ratings", "rating_history", "rated_matches",
    "organizers", "tournaments", "tournament_players", "tournament_byes", "batches", "batch_tables",
    "player_keys", "lobby_queue", "lobby_tables", "lobby_seats", "lobby_challenges", "challenge_takers",
    "lobby_leader",
}


@pytest.fixture(params=SQL_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with backend_for(request.param, tmp_path) as b:
        assert b.url is not None
        yield b.url


def tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def assert_at_head(url: str) -> None:
    engine = make_engine(url)
    try:
        assert current(engine) == head() == "0007_table_ended"
        with engine.connect() as conn:
            # The migrations build exactly what the models describe (types, indexes, constraints).
            assert compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata) == []
        indexes = {ix["name"] for ix in inspect(engine).get_indexes("matches")}
        assert {"ix_matches_status_deadline", "ix_matches_partition_status"} <= indexes
    finally:
        engine.dispose()


def test_upgrade_from_empty(url: str) -> None:
    assert tables(url) == set()
    migrate(url)
    assert tables(url) == TABLES | {"alembic_version"}
    assert_at_head(url)
    migrate(url)  # at head already: nothing to do
    assert_at_head(url)


def test_downgrade_to_base_and_upgrade_again(url: str) -> None:
    s = SqlStorage(url)  # migrates on start
    run(lambda: s.create(match("m1"), 0))
    run(lambda: s.append("m1", 7, 0, step(1), RUNNING))
    run(s.close)
    downgrade(url)
    assert tables(url) == {"alembic_version"}
    engine = make_engine(url)
    assert current(engine) is None
    engine.dispose()
    migrate(url)
    assert_at_head(url)
    again = SqlStorage(url)
    assert run(lambda: again.log("m1")) == []
    run(lambda: again.create(match("m1"), 0))
    run(lambda: again.append("m1", 7, 0, step(1), RUNNING))
    assert run(lambda: again.log("m1")) == [step(1)]
    run(again.close)
