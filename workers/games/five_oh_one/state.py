"""The 501♠ game as immutable values: the table, the hand in progress (one value per phase), the scores.

A hand goes Bidding → Contract (talon exposed, declarer to declare or abandon) → Tricks, and is then
scored into a `HandResult`; between hands `State.hand` is None and the host deals (`needs_deal`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from workers.games.clock import Clock
from workers.games.engine import JSON, Millis, Seat
from workers.games.five_oh_one.actions import trump_code
from workers.games.five_oh_one.cards import Card, Suit
from workers.games.values import built_fast

Hands = tuple[frozenset[Card], ...]
"""Each seat's cards, by seat; a sitting-out dealer's is empty."""

Call = tuple[Seat, int | None]
"""One bidding turn: (seat, amount), amount None for a pass."""


@built_fast
@dataclass(frozen=True, slots=True)
class Table:
    """What never changes during a game."""

    seats: int
    start_score: int
    limit: Millis | None
    """The per-decision time limit, None when off (the default)."""
    first_dealer: Seat

    def active(self, dealer: Seat) -> tuple[Seat, ...]:
        """The players of a hand dealt by `dealer`, from the dealer's left clockwise (F-1, F-3)."""
        return _active(self.seats, dealer)


@cache
def _active(n: int, dealer: Seat) -> tuple[Seat, ...]:
    """`Table.active`, made once per table size and dealer: the bidding asks for it at every call."""
    return tuple(Seat((dealer + i) % n) for i in range(1, n + 1) if n == 3 or i != n)


@built_fast
@dataclass(frozen=True, slots=True)
class Deal:
    """One hand as dealt (F-2): each seat's seven cards in dealing order, and the three talon cards."""

    hands: tuple[tuple[Card, ...], ...]
    talon: tuple[Card, ...]


@built_fast
@dataclass(frozen=True, slots=True)
class Bidding:
    dealer: Seat
    hands: Hands
    talon: tuple[Card, ...]
    turn: Seat
    calls: tuple[Call, ...]
    passed: frozenset[Seat]
    looked: frozenset[Seat]
    """Who has turned their cards face up (F-4): the others are still blind."""

    @property
    def high(self) -> tuple[Seat, int] | None:
        """The standing bid: who made it, and the amount."""
        for seat, amount in reversed(self.calls):
            if amount is not None:
                return seat, amount
        return None


@built_fast
@dataclass(frozen=True, slots=True)
class Contract:
    """Bidding is over: the talon is exposed and the declarer holds ten cards (F-5)."""

    dealer: Seat
    hands: Hands
    talon: tuple[Card, ...]
    calls: tuple[Call, ...]
    declarer: Seat
    bid: int
    blind: bool


@built_fast
@dataclass(frozen=True, slots=True)
class Terms:
    """The contract being played: fixed for the eight tricks."""

    dealer: Seat
    talon: tuple[Card, ...]
    calls: tuple[Call, ...]
    declarer: Seat
    bid: int
    blind: bool
    trump: Suit | None
    """None is no-trump."""
    target: int


@built_fast
@dataclass(frozen=True, slots=True)
class Trick:
    leader: Seat
    cards: tuple[Card, ...]
    """In play order, from the leader clockwise among active players."""
    winner: Seat


@built_fast
@dataclass(frozen=True, slots=True)
class Marriage:
    seat: Seat
    suit: Suit
    value: int
    """40 in trump, 20 otherwise (F-7); it counts only if `seat` wins a trick in the hand."""


@built_fast
@dataclass(frozen=True, slots=True)
class Tricks:
    terms: Terms
    hands: Hands
    turn: Seat
    trick: tuple[tuple[Seat, Card], ...]
    """The trick on the table, in play order."""
    done: tuple[Trick, ...]
    taken: tuple[int, ...]
    """Card points captured so far, by seat."""
    marriages: tuple[Marriage, ...]


Hand = Bidding | Contract | Tricks


@built_fast
@dataclass(frozen=True, slots=True)
class HandResult:
    """One scored hand, as RECORDS.md prints it."""

    dealer: Seat
    declarer: Seat | None
    bid: int | None
    target: int | None
    trump: Suit | None
    blind: bool
    abandoned: bool
    made: bool
    points: tuple[int, ...]
    deltas: tuple[int, ...]

    def to_json(self) -> dict[str, JSON]:
        return {
            "dealer": self.dealer,
            "declarer": self.declarer,
            "bid": self.bid,
            "target": self.target,
            "trump": None if self.target is None else trump_code(self.trump),
            "blind": self.blind,
            "abandoned": self.abandoned,
            "made": self.made,
            "points": list(self.points),
            "deltas": list(self.deltas),
        }


@built_fast
@dataclass(frozen=True, slots=True)
class Ending:
    reason: str
    """"score" (F-9), "time" (a decision limit ran out) or "void" (a service fault)."""
    winners: tuple[Seat, ...]
    flagged: Seat | None = None
    detail: str | None = None
    """A void's reason."""


@built_fast
@dataclass(frozen=True, slots=True)
class State:
    table: Table
    scores: tuple[int, ...]
    dealer: Seat
    """The dealer of the hand in progress, or of the next hand to deal."""
    hand: Hand | None
    results: tuple[HandResult, ...]
    clock: Clock | None
    ending: Ending | None = None
