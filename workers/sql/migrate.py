"""Schema changes through Alembic, run from code (`migrate(url)`) or from the command line.

    python -m workers.sql [--url URL] [upgrade|downgrade] [REVISION]

(URL defaults to `TABLEHALL_DATABASE_URL`; upgrade to `head`, downgrade to `base`.)
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from workers.sql.engine import database_url, make_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _run(url: str, engine: Engine | None, upgrade: bool, revision: str) -> None:
    config = alembic_config(url)
    own = engine is None
    engine = engine or make_engine(url)
    try:
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            if upgrade:
                command.upgrade(config, revision)
            else:
                command.downgrade(config, revision)
            connection.commit()
    finally:
        if own:
            engine.dispose()


def migrate(url: str, engine: Engine | None = None, revision: str = "head") -> None:
    """Upgrade the database at `url` to `revision` (several processes may do this at once)."""
    _run(url, engine, True, revision)


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    """One migrated engine per database URL per process, for whoever reads and writes beside the match log
    (ratings, tournaments, organizers); created on first use, so after a Celery fork."""
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = make_engine(url)
            migrate(url, engine)
            _engines[url] = engine
        return engine


def downgrade(url: str, engine: Engine | None = None, revision: str = "base") -> None:
    _run(url, engine, False, revision)


def head() -> str:
    revision = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert revision is not None
    return revision


def current(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workers.sql", description=__doc__)
    parser.add_argument("--url", default=None, help="database URL (default: TABLEHALL_DATABASE_URL)")
    parser.add_argument("direction", nargs="?", choices=["upgrade", "downgrade"], default="upgrade")
    parser.add_argument("revision", nargs="?", default=None)
    args = parser.parse_args(argv)
    url = args.url or database_url()
    if args.direction == "upgrade":
        migrate(url, revision=args.revision or "head")
    else:
        downgrade(url, revision=args.revision or "base")
    engine = make_engine(url)
    try:
        print(f"{engine.url.render_as_string(hide_password=True)}: at revision {current(engine)}")
    finally:
        engine.dispose()

