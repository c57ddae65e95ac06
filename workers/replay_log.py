"""A match's log turned back into its states: what recovery and a resuming watcher need.

The log holds every step that changed a match (commands, deals with their commitment salts, deadline
settlements, voids), so replaying it through the pure engine reproduces every published change.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workers.commitments import Commitment, canonical
from workers.games.engine import JSON, Game, Millis, Seat
from workers.games.records import Match, Step
from workers.storage import SNAPSHOT_FORMAT, LogEntry, MatchEntry, Snapshot, Stored


@dataclass
class Position:
    """Where a match stands: its value, the commitments of its deals, its log and change counters."""

    match: Match
    commitments: list[Commitment] = field(default_factory=list)
    logged: int = 0
    change: int = 0

    def record(self, match_id: str) -> dict[str, JSON]:
        """The record as `GetRecord` gives it: RECORDS.md plus the match id and the deal commitments."""
        record = self.match.record()
        record["match_id"] = match_id
        record["commitments"] = [
            {"deal": i, "salt": c.salt.hex(), "sha256": c.sha256} for i, c in enumerate(self.commitments)
        ]
        return record

    def freeze(self) -> bytes:
        """A snapshot. The command log is kept as a list of plain (seat, action, t) tuples: a long linked list
        would overflow pickle. Every value in it pickles as its constructor's call (`built_fast`, or a
        `__reduce__` of its own): a frozen dataclass's own way reads its fields anew for every object, and the
        actions without fields and the deals' commitments took a quarter of a snapshot's time that way."""
        m = self.match
        steps = [(step.seat, step.action, step.t) for step in m.steps()]
        frozen = (m.players, m.state, m.deals, steps, m.void_reason, m.now)
        pickled = pickle.dumps((frozen, self.commitments, self.logged, self.change), protocol=pickle.HIGHEST_PROTOCOL)
        return SNAPSHOT_FORMAT + pickled

    @staticmethod
    def thaw(game: Game[Any, Any, Any], snapshot: Snapshot) -> Position:
        """Our own snapshot, written by the worker that owned the partition, in this code's format (the
        storage hands an older one's match over with its whole log instead)."""
        if not snapshot.current:
            raise ValueError(f"a snapshot not in the format {SNAPSHOT_FORMAT!r} cannot be thawed")
        frozen, commitments, logged, change = pickle.loads(memoryview(snapshot.blob)[len(SNAPSHOT_FORMAT) :])
        players, state, deals, steps, void_reason, now = frozen
        log: Step | None = None
        for seat, action, t in steps:
            log = Step(seat, action, t, log)
        return Position(Match(game, players, state, deals, log, void_reason, now), commitments, logged, change)


def fresh(game: Game[Any, Any, Any], entry: MatchEntry) -> Position:
    return Position(Match.start(game, entry.players, entry.options, Seat(entry.lot)))


def restored(game: Game[Any, Any, Any], stored: Stored) -> Position:
    """A match as its log holds it: its last snapshot, then the steps logged after it."""
    position = Position.thaw(game, stored.snapshot) if stored.snapshot else fresh(game, stored.entry)
    for entry in stored.entries:
        step(game, position, entry)
    return position


def step(game: Game[Any, Any, Any], position: Position, entry: LogEntry) -> None:
    """Apply one logged step to `position` (in place: recovery owns it alone)."""
    t = Millis(entry.t_ms)
    match = position.match
    if entry.kind == "command":
        assert entry.seat is not None
        match, _ = match.apply(Seat(entry.seat), game.parse_action(entry.action), t)
    elif entry.kind == "deal":
        dealt = entry.action["deal"]
        salt = bytes.fromhex(entry.action["salt"])
        match, _ = match.deal(game.parse_deal(dealt), t)
        position.commitments.append(Commitment(salt, hashlib.sha256(salt + canonical(dealt)).hexdigest()))
    elif entry.kind == "deadline":
        match, _ = match.advance(t)
    elif entry.kind == "void":
        match, _ = match.void(str(entry.action["reason"]), t)
    else:
        raise ValueError(f"unknown log step {entry.kind!r}")
    position.match = match
    position.logged = entry.seq
    position.change = entry.change


def changes(game: Game[Any, Any, Any], position: Position, entries: Iterable[LogEntry]) -> Iterator[Match]:
    """Replay `entries`, yielding the match after each published change."""
    pending = False
    for entry in entries:
        if pending and entry.change != position.change:
            yield position.match
        step(game, position, entry)
        pending = True
    if pending:
        yield position.match
