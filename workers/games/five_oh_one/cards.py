"""The 24-card deck of 501♠ (F-1): A 10 K Q J 9 in four suits, worth 11, 10, 4, 3, 2, 0.

Cards are interned: there is exactly one `Card` value per card, so identity is equality and
hashing is the cheap identity hash (hands are frozensets of these).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from workers.games.errors import MalformedAction, quote


class Suit(Enum):
    S = "S"
    H = "H"
    D = "D"
    C = "C"


class Rank(Enum):
    """In rank order, highest first (F-1); `points` is the card's value."""

    A = "A"
    T = "T"
    K = "K"
    Q = "Q"
    J = "J"
    N = "9"

    @property
    def points(self) -> int:
        return _POINTS[self]


_POINTS = {Rank.A: 11, Rank.T: 10, Rank.K: 4, Rank.Q: 3, Rank.J: 2, Rank.N: 0}
_STRENGTH = {Rank.A: 5, Rank.T: 4, Rank.K: 3, Rank.Q: 2, Rank.J: 1, Rank.N: 0}


@dataclass(frozen=True, slots=True, eq=False)
class Card:
    """One of the 24 cards, written rank + suit: "TS" is 10♠. Build only through `parse` or `DECK`."""

    rank: Rank
    suit: Suit
    code: str
    points: int
    strength: int
    """Position in the rank order: A=5 ... 9=0. Only comparable within one suit."""
    index: int
    """Position in `DECK`: the order hands are shown in."""

    def __repr__(self) -> str:
        return self.code

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return parse, (self.code,)


DECK: tuple[Card, ...] = tuple(
    Card(rank, suit, rank.value + suit.value, _POINTS[rank], _STRENGTH[rank], 6 * s + r)
    for s, suit in enumerate(Suit)
    for r, rank in enumerate(Rank)
)
"""The deck in a fixed order: the host's shuffle is a permutation of these indices."""

_BY_CODE = {card.code: card for card in DECK}

TOTAL_POINTS = sum(card.points for card in DECK)  # 120 (F-1)


def parse(code: object) -> Card:
    """A card from its code ("TS", "9H"), or `MalformedAction` naming what is wrong."""
    card = _BY_CODE.get(code) if isinstance(code, str) else None
    if card is None:
        raise MalformedAction(f'unknown card {quote(code)}: a card is rank (A T K Q J 9) + suit (S H D C), like "TS"')
    return card


def card(code: str) -> Card:
    """A card by a code known to be right (tests, constants)."""
    return _BY_CODE[code]


def partner(queen_or_king: Card) -> Card | None:
    """The other member of a marriage (F-7): K ↔ Q of the same suit, None for other ranks."""
    return _PARTNER.get(queen_or_king)


_PARTNER = {_BY_CODE["K" + suit.value]: _BY_CODE["Q" + suit.value] for suit in Suit} | {
    _BY_CODE["Q" + suit.value]: _BY_CODE["K" + suit.value] for suit in Suit
}


def codes(cards: Iterable[Card]) -> list[str]:
    return [c.code for c in cards]


def in_deck_order(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=_index))


def _index(card: Card) -> int:
    return card.index
