"""Every legal action of a seat. Declarations are many (trump × target × cards given), so they are
a lazy sequence: indexable, sized, with a direct membership test."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from workers.games.engine import Seat
from workers.games.five_oh_one.actions import (
    ABANDON,
    BIDS,
    LOOK,
    MAX_BID,
    MIN_BID,
    PASS,
    TRUMPS,
    Abandon,
    Action,
    Declare,
)
from workers.games.five_oh_one.cards import Card, in_deck_order
from workers.games.five_oh_one.state import Bidding, Contract, State, Tricks
from workers.games.five_oh_one.tricks import playable


def legal_actions(state: State, seat: Seat) -> Sequence[Action]:
    hand = state.hand
    if state.ending is not None or hand is None or not 0 <= seat < state.table.seats:
        return ()
    if isinstance(hand, Tricks):
        return playable(hand, seat) if seat == hand.turn else ()
    if isinstance(hand, Contract):
        return ContractChoices(hand, state.table.active(hand.dealer)) if seat == hand.declarer else ()
    looks: tuple[Action, ...] = (LOOK,) if hand.hands[seat] and seat not in hand.looked else ()
    if seat != hand.turn:
        return looks
    return (*looks, PASS, *BIDS[lowest_bid(hand) - MIN_BID :])


def lowest_bid(hand: Bidding) -> int:
    high = hand.high
    return MIN_BID if high is None else high[1] + 1


class ContractChoices(Sequence[Abandon | Declare]):
    """Abandon, then every declaration: trump × target (bid..220) × one card to each opponent."""

    def __init__(self, hand: Contract, active: tuple[Seat, ...]) -> None:
        self._hand = hand
        self._to = tuple(sorted(s for s in active if s != hand.declarer))  # `Declare.give` is in seat order
        self._cards: tuple[Card, ...] = in_deck_order(hand.hands[hand.declarer])
        self._targets = range(hand.bid, MAX_BID + 1)
        self._trumps = tuple(TRUMPS.values())
        n = len(self._cards)
        self._gives = n * (n - 1)
        self._size = 1 + len(self._trumps) * len(self._targets) * self._gives

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Abandon | Declare: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Abandon | Declare]: ...

    def __getitem__(self, index: int | slice) -> Abandon | Declare | Sequence[Abandon | Declare]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._size)))
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        if index == 0:
            return ABANDON
        rest, give = divmod(index - 1, self._gives)
        trump, target = divmod(rest, len(self._targets))
        n = len(self._cards)
        first, second = divmod(give, n - 1)
        if second >= first:
            second += 1
        pairs = ((self._to[0], self._cards[first]), (self._to[1], self._cards[second]))
        return Declare(self._trumps[trump], self._targets[target], pairs)

    def __contains__(self, action: object) -> bool:
        if isinstance(action, Abandon):
            return True
        if not isinstance(action, Declare) or action.target not in self._targets:
            return False
        given = [card for _, card in action.give]
        return (
            tuple(s for s, _ in action.give) == self._to
            and len(set(given)) == len(given)
            and all(card in self._cards for card in given)
        )

    def __iter__(self) -> Iterator[Abandon | Declare]:
        return (self[i] for i in range(self._size))
