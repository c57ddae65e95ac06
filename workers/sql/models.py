"""The tables of the durable store, as SQLModel classes (SQLAlchemy 2 underneath).

The schema itself is only ever created by the Alembic migrations in `migrations/versions/`; this
metadata is what `env.py` hands Alembic and what the storage queries are written against. A test
checks that the migrations and these models agree.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    Executable,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

Json = JSON()
"""`json`, not `jsonb`, on PostgreSQL: an action or a deal comes back exactly as written, keys in order."""


def _match_key(constraint: str) -> Column[str]:
    """A match id column that is (part of) the primary key and references `matches`."""
    return Column(String(64), ForeignKey("matches.id", ondelete="CASCADE", name=constraint), primary_key=True)


class Player(SQLModel, table=True):
    __tablename__ = "players"
    __table_args__ = (UniqueConstraint("name", name="uq_players_name"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    name: str = Field(sa_column=Column(String(64), nullable=False))


class MatchRow(SQLModel, table=True):
    __tablename__ = "matches"
    __table_args__ = (
        Index("ix_matches_status_deadline", "status", "deadline_unix_ms"),
        Index("ix_matches_partition_status", "partition", "status"),
    )

    id: str = Field(sa_column=Column(String(64), primary_key=True))
    game: str = Field(sa_column=Column(String(32), nullable=False))
    options: dict[str, Any] = Field(sa_column=Column(Json, nullable=False))
    created_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    lot: int = Field(sa_column=Column(Integer, nullable=False))
    partition: int = Field(sa_column=Column(Integer, nullable=False))
    status: str = Field(sa_column=Column(String(16), nullable=False))
    void_reason: str | None = Field(default=None, sa_column=Column(String(64), nullable=True))
    deadline_unix_ms: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    clock_running: bool = Field(default=False, nullable=False)
    updated_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class SeatRow(SQLModel, table=True):
    __tablename__ = "seats"
    __table_args__ = (Index("ix_seats_player", "player_id"),)

    match_id: str = Field(sa_column=_match_key("fk_seats_match"))
    seat: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    player_id: int = Field(sa_column=Column(Integer, ForeignKey("players.id", name="fk_seats_player"), nullable=False))
    token_sha256: bytes = Field(sa_column=Column(LargeBinary(32), nullable=False))
    """Only the hash of the seat token: the token itself is shown once to the match's creator."""


class EventRow(SQLModel, table=True):
    """One log entry; (match_id, seq) is the primary key, so a sequence number is unique per match."""

    __tablename__ = "events"

    match_id: str = Field(sa_column=_match_key("fk_events_match"))
    seq: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    change: int = Field(sa_column=Column(Integer, nullable=False))
    kind: str = Field(sa_column=Column(String(16), nullable=False))
    seat: int | None = Field(default=None, sa_column=Column(Integer, nullable=True))
    action: dict[str, Any] = Field(sa_column=Column(Json, nullable=False))
    t_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    written_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    epoch: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    """The partition's epoch the step was written with (absent on steps written before leases)."""


class SnapshotRow(SQLModel, table=True):
    __tablename__ = "snapshots"

    match_id: str = Field(sa_column=_match_key("fk_snapshots_match"))
    seq: int = Field(sa_column=Column(Integer, nullable=False))
    blob: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    written_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class PartitionRow(SQLModel, table=True):
    """Who owns a partition, with the fencing epoch every write of its matches is checked against. An
    empty owner: released (a hand-off); `claimed_unix_ms` is when it was last claimed or released."""

    __tablename__ = "partitions"

    partition: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    owner: str = Field(sa_column=Column(String(128), nullable=False))
    epoch: int = Field(sa_column=Column(BigInteger, nullable=False))
    claimed_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class WorkerRow(SQLModel, table=True):
    """A worker process: its last heartbeat (its leases hold while it is recent; recovery measures an
    outage from it), where it listens, and its state: active, draining (handing its partitions over),
    gone (left after handing everything over) or down (marked by a gateway that could not reach it)."""

    __tablename__ = "workers"

    owner: str = Field(sa_column=Column(String(128), primary_key=True))
    heartbeat_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    address: str = Field(default="", sa_column=Column(String(256), nullable=False, server_default=""))
    state: str = Field(default="active", sa_column=Column(String(16), nullable=False, server_default="active"))
    joined_unix_ms: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, server_default="0"))


metadata = SQLModel.metadata
players = metadata.tables["players"]
matches = metadata.tables["matches"]
seats = metadata.tables["seats"]
events = metadata.tables["events"]
snapshots = metadata.tables["snapshots"]
partitions = metadata.tables["partitions"]
workers = metadata.tables["workers"]


def rows(conn: Connection, query: Executable) -> list[Any]:
    """The rows of a query, untyped (the columns' Python types are those of the tables above)."""
    return list(conn.execute(query).all())  # one fetchall, not a fetch per row
