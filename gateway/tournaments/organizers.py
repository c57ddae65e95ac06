"""Organizer identity: a random key shown once when it is made, only its SHA-256 kept (like seat tokens).

`tablehall organizer create NAME` writes one to the database the service uses; the gateway then accepts
"authorization: Bearer <key>" on Tournaments calls and knows which organizer is calling.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from gateway.tournaments import schema as s
from workers.games.errors import MalformedAction, quote
from workers.sql.engine import reading

KEY_PREFIX = "tho_"
"""Organizer keys read as such in logs and configs (seat and player tokens have no prefix)."""


@dataclass(frozen=True, slots=True)
class Organizer:
    id: int
    name: str


class OrganizerExists(MalformedAction):
    """Names are unique: a second organizer of the same name would be ambiguous in every listing."""


def key_sha256(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def create_organizer(engine: Engine, name: str) -> str:
    """A new organizer; returns its key, which exists nowhere else afterwards."""
    name = name.strip()
    if not 1 <= len(name) <= 64:
        raise MalformedAction("an organizer needs a name of 1 to 64 characters")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = {"name": name, "key_sha256": key_sha256(key), "created_unix_ms": time.time_ns() // 1_000_000}
    try:
        with engine.begin() as conn:
            conn.execute(s.organizers.insert().values(**row))
    except IntegrityError:
        raise OrganizerExists(f"an organizer named {quote(name)} exists already") from None
    return key


def organizer_by_key(engine: Engine, sha256: bytes) -> Organizer | None:
    t = s.organizers
    with reading(engine) as conn:
        found = conn.execute(select(t.c.id, t.c.name).where(t.c.key_sha256 == sha256)).first()
    return None if found is None else Organizer(int(found[0]), str(found[1]))
