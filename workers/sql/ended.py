"""Ended matches read from the database: each match's row, seats and log (the queries recovery and
`GetRecord` use, snapshot included) replayed through the engine, with the record, outcome and placements.

The log is the truth, so nothing extra is written when a match ends: ratings, tournament tables and
records all read an ended match here, whichever worker (or none, after a restart) held it.
A few queries serve any number of matches.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, select

from workers.games.catalog import game_named
from workers.games.engine import JSON, Placement, Rules
from workers.games.records import Match
from workers.replay_log import Position, restored
from workers.sql import models as m
from workers.sql.reads import ENDED, Selection, stored

BATCH = 500
"""Match ids per query (well under every driver's parameter limit)."""


@dataclass(frozen=True, slots=True)
class Ended:
    """A finished or voided match as its log replays."""

    match_id: str
    game: Rules[Any, Any, Any]
    status: str
    """The match row's: finished or voided."""
    player_ids: tuple[int, ...]
    """Per seat."""
    position: Position
    updated_unix_ms: int
    """When the match's last log write happened (its end), on the storage's clock."""
    origin_unix_ms: int = 0
    """The match's time origin (its start), on its worker's clock."""

    @property
    def ended_unix_ms(self) -> int:
        """When the match ended on its worker's clock: the origin plus the match time of its last step."""
        return self.origin_unix_ms + int(self.match.now)

    @property
    def match(self) -> Match:
        return self.position.match

    def outcome(self) -> dict[str, JSON]:
        return self.match.outcome()

    def placements(self) -> tuple[Placement, ...] | None:
        """Each seat's place, if the log ends in a result (None for a void)."""
        return self.game.placements(self.match.state)

    def record(self) -> dict[str, JSON]:
        """The record as `GetRecord` gives it: RECORDS.md plus the match id and the deal commitments."""
        return self.position.record(self.match_id)


def statuses(conn: Connection, match_ids: Sequence[str]) -> dict[str, str]:
    """The status of each match that exists (in_progress, finished, voided)."""
    out: dict[str, str] = {}
    for start in range(0, len(match_ids), BATCH):
        found: Any = conn.execute(column_of("status"), {"ids": list(match_ids[start : start + BATCH])})
        out.update({str(i): str(s) for i, s in found})
    return out


@functools.cache
def column_of(name: str) -> Any:
    """The id and one column of each match among `ids`: built once per column, as `_players_query` (a rating
    asks for every match)."""
    t = m.matches
    return select(t.c.id, t.c[name]).where(t.c.id.in_(bindparam("ids", expanding=True)))


@functools.cache
def _players_query() -> Any:
    """Each seat's player of the ended matches among `ids`, with the match's last write; built once (building
    it cost more than running it)."""
    t, s = m.matches, m.seats
    query = select(s.c.match_id, s.c.seat, s.c.player_id, t.c.updated_unix_ms).join(t, t.c.id == s.c.match_id)
    return query.where(t.c.id.in_(bindparam("ids", expanding=True)), t.c.status.in_(ENDED))


def ended(conn: Connection, match_ids: Sequence[str]) -> list[Ended]:
    """The matches among `match_ids` that ended, each replayed from its log."""
    out: list[Ended] = []
    for start in range(0, len(match_ids), BATCH):
        out.extend(_ended(conn, list(match_ids[start : start + BATCH])))
    return out


def _ended(conn: Connection, ids: list[str]) -> list[Ended]:
    found = stored(conn, Selection.ENDED_AMONG, ids)
    if not found:
        return []
    players: dict[str, list[tuple[int, int]]] = defaultdict(list)
    updated: dict[str, int] = {}
    found_players: Any = conn.execute(_players_query(), {"ids": ids})
    for match_id, seat, player_id, updated_unix_ms in found_players:
        players[match_id].append((seat, int(player_id)))
        updated[match_id] = int(updated_unix_ms)
    out = []
    for match in found:
        entry = match.entry
        game = game_named(entry.game)
        assert game is not None
        seated = tuple(pid for _, pid in sorted(players[entry.match_id]))
        position = restored(game, match)
        out.append(
            Ended(
                entry.match_id, game, match.progress.status, seated, position, updated[entry.match_id],
                entry.created_unix_ms,
            )
        )
    return out
