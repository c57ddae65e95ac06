"""What tables ended with, read from the database: the match log replayed through the engine.

Like the rating job (ratings/rating.py), nothing extra is written when a match ends: its log is the
truth, so a table's result and record are the same whichever worker (or none, after a restart) holds it.
A few queries serve any number of matches (their rows, seats and logs, selected by id).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select

from workers.games.catalog import game_named
from workers.games.engine import JSON
from workers.replay_log import Position, fresh, step
from workers.sql import models as m
from workers.sql.models import rows
from workers.storage import LogEntry, MatchEntry

ENDED = ("finished", "voided")
BATCH = 500
"""Match ids per query (well under every driver's parameter limit)."""


@dataclass(frozen=True, slots=True)
class Replayed:
    match_id: str
    status: str
    position: Position

    @property
    def outcome(self) -> dict[str, JSON]:
        return self.position.match.outcome()

    def record(self) -> dict[str, JSON]:
        """The record as `GetRecord` gives it: RECORDS.md plus the match id and the deal commitments."""
        record = self.position.match.record()
        record["match_id"] = self.match_id
        record["commitments"] = [
            {"deal": i, "salt": c.salt.hex(), "sha256": c.sha256} for i, c in enumerate(self.position.commitments)
        ]
        return record


def statuses(conn: Connection, match_ids: Sequence[str]) -> dict[str, str]:
    """The status of each match that exists (in_progress, finished, voided)."""
    t = m.matches
    out: dict[str, str] = {}
    for start in range(0, len(match_ids), BATCH):
        chunk = list(match_ids[start : start + BATCH])
        out.update({str(i): str(s) for i, s in rows(conn, select(t.c.id, t.c.status).where(t.c.id.in_(chunk)))})
    return out


def replayed(conn: Connection, match_ids: Sequence[str]) -> list[Replayed]:
    """The matches among `match_ids` that ended, each replayed from its log."""
    out: list[Replayed] = []
    for start in range(0, len(match_ids), BATCH):
        out.extend(_replayed(conn, list(match_ids[start : start + BATCH])))
    return out


def _replayed(conn: Connection, ids: list[str]) -> list[Replayed]:
    t, s, pl, ev = m.matches, m.seats, m.players, m.events
    found = rows(
        conn,
        select(t.c.id, t.c.game, t.c.options, t.c.created_unix_ms, t.c.lot, t.c.partition, t.c.status)
        .where(t.c.id.in_(ids), t.c.status.in_(ENDED)),
    )
    if not found:
        return []
    ended = [row[0] for row in found]
    names: dict[str, list[tuple[int, str]]] = defaultdict(list)
    query = select(s.c.match_id, s.c.seat, pl.c.name).join(pl, pl.c.id == s.c.player_id).where(s.c.match_id.in_(ended))
    for match_id, seat, name in rows(conn, query):
        names[match_id].append((seat, name))
    logs: dict[str, list[LogEntry]] = defaultdict(list)
    query = (
        select(ev.c.match_id, ev.c.seq, ev.c.change, ev.c.kind, ev.c.seat, ev.c.action, ev.c.t_ms)
        .where(ev.c.match_id.in_(ended))
        .order_by(ev.c.match_id, ev.c.seq)
    )
    for match_id, *entry in rows(conn, query):
        logs[match_id].append(LogEntry(*entry))
    out = []
    for match_id, game_name, options, created, lot, partition, status in found:
        game = game_named(game_name)
        assert game is not None
        players = tuple(name for _, name in sorted(names[match_id]))
        position = fresh(game, MatchEntry(match_id, game_name, players, options, (), created, lot, partition))
        for entry in logs[match_id]:
            step(game, position, entry)
        out.append(Replayed(match_id, str(status), position))
    return out
