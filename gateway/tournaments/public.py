"""What the public sees of a tournament whose spectators are delayed (pure; `now` passed in).

A table's result is shown once `ended_unix_ms + delay` has passed; until then the table reads as still
playing, so the standings, the round's counts and the tournament's status are those of the tournament
before that result. What came of the hidden results is hidden with them: a round (or a replay of voided
tables) is shown only once every table before it shows its result, since its pairings were made from
them. A player of the tournament sees their own tables' results at once (a seat is never delayed), and
everyone else's at the delay; its organizer sees everything live. The director itself always works on the
whole snapshot.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gateway.tournaments.store import Snapshot, TableRow

ENDED = ("finished", "voided")


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who looks at a tournament: its organizer (everything live), a player (their own tables live), or the
    public (neither)."""

    organizer: bool = False
    player: str | None = None


PUBLIC = Viewer()
ORGANIZER = Viewer(organizer=True)


def shown_from_ms(table: TableRow, delay_ms: int) -> int:
    """When the public may see the table's result (0: at once — a table recorded before ends were kept)."""
    return 0 if table.ended_unix_ms is None else table.ended_unix_ms + delay_ms


def _hidden(table: TableRow, delay_ms: int, now_ms: int, viewer: Viewer) -> bool:
    """A table that ended but whose result the viewer may not see yet."""
    if viewer.organizer or table.status not in ENDED or (viewer.player is not None and viewer.player in table.players):
        return False
    return shown_from_ms(table, delay_ms) > now_ms


def seen(snap: Snapshot, now_ms: int, viewer: Viewer = PUBLIC) -> Snapshot:
    """The snapshot as `viewer` may see it at `now_ms` (itself when nothing is held back)."""
    delay = snap.tournament.spectator_delay_ms
    if delay <= 0 or viewer.organizer:
        return snap
    shown_batches: set[str] = set()
    hidden: set[str] = set()
    blocked = False
    """Set from the first batch with a table whose result is not shown: later batches were planned from it."""
    by_batch: dict[str, list[TableRow]] = {}
    for table in snap.tables:
        by_batch.setdefault(table.batch_id, []).append(table)
    for batch in sorted(snap.batches, key=lambda b: (b.round or 0, b.attempt)):
        if blocked:
            break
        shown_batches.add(batch.id)
        for table in by_batch.get(batch.id, ()):
            if _hidden(table, delay, now_ms, viewer):
                hidden.add(table.match_id)
            if table.status not in ENDED or table.match_id in hidden:
                blocked = True
    batches = [b for b in snap.batches if b.id in shown_batches]
    tables = [
        dataclasses.replace(x, status="playing", result=None, ended_unix_ms=None) if x.match_id in hidden else x
        for x in snap.tables
        if x.batch_id in shown_batches
    ]
    hidden_any = bool(hidden) or len(batches) < len(snap.batches)
    if not hidden_any:
        return snap
    shown_round = max((b.round or 0 for b in batches), default=0)
    tournament = dataclasses.replace(
        snap.tournament, current_round=shown_round,
        status="running" if snap.tournament.status == "finished" else snap.tournament.status,
    )  # fmt: skip
    byes = {number: names for number, names in snap.byes.items() if number <= shown_round}
    return Snapshot(tournament, tuple(batches), tuple(tables), byes)


def next_reveal_ms(snap: Snapshot, now_ms: int, viewer: Viewer = PUBLIC) -> int | None:
    """The next instant at which the viewer's view of the tournament changes by the clock alone (a hidden
    result becoming old enough); None when nothing is held back."""
    delay = snap.tournament.spectator_delay_ms
    due = [shown_from_ms(x, delay) for x in snap.tables if delay > 0 and _hidden(x, delay, now_ms, viewer)]
    return min(due, default=None)
