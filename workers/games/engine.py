"""The one engine interface both games implement: hosts, gateway and records never branch on the game.

A state, an action and the arrival time go in; a new state and the events that happened come out.
Chance is a recorded step (after OpenSpiel): when `needs_deal(state)` the host draws a permutation
from a CSPRNG, turns it into a deal with `deal_from`, and applies it as the action of `CHANCE`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NewType, Protocol, TypeVar

from workers.games.values import built_fast

if TYPE_CHECKING:
    from workers.games.options import OptionSpec

Seat = NewType("Seat", int)
Millis = NewType("Millis", int)
"""Whole milliseconds: an instant since the match was created, or a duration."""

CHANCE = Seat(-1)
"""The seat that applies deals."""

JSON = Any


def millis(seconds: float) -> Millis:
    """Seconds (at most 3 decimals, as records carry them) to exact whole milliseconds."""
    return Millis(round(seconds * 1000))


def seconds(ms: int) -> float:
    return ms / 1000


@built_fast
@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened: a play, a transfer, a forced pass, a flag, the end of a round, ..."""

    kind: str
    seat: Seat | None = None
    facts: Mapping[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"kind": self.kind}
        if self.seat is not None:
            out["seat"] = self.seat
        out.update(self.facts)
        return out


class View(Protocol):
    """What one seat (or a spectator) may see: never more. Serialized as JSON for clients and tests."""

    def to_json(self) -> dict[str, JSON]: ...


class Action(Protocol):
    def to_json(self) -> dict[str, JSON]: ...


@dataclass(frozen=True, slots=True)
class Placement:
    """One seat's result in a finished match: its place (1 is best; seats with equal results share the
    best place they cover, as competition ranks do) and its final score as the game counts it."""

    seat: Seat
    place: int
    score: int


def placed(keys: Sequence[tuple[int, ...]], scores: Sequence[int]) -> tuple[Placement, ...]:
    """Placements from each seat's sort key (lower is better) and final score: a seat's place is one more
    than the number of seats strictly ahead of it, so exact ties share a place."""
    return tuple(
        Placement(Seat(seat), 1 + sum(other < mine for other in keys), scores[seat]) for seat, mine in enumerate(keys)
    )


S = TypeVar("S")
A = TypeVar("A")
D = TypeVar("D")
S_in = TypeVar("S_in", contravariant=True)
A_out = TypeVar("A_out", covariant=True)


class Rules(Protocol[S, A, D]):
    """A game's rules as pure functions over immutable states.

    `apply` always checks legality and raises `IllegalAction` (state untouched) or `MalformedAction`.
    An action arriving at or after `next_deadline(state)` is too late: hosts call `on_deadline` first.
    """

    name: str
    min_seats: int
    max_seats: int
    options: tuple[OptionSpec, ...]
    """The match options this game takes, with their ranges and defaults: declared once, here."""
    endings: tuple[str, ...]
    """Every way a match of this game can end with a result: the `reason` of its outcome."""

    def start(self, seats: int, options: Mapping[str, JSON], lot: Seat = Seat(0)) -> S:
        """A new match. `lot` is the host's draw by lot where the game needs one (501♠'s first dealer)."""
        ...

    # chance
    def needs_deal(self, state: S) -> bool: ...

    def deck_size(self, state: S) -> int: ...

    def deal_from(self, state: S, order: Sequence[int]) -> D:
        """The deal made by shuffling the deck into `order` (a permutation of range(deck_size))."""
        ...

    # play
    def legal_actions(self, state: S, seat: Seat) -> Sequence[A]: ...

    def apply(self, state: S, seat: Seat, action: A | D, now: Millis) -> tuple[S, tuple[Event, ...]]: ...

    def view(self, state: S, seat: Seat | None) -> View: ...

    def next_deadline(self, state: S) -> Millis | None: ...

    def on_deadline(self, state: S, now: Millis) -> tuple[S, tuple[Event, ...]]:
        """Every time-driven change due at or before `now`, each at its own deadline instant."""
        ...

    def void(self, state: S, reason: str, now: Millis) -> tuple[S, tuple[Event, ...]]:
        """A proven service fault (SB-11): the match ends with no result and the reason recorded."""
        ...

    # the result
    def is_over(self, state: S) -> bool: ...

    def outcome(self, state: S, now: Millis) -> dict[str, JSON]:
        """The match as `tablehall replay` prints it (RECORDS.md), clocks read at `now`."""
        ...

    def placements(self, state: S) -> tuple[Placement, ...] | None:
        """Each seat's place and final score, in seat order, once the match finished with a result;
        None while it runs or when it was voided. Ratings and standings read results from here alone."""
        ...


class Codec(Protocol[S_in, A_out, D]):
    """How a game's matches are written as records (RECORDS.md) and read back: actions, deals, the draw by
    lot, the options and outcomes. Nothing here decides anything about play."""

    name: str
    """The record's "game"."""
    deals_key: str
    """Where a record keeps this game's deals, in order ("rounds" or "hands")."""

    def options_json(self, state: S_in) -> dict[str, JSON]:
        """The record's "options": every option of the match, defaults included."""
        ...

    def lot(self, state: S_in) -> Seat:
        """The draw by lot the match started with, for the record."""
        ...

    def parse_action(self, obj: Mapping[str, JSON]) -> A_out: ...

    def parse_deal(self, obj: JSON) -> D: ...

    def deal_json(self, deal: D) -> JSON: ...

    def parse_lot(self, record: Mapping[str, JSON]) -> Seat: ...

    def lot_json(self, lot: Seat) -> dict[str, JSON]: ...

    def placements_of(self, outcome: Mapping[str, JSON]) -> tuple[Placement, ...] | None:
        """The placements an outcome (RECORDS.md) shows, as `placements` gave them for its state: how a
        stored outcome is read back (tournament tables keep their outcome, not their state)."""
        ...


class Game(Rules[S, A, D], Codec[S, A, D], Protocol[S, A, D]):
    """A game's rules and its record codec together, as each game implements them (the catalog hands
    these out); code that needs only one half names only that protocol."""
