"""Player identity: a registered name and a key shown once, only its SHA-256 kept (like organizer keys).

A registered player is a row of `players` (where ratings, history and leaderboards hang) with a row of
`player_keys`. Calls of the Lobby carry the key as "authorization: Bearer <key>"; seats the Lobby makes
take the key's hash as their seat token's hash, so the key is the player's token at each such table.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, select
from sqlalchemy.exc import IntegrityError

from gateway.lobby import schema as s
from workers.errors import NameTaken, NotYourSeat
from workers.games.errors import MalformedAction, quote
from workers.sql import models as m
from workers.sql.engine import reading

KEY_PREFIX = "thp_"
"""Player keys read as such in logs and local storage (organizer keys: `tho_`)."""

NAME_MAX = 32
_NAME = re.compile(r"[\w.\-]+(?: [\w.\-]+)*")


@dataclass(frozen=True, slots=True)
class Player:
    id: int
    name: str


@dataclass(frozen=True, slots=True)
class Registered:
    player: Player
    key: str
    """Shown once: nothing else holds it afterwards."""


def key_sha256(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def checked_name(name: str) -> str:
    """A name of 1 to 32 letters, digits, '-', '_', '.' and single inner spaces."""
    if not 1 <= len(name) <= NAME_MAX:
        raise MalformedAction(f"a player name has 1 to {NAME_MAX} characters, not {len(name)}")
    if not _NAME.fullmatch(name):
        raise MalformedAction(f"{quote(name)} is no player name: letters, digits, '-', '_', '.' and single spaces")
    return name


def register(engine: Engine, name: str, now_ms: int) -> Registered:
    """A new player named `name` (no player of that name may exist: a name is one player's)."""
    name = checked_name(name)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        with engine.begin() as conn:
            taken = conn.execute(select(m.players.c.id).where(m.players.c.name == name)).first()
            if taken is not None:
                raise NameTaken(f"the name {quote(name)} belongs to a player already")
            player_id: int = conn.execute(m.players.insert().values(name=name).returning(m.players.c.id)).scalar_one()
            conn.execute(
                s.player_keys.insert().values(
                    player_id=player_id, key_sha256=key_sha256(key), registered_unix_ms=now_ms
                )
            )
    except IntegrityError:
        raise NameTaken(f"the name {quote(name)} belongs to a player already") from None
    return Registered(Player(int(player_id), name), key)


def player_by_key(engine: Engine, sha256: bytes) -> Player | None:
    k, p = s.player_keys, m.players
    query = select(p.c.id, p.c.name).select_from(k.join(p, p.c.id == k.c.player_id)).where(k.c.key_sha256 == sha256)
    with reading(engine) as conn:
        found = conn.execute(query).first()
    return None if found is None else Player(int(found[0]), str(found[1]))


def registered_names(engine: Engine, names: list[str]) -> dict[str, bytes]:
    """Which of `names` are registered players, with their key hashes (a seat for them needs their key)."""
    with reading(engine) as conn:
        found: Any = conn.execute(_registered_query(), {"names": names})
        return {str(name): bytes(sha) for name, sha in found}


@functools.cache
def _registered_query() -> Any:
    """Built once (every CreateMatch asks): building a statement costs more than running it."""
    k, p = s.player_keys, m.players
    joined = k.join(p, p.c.id == k.c.player_id)
    return select(p.c.name, k.c.key_sha256).select_from(joined).where(p.c.name.in_(bindparam("names", expanding=True)))


def check_names(engine: Engine, names: list[str], caller_sha256: bytes) -> None:
    """A match created by name (CreateMatch) may seat a registered player only when that player asks:
    their key as the bearer. Anyone else naming them would play under their identity and rating."""
    registered = registered_names(engine, names)
    for name, sha in registered.items():
        if sha != caller_sha256:
            raise NotYourSeat(f"{quote(name)} is a registered player: only their key may seat them by name")
