"""The one pairing loop: a lease row in the database (`lobby_leader`), taken by compare-and-set.

Every gateway (and `tablehall serve`) runs a pairing loop; a beat takes the lease when it has run out and
the holder's beat extends it once half of it is used (`renewal_due`), and only the holder pairs.
Correctness does not rest on it — a table is claimed by deleting its players' queue rows, which two loops
cannot both do — the lease keeps the others from doing the work twice and from contending on the same
rows. Chosen over a Celery beat task: pairing wants a beat of a fraction of a second, beat's schedule is
coarser and adds a broker hop, and `tablehall serve` has none.
"""

from __future__ import annotations

import os
import secrets
import socket

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from gateway.lobby import schema as s
from workers.sql.engine import reading

NAME = "pairing"


def owner_name() -> str:
    return f"lobby-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def hold(engine: Engine, owner: str, now_ms: int, lease_ms: int) -> int:
    """Take or extend the lease until `now_ms + lease_ms`: that time while `owner` holds it, else 0. A beat
    that finds the lease another's and running only reads it (on SQLite, no write lock: the match log's
    writer needs that lock for every batch)."""
    t = s.lobby_leader
    with reading(engine) as conn:
        found = conn.execute(select(t.c.owner, t.c.until_unix_ms).where(t.c.name == NAME)).first()
    if found is not None and found.owner != owner and found.until_unix_ms >= now_ms:
        return 0
    until = now_ms + lease_ms
    with engine.begin() as conn:
        taken = conn.execute(
            t.update()
            .where(t.c.name == NAME, (t.c.owner == owner) | (t.c.until_unix_ms < now_ms))
            .values(owner=owner, until_unix_ms=until, epoch=t.c.epoch + 1)
        ).rowcount
        if taken:
            return until
        exists = conn.execute(select(t.c.owner).where(t.c.name == NAME)).first()
    if exists is not None:
        return 0
    try:
        with engine.begin() as conn:
            conn.execute(t.insert().values(name=NAME, owner=owner, until_unix_ms=until, epoch=1))
    except IntegrityError:
        return 0  # another loop inserted it first
    return until


def renewal_due(until_ms: int, now_ms: int, lease_ms: int) -> bool:
    """Whether a loop whose lease runs until `until_ms` (0: none) renews it at `now_ms`: once half of it is
    used, so the holder writes once every half lease, not once a beat, and a late beat still finds it held."""
    return now_ms >= until_ms - lease_ms // 2


def release(engine: Engine, owner: str) -> None:
    """Let the next loop take over at once (a clean stop)."""
    t = s.lobby_leader
    with engine.begin() as conn:
        conn.execute(t.update().where(t.c.name == NAME, t.c.owner == owner).values(until_unix_ms=0))


def holder(engine: Engine) -> str | None:
    t = s.lobby_leader
    with reading(engine) as conn:
        return conn.scalar(select(t.c.owner).where(t.c.name == NAME))
