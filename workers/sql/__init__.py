"""The durable storage: SQLModel tables, Alembic migrations, group-committed writes (see `storage`)."""

from workers.sql.engine import DEFAULT_DATABASE_URL, database_url, make_engine
from workers.sql.migrate import migrate
from workers.sql.storage import SqlStorage

__all__ = ["DEFAULT_DATABASE_URL", "SqlStorage", "database_url", "make_engine", "migrate"]
