"""Match records (RECORDS.md): a match as its moves replayed from the start, deals included.

`Match` is the host-side value that carries a game state together with what a record needs
(players, deals, the commands with their arrival times, a void); `replay` re-runs a record.
Nothing here branches on the game: everything game-specific goes through the `Game` interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.games.catalog import game_named
from workers.games.engine import CHANCE, JSON, Event, Game, Millis, Seat, millis, seconds
from workers.games.errors import IllegalAction, MalformedAction, RulesError, quote
from workers.games.values import built_fast

FORMAT = "tablehall-record/1"


class MalformedRecord(RulesError):
    """The file is not a record: not JSON, missing fields, unknown tile or card, bad times."""

    code = MalformedAction.code  # the same refusal as a malformed action's
    status = MalformedAction.status


@built_fast
@dataclass(frozen=True, slots=True)
class Step:
    """One accepted command, newest first: a persistent list so a match appends in O(1)."""

    seat: Seat
    action: Any
    t: Millis
    before: Step | None


@built_fast
@dataclass(frozen=True, slots=True)
class Match:
    game: Game[Any, Any, Any]
    players: tuple[str, ...]
    state: Any
    deals: tuple[Any, ...] = ()
    log: Step | None = None
    void_reason: str | None = None
    now: Millis = Millis(0)

    @classmethod
    def start(
        cls,
        game: Game[Any, Any, Any],
        players: Sequence[str],
        options: Mapping[str, JSON] | None = None,
        lot: Seat = Seat(0),
    ) -> Match:
        state = game.start(len(players), options or {}, lot)
        return cls(game, tuple(players), state)

    @property
    def over(self) -> bool:
        return self.game.is_over(self.state)

    def advance(self, now: Millis) -> tuple[Match, tuple[Event, ...]]:
        """Run every time-driven change due at or before `now` (flags, ready timeouts)."""
        due = self._due(now)
        if due is None:
            return self._at(now), ()
        return self._with(due[0], now), due[1]

    def _due(self, now: Millis) -> tuple[Any, tuple[Event, ...]] | None:
        """The state and events once the deadline due at or before `now` is settled (None: none is due)."""
        deadline = self.game.next_deadline(self.state)
        if deadline is None or deadline > now:
            return None
        return self.game.on_deadline(self.state, now)

    def apply(self, seat: Seat, action: Any, now: Millis) -> tuple[Match, tuple[Event, ...]]:
        """A player's command arriving at `now`; deadlines due by then are settled first."""
        if now < self.now:
            raise MalformedAction(f"time runs backwards: {seconds(now)} s after {seconds(self.now)} s")
        due = self._due(now)  # mostly None: then no match is built in between
        match, passed = (self, ()) if due is None else (self._with(due[0], now), due[1])
        state, events = match.game.apply(match.state, seat, action, now)
        step = Step(seat, action, now, match.log)
        return Match(match.game, match.players, state, match.deals, step, match.void_reason, now), (
            *passed,
            *events,
        )

    def deal(self, deal: Any, now: Millis) -> tuple[Match, tuple[Event, ...]]:
        state, events = self.game.apply(self.state, CHANCE, deal, now)
        return Match(
            self.game, self.players, state, (*self.deals, deal), self.log, self.void_reason, now
        ), events

    def void(self, reason: str, now: Millis) -> tuple[Match, tuple[Event, ...]]:
        state, events = self.game.void(self.state, reason, now)
        return Match(self.game, self.players, state, self.deals, self.log, reason, now), events

    def outcome(self) -> dict[str, JSON]:
        return self.game.outcome(self.state, self.now)

    def steps(self) -> list[Step]:
        out: list[Step] = []
        step = self.log
        while step is not None:
            out.append(step)
            step = step.before
        out.reverse()
        return out

    def record(self) -> dict[str, JSON]:
        """This match as a record that `replay` turns back into the same outcome."""
        game = self.game
        events = []
        for step in self.steps():
            events.append({"seat": step.seat, **step.action.to_json(), "t": seconds(step.t)})
        record: dict[str, JSON] = {
            "format": FORMAT,
            "game": game.name,
            "players": list(self.players),
            "options": game.options_json(self.state),
            **game.lot_json(game.lot(self.state)),
            game.deals_key: [game.deal_json(deal) for deal in self.deals],
            "events": events,
            "end_t": seconds(self.now),
        }
        if self.void_reason is not None:
            record["void"] = {"reason": self.void_reason, "t": seconds(self.now)}
        return record

    def _at(self, now: Millis) -> Match:
        return self._with(self.state, now)

    def _with(self, state: Any, now: Millis) -> Match:
        return Match(self.game, self.players, state, self.deals, self.log, self.void_reason, max(now, self.now))


@dataclass(frozen=True, slots=True)
class Replay:
    """What `tablehall replay` prints: the outcome, or the first illegal event and the outcome so far."""

    outcome: dict[str, JSON]
    error: str | None = None
    event: int | None = None

    def to_json(self) -> dict[str, JSON]:
        if self.error is None:
            return self.outcome
        return {"error": self.error, "event": self.event, "state": self.outcome}


@dataclass(frozen=True, slots=True)
class _Command:
    seat: Seat
    action: Any
    t: Millis


