"""The storages the storage suites run against: memory, SQLite in a temp file, PostgreSQL.

PostgreSQL: `TABLEHALL_TEST_POSTGRES_URL` (default the local server, user postgres, trust auth) is the
admin connection; every test gets a database of its own, created empty and dropped afterwards. When the
server cannot be reached the PostgreSQL tests skip on a developer's machine and FAIL under CI (`CI`
set), where `.ci/run` starts the server.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy.engine import make_url

from workers.sql import SqlStorage
from workers.storage import MemoryStorage, Storage

T = TypeVar("T")

PG_ADMIN_URL = os.environ.get("TABLEHALL_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
BACKENDS = ["memory", "sqlite", "postgresql"]
SQL_BACKENDS = ["sqlite", "postgresql"]


def run(body: Callable[[], Awaitable[T]], timeout: float = 60.0) -> T:
    async def main() -> T:
        return await asyncio.wait_for(body(), timeout)

    return asyncio.run(main())


def _psycopg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh, empty database on the test server; its SQLAlchemy URL. Dropped afterwards."""
    import psycopg

    try:
        admin = psycopg.connect(_psycopg_dsn(PG_ADMIN_URL), autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must start it: .ci/run)")
        pytest.skip(message)
    name = f"tablehall_test_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Backend:
    """Opens storages on one store; `open()` again is a re-open of the same data (a restarted process)."""

    def __init__(self, name: str, url: str | None) -> None:
        self.name = name
        self.url = url
        self.memory = MemoryStorage()

    async def open(self, **kwargs: Any) -> Storage:
        if self.url is None:
            return self.memory
        return await SqlStorage.open(self.url, **kwargs)


@contextmanager
def backend_for(name: str, tmp_path: Path) -> Iterator[Backend]:
    if name == "memory":
        yield Backend(name, None)
    elif name == "sqlite":
        yield Backend(name, f"sqlite:///{tmp_path / 'tablehall.db'}")
    else:
        with postgres_database() as url:
            yield Backend(name, url)
