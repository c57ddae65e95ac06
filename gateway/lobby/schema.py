"""The Lobby's tables (revision `0005_lobby`), on the same metadata as the match tables.

- `player_keys`: a registered player's key, only its SHA-256; the player is a row of `players` (so
  ratings, history and leaderboards, which hang on `players.id`, are theirs).
- `lobby_queue`: one row per waiting player (the primary key refuses a second join), with the rating
  it joined with; `options` is the canonical JSON of the options, so equal options group together;
  `seen_unix_ms`: when a gateway last had the player's Seated stream open (or the join).
- `lobby_tables` / `lobby_seats`: a table the Lobby made (from the queue or a challenge), written before
  the worker is asked (`creating`), then `ready`; a seat names the ticket it came from.
- `lobby_challenges` / `challenge_takers`: open challenges and who took a seat.
- `lobby_leader`: the lease of the one pairing loop (name, owner, until, epoch).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Float, ForeignKey, Index, Integer, LargeBinary, String, Table

from workers.sql.models import metadata


def _player(constraint: str, primary_key: bool = False) -> Column[int]:
    return Column(
        "player_id", Integer, ForeignKey("players.id", name=constraint), primary_key=primary_key, nullable=False
    )


player_keys = Table(
    "player_keys",
    metadata,
    _player("fk_player_keys_player", primary_key=True),
    Column("key_sha256", LargeBinary(32), nullable=False, unique=True),
    Column("registered_unix_ms", BigInteger, nullable=False),
)

lobby_queue = Table(
    "lobby_queue",
    metadata,
    _player("fk_lobby_queue_player", primary_key=True),
    Column("ticket", String(32), nullable=False, unique=True),
    Column("game", String(32), nullable=False),
    Column("options", String(1024), nullable=False),
    Column("ordinal", Float, nullable=False),
    Column("joined_unix_ms", BigInteger, nullable=False),
    Column("seen_unix_ms", BigInteger, nullable=False),
    Index("ix_lobby_queue_game", "game", "joined_unix_ms"),
)

lobby_tables = Table(
    "lobby_tables",
    metadata,
    Column("match_id", String(64), primary_key=True),
    Column("game", String(32), nullable=False),
    Column("options", String(1024), nullable=False),
    Column("state", String(16), nullable=False),
    Column("gap", Float, nullable=False),
    Column("created_unix_ms", BigInteger, nullable=False),
    Index("ix_lobby_tables_state", "state"),
)

lobby_seats = Table(
    "lobby_seats",
    metadata,
    Column("match_id", String(64), ForeignKey("lobby_tables.match_id", name="fk_lobby_seats_table"), primary_key=True),
    Column("seat", Integer, primary_key=True, autoincrement=False),
    _player("fk_lobby_seats_player"),
    Column("ticket", String(32), nullable=False),
    Column("joined_unix_ms", BigInteger, nullable=False),
    Index("ix_lobby_seats_player", "player_id"),
)

lobby_challenges = Table(
    "lobby_challenges",
    metadata,
    Column("id", String(32), primary_key=True),
    _player("fk_lobby_challenges_player"),
    Column("game", String(32), nullable=False),
    Column("options", String(1024), nullable=False),
    Column("seats", Integer, nullable=False),
    Column("unlisted", Boolean, nullable=False),
    Column("state", String(16), nullable=False),
    Column("match_id", String(64), nullable=True),
    Column("opened_unix_ms", BigInteger, nullable=False),
    Index("ix_lobby_challenges_state", "state", "opened_unix_ms"),
)

challenge_takers = Table(
    "challenge_takers",
    metadata,
    Column("challenge_id", String(32), ForeignKey("lobby_challenges.id", name="fk_takers_challenge"), primary_key=True),
    _player("fk_takers_player", primary_key=True),
    Column("taken_unix_ms", BigInteger, nullable=False),
)

lobby_leader = Table(
    "lobby_leader",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("owner", String(128), nullable=False),
    Column("until_unix_ms", BigInteger, nullable=False),
    Column("epoch", BigInteger, nullable=False),
)
