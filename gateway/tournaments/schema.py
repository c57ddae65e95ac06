"""The tournament tables (revision `0003_tournaments`), SQLModel classes on the match tables' metadata.

- `organizers`: who may call the Tournaments API; only the SHA-256 of each key is kept.
- `batches`: one call's tables (CreateTables, or one round of a tournament, `attempt` > 0 for replays of
  voided tables). Written with every match id and seat-token hash *before* the workers are asked
  (status `creating`), so an interrupted batch can be sent again unchanged (creation is idempotent per
  match id), then `created` (or `cancelled`). `scheduled` counts the tables the workers confirmed.
- `batch_tables`: one row per match: its seats, and its result once it ended (`result`: the engine's
  outcome, RECORDS.md), so standings never replay a log twice, and when the match ended (`ended_unix_ms`).
- `tournaments`, `tournament_players` (seeding order; only the hash of each player's tournament token,
  which is also their seat token at each of their tables), `tournament_byes` (one row per bye).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, ForeignKey, Index, Integer, LargeBinary, String, UniqueConstraint
from sqlmodel import Field, SQLModel

from workers.sql.models import Json


def _tournament_key(constraint: str) -> Column[str]:
    """A tournament id column that is part of the primary key and references `tournaments`."""
    return Column(String(32), ForeignKey("tournaments.id", name=constraint), primary_key=True)


class OrganizerRow(SQLModel, table=True):
    __tablename__ = "organizers"
    __table_args__ = (
        UniqueConstraint("name", name="uq_organizers_name"),
        UniqueConstraint("key_sha256", name="uq_organizers_key"),
    )

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    name: str = Field(sa_column=Column(String(64), nullable=False))
    key_sha256: bytes = Field(sa_column=Column(LargeBinary(32), nullable=False))
    created_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class TournamentRow(SQLModel, table=True):
    __tablename__ = "tournaments"

    id: str = Field(sa_column=Column(String(32), primary_key=True))
    organizer_id: int = Field(
        sa_column=Column(Integer, ForeignKey("organizers.id", name="fk_tournaments_organizer"), nullable=False)
    )
    name: str = Field(sa_column=Column(String(128), nullable=False))
    game: str = Field(sa_column=Column(String(32), nullable=False))
    format: str = Field(sa_column=Column(String(16), nullable=False))
    rounds: int = Field(sa_column=Column(Integer, nullable=False))
    options: dict[str, Any] = Field(sa_column=Column(Json, nullable=False))
    voided: str = Field(sa_column=Column(String(8), nullable=False))
    manual: bool = Field(sa_column=Column(Boolean, nullable=False))
    round_pause_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    starts_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    status: str = Field(sa_column=Column(String(16), nullable=False))
    current_round: int = Field(sa_column=Column(Integer, nullable=False))
    created_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    spectator_delay_ms: int = Field(sa_column=Column(BigInteger, nullable=False, server_default="0"))
    """How late spectators see the tables (revision 0006); 0: live."""


class TournamentPlayerRow(SQLModel, table=True):
    __tablename__ = "tournament_players"
    __table_args__ = (
        UniqueConstraint("tournament_id", "name", name="uq_tournament_players_name"),
        UniqueConstraint("token_sha256", name="uq_tournament_players_token"),
    )

    tournament_id: str = Field(sa_column=_tournament_key("fk_tournament_players_tournament"))
    seed: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    name: str = Field(sa_column=Column(String(64), nullable=False))
    token_sha256: bytes = Field(sa_column=Column(LargeBinary(32), nullable=False))
    """Only the hash of the player's tournament token, also the hash of their seat at each of their tables."""


class TournamentByeRow(SQLModel, table=True):
    __tablename__ = "tournament_byes"

    tournament_id: str = Field(sa_column=_tournament_key("fk_tournament_byes_tournament"))
    round: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    player: str = Field(sa_column=Column(String(64), primary_key=True))


class BatchRow(SQLModel, table=True):
    __tablename__ = "batches"
    __table_args__ = (Index("ix_batches_tournament", "tournament_id", "round"),)

    id: str = Field(sa_column=Column(String(64), primary_key=True))
    organizer_id: int = Field(
        sa_column=Column(Integer, ForeignKey("organizers.id", name="fk_batches_organizer"), nullable=False)
    )
    tournament_id: str | None = Field(
        default=None,
        sa_column=Column(String(32), ForeignKey("tournaments.id", name="fk_batches_tournament"), nullable=True),
    )
    round: int | None = Field(default=None, sa_column=Column(Integer, nullable=True))
    attempt: int = Field(sa_column=Column(Integer, nullable=False))
    game: str = Field(sa_column=Column(String(32), nullable=False))
    options: dict[str, Any] = Field(sa_column=Column(Json, nullable=False))
    starts_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    status: str = Field(sa_column=Column(String(16), nullable=False))
    tables: int = Field(sa_column=Column(Integer, nullable=False))
    scheduled: int = Field(sa_column=Column(Integer, nullable=False))
    created_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    updated_unix_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class BatchTableRow(SQLModel, table=True):
    __tablename__ = "batch_tables"
    __table_args__ = (Index("ix_batch_tables_batch", "batch_id", "table_no"),)

    match_id: str = Field(sa_column=Column(String(64), primary_key=True))
    batch_id: str = Field(
        sa_column=Column(String(64), ForeignKey("batches.id", name="fk_batch_tables_batch"), nullable=False)
    )
    table_no: int = Field(sa_column=Column(Integer, nullable=False))
    players: list[str] = Field(sa_column=Column(Json, nullable=False))
    token_sha256: list[str] = Field(sa_column=Column(Json, nullable=False))
    """Hex SHA-256 of each seat's token (what the worker is sent again on a retry)."""
    status: str = Field(sa_column=Column(String(16), nullable=False))
    """playing until the match ended, then finished or voided."""
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(Json, nullable=True))
    ended_unix_ms: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    """When the match ended: its time origin plus the match time of its last step (revision 0007); what a
    spectator delay counts from."""


metadata = SQLModel.metadata
organizers = metadata.tables["organizers"]
tournaments = metadata.tables["tournaments"]
tournament_players = metadata.tables["tournament_players"]
tournament_byes = metadata.tables["tournament_byes"]
batches = metadata.tables["batches"]
batch_tables = metadata.tables["batch_tables"]
