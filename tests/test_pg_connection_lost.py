"""PostgreSQL ends the log writer's connection between two batches (a restart, an administrator, a network
cut): the batch that meets the dead connection fails as a storage error, and the next one commits on a new
connection. The batch's statements run on the driver's own cursor (`workers/sql/writes.py`), so the error
comes from the driver, not through SQLAlchemy: nothing half-written stays, nothing is written twice."""

from __future__ import annotations

import psycopg
import pytest

from tests.storage_backends import _psycopg_dsn, postgres_database, run
from tests.test_storage_contract import RUNNING, match, step
from workers.sql import SqlStorage

P = 7


def _end_other_connections(url: str) -> int:
    """Terminate every other connection to the test database (the writer's among them); how many."""
    with psycopg.connect(_psycopg_dsn(url), autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(ended)


def test_a_batch_on_a_connection_postgres_ended_fails_and_the_next_commits() -> None:
    with postgres_database() as url:

        async def body() -> None:
            storage = await SqlStorage.open(url)
            try:
                epoch = (await storage.claim("w0", [P]))[P]
                await storage.create(match("m1"), epoch)
                await storage.append_all("m1", P, epoch, [step(1), step(2)], RUNNING)
                assert _end_other_connections(url) >= 1
                with pytest.raises(Exception, match="connection"):  # the writer keeps its connection: it meets it
                    await storage.append_all("m1", P, epoch, [step(3)], RUNNING)
                assert [e.seq for e in await storage.log("m1")] == [1, 2]
                await storage.append_all("m1", P, epoch, [step(3)], RUNNING)
                await storage.append_all("m1", P, epoch, [step(4)], RUNNING)
                assert [e.seq for e in await storage.log("m1")] == [1, 2, 3, 4]
            finally:
                await storage.close()

        run(body)