@dataclass(frozen=True, slots=True)
class _Recorded:
    """A record's fields, each read and checked (`_read`): what `replay` runs through the rules again."""

    game: Game[Any, Any, Any]
    players: tuple[str, ...]
    options: Mapping[str, JSON]
    lot: Seat
    deals: tuple[Any, ...]
    """In the order they were dealt, as the game parsed them."""
    commands: tuple[_Command, ...]
    end_t: Millis | None
    """When the match was closed; None: at its last event."""
    void_reason: str | None
    """Why the service voided the match (None: not voided)."""
    void_t: Millis
    """When it was voided (only read with a `void_reason`)."""


def replay(record: JSON) -> Replay:
    """Re-run a record through the rules engine. Raises `MalformedRecord` for anything unreadable."""
    recorded = _read(record)
    game = recorded.game
    try:
        match = Match.start(game, recorded.players, recorded.options, recorded.lot)
    except MalformedAction as err:
        raise MalformedRecord(f"options: {err}") from None
    pending = iter(recorded.deals)

    def dealt(match: Match, now: Millis) -> Match:
        while game.needs_deal(match.state):
            deal = next(pending, None)
            if deal is None:
                break
            try:
                match, _ = match.deal(deal, now)
            except RulesError as err:
                raise MalformedRecord(f"{game.deals_key}[{len(match.deals)}] does not fit the table: {err}") from None
        return match

    match = dealt(match, Millis(0))
    for index, command in enumerate(recorded.commands):
        match, _ = match.advance(command.t)
        match = dealt(match, command.t)
        try:
            match, _ = match.apply(command.seat, command.action, command.t)
        except IllegalAction as err:
            return Replay(match.outcome(), str(err), index)
        match = dealt(match, command.t)
    close = recorded.end_t if recorded.end_t is not None else match.now
    if close < match.now:
        raise MalformedRecord("end_t is earlier than the last event")
    if recorded.void_reason is not None and not match.over:
        # the service voided the match because it could not settle the time after the last event
        # (a late timer, an owner down): the void stands at its instant, no deadline is run before it
        match, _ = match.void(recorded.void_reason, Millis(max(recorded.void_t, match.now)))
    match, _ = match.advance(close)
    return Replay(match.outcome())


def _read(record: JSON) -> _Recorded:
    """Every field of a record checked before anything is replayed; `MalformedRecord` names the first
    that is not what RECORDS.md says."""
    if not isinstance(record, dict):
        raise MalformedRecord("a record is a JSON object")
    if record.get("format") != FORMAT:
        raise MalformedRecord(f'"format" must be "{FORMAT}", not {quote(record.get("format"))}')
    name = record.get("game")
    game = game_named(name) if isinstance(name, str) else None
    if game is None:
        raise MalformedRecord(f'unknown "game": {quote(name)}')
    players = record.get("players")
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise MalformedRecord('"players" must be a list of names')
    if not game.min_seats <= len(players) <= game.max_seats:
        raise MalformedRecord(
            f"{game.name} is played by {game.min_seats} to {game.max_seats} players, not {len(players)}"
        )
    options = record.get("options", {})
    if not isinstance(options, dict):
        raise MalformedRecord('"options" must be an object')
    try:
        lot = game.parse_lot(record)
        raw_deals = record.get(game.deals_key)
        if not isinstance(raw_deals, list):
            raise MalformedRecord(f'"{game.deals_key}" must be a list of deals')
        deals = []
        for index, raw in enumerate(raw_deals):
            try:
                deals.append(game.parse_deal(raw))
            except MalformedAction as err:
                raise MalformedRecord(f"{game.deals_key}[{index}]: {err}") from None
        if not 0 <= lot < len(players):
            raise MalformedRecord(f"no seat {lot} among {len(players)} players")
    except MalformedAction as err:
        raise MalformedRecord(str(err)) from None
    raw_events = record.get("events")
    if not isinstance(raw_events, list):
        raise MalformedRecord('"events" must be a list')
    commands: list[_Command] = []
    now = Millis(0)
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise MalformedRecord(f"event {index} is not an object")
        seat = raw.get("seat")
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < len(players):
            raise MalformedRecord(f"event {index}: no seat {quote(seat)} among {len(players)} players")
        if "t" in raw:
            t = _time(raw["t"], f"event {index}")
            if t < now:
                raise MalformedRecord(f"event {index}: t={raw['t']} is earlier than the event before it")
            now = t
        try:
            action = game.parse_action(raw)
        except MalformedAction as err:
            raise MalformedRecord(f"event {index}: {err}") from None
        commands.append(_Command(Seat(seat), action, now))
    end_t = _time(record["end_t"], "end_t") if record.get("end_t") is not None else None
    void_reason: str | None = None
    void_t = Millis(0)
    if record.get("void") is not None:
        raw_void = record["void"]
        if not isinstance(raw_void, dict) or not isinstance(raw_void.get("reason"), str):
            raise MalformedRecord('"void" must be {"reason": "...", "t": seconds}')
        void_reason, void_t = raw_void["reason"], _time(raw_void.get("t", seconds(now)), "void.t")
    return _Recorded(
        game, tuple(players), options, lot, tuple(deals), tuple(commands), end_t, void_reason, void_t
    )


def _time(value: JSON, where: str) -> Millis:
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0 or value != value:
        raise MalformedRecord(f"{where}: time must be a number of seconds ≥ 0, not {quote(value)}")
    if value > 10**9:
        raise MalformedRecord(f"{where}: time {value} s is out of range")
    return millis(value)
