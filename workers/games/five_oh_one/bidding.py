"""Bidding (F-3, F-4) and the contract that follows it (F-5): look, bid, pass, abandon, declare."""

from __future__ import annotations

from types import MappingProxyType

from workers.games.engine import Event, Seat
from workers.games.errors import IllegalAction
from workers.games.five_oh_one.actions import MAX_BID, MIN_BID, Declare, trump_code
from workers.games.five_oh_one.cards import codes, in_deck_order
from workers.games.five_oh_one.scoring import abandoned, all_passed
from workers.games.five_oh_one.state import Bidding, Call, Contract, HandResult, Table, Terms, Tricks

Outcome = tuple[Bidding | Contract | Tricks | HandResult, tuple[Event, ...]]

_LOOKED = tuple(Event("look", Seat(seat)) for seat in range(4))
_PASSED = tuple(Event("pass", Seat(seat)) for seat in range(4))
_BIDS = tuple(
    tuple(Event("bid", Seat(seat), MappingProxyType({"amount": amount})) for amount in range(MIN_BID, MAX_BID + 1))
    for seat in range(4)
)
"""The events of a look, a pass and each bid, by seat (and amount): made once (facts read-only)."""


def look(table: Table, hand: Bidding, seat: Seat) -> tuple[Bidding, tuple[Event, ...]]:
    if not hand.hands[seat]:
        raise IllegalAction("you sit this hand out as the dealer: you have no cards to look at")
    if seat in hand.looked:
        raise IllegalAction("you have already looked at your cards")
    looked = hand.looked | {seat}
    return Bidding(hand.dealer, hand.hands, hand.talon, hand.turn, hand.calls, hand.passed, looked), (_LOOKED[seat],)


def bid(table: Table, hand: Bidding, seat: Seat, amount: int) -> Outcome:
    _check_turn(hand, seat)
    if amount < MIN_BID:
        raise IllegalAction(f"a bid is at least {MIN_BID}, not {amount} (F-3)")
    if amount > MAX_BID:
        raise IllegalAction(f"a bid is at most {MAX_BID}, the most a hand can score, not {amount} (F-3)")
    high = hand.high
    if high is not None and amount <= high[1]:
        raise IllegalAction(f"a bid must be higher than the standing {high[1]}, not {amount} (F-3)")
    calls = (*hand.calls, (seat, amount))
    events = (_BIDS[seat][amount - MIN_BID],)
    passed = hand.passed
    if len(passed) == len(table.active(hand.dealer)) - 1:
        return _won(table, hand, calls, seat, amount, events)
    turn = _next(table, hand, seat, passed)
    return Bidding(hand.dealer, hand.hands, hand.talon, turn, calls, passed, hand.looked), events


def pass_(table: Table, hand: Bidding, seat: Seat) -> Outcome:
    _check_turn(hand, seat)
    calls: tuple[Call, ...] = (*hand.calls, (seat, None))
    passed = hand.passed | {seat}
    events = (_PASSED[seat],)
    active = table.active(hand.dealer)
    high = hand.high
    if len(passed) == len(active):  # F-3: all pass, the hand scores zero
        return all_passed(hand.dealer, table.seats), (
            *events,
            Event("all_passed", None, {"dealer": hand.dealer}),
        )
    if high is not None and len(passed) == len(active) - 1:
        return _won(table, hand, calls, high[0], high[1], events)
    turn = _next(table, hand, seat, passed)
    return Bidding(hand.dealer, hand.hands, hand.talon, turn, calls, passed, hand.looked), events


def abandon(table: Table, hand: Contract, seat: Seat) -> Outcome:
    _check_declarer(hand, seat)
    opponents = tuple(s for s in table.active(hand.dealer) if s != seat)
    result = abandoned(hand, opponents, table.seats)
    return result, (Event("abandon", seat, {"bid": hand.bid, "blind": hand.blind}),)


def declare(table: Table, hand: Contract, seat: Seat, action: Declare) -> Outcome:
    """F-5: trump, a target from the bid to 220, one card face down to each opponent."""
    _check_declarer(hand, seat)
    if not hand.bid <= action.target <= MAX_BID:
        raise IllegalAction(f"the target must be from your bid {hand.bid} to {MAX_BID}, not {action.target} (F-5)")
    active = table.active(hand.dealer)
    opponents = tuple(sorted(s for s in active if s != seat))
    to = tuple(s for s, _ in action.give)
    if tuple(sorted(to)) != opponents:
        named = ", ".join(str(s) for s in opponents)
        raise IllegalAction(f"give exactly one card to each opponent (seats {named}) (F-5)")
    mine = hand.hands[seat]
    given = [card for _, card in action.give]
    for card in given:
        if card not in mine:
            raise IllegalAction(f"you cannot give the {card.code}: it is not among your ten cards")
    if len(set(given)) != len(given):
        raise IllegalAction("give a different card to each opponent")
    hands = list(hand.hands)
    hands[seat] = mine.difference(given)
    for opponent, card in action.give:
        hands[opponent] = hands[opponent] | {card}
    terms = Terms(hand.dealer, hand.talon, hand.calls, seat, hand.bid, hand.blind, action.trump, action.target)
    tricks = Tricks(terms, tuple(hands), active[0], (), (), (0,) * table.seats, ())
    event = Event("declare", seat, {"trump": trump_code(action.trump), "target": action.target})
    return tricks, (event,)


def _won(
    table: Table,
    hand: Bidding,
    calls: tuple[Call, ...],
    declarer: Seat,
    amount: int,
    events: tuple[Event, ...],
) -> Outcome:
    """F-4/F-5: the bidding is over; the talon is exposed and joins the declarer's hand."""
    blind = declarer not in hand.looked
    hands = list(hand.hands)
    hands[declarer] = hands[declarer] | frozenset(hand.talon)
    contract = Contract(hand.dealer, tuple(hands), hand.talon, calls, declarer, amount, blind)
    won = Event("contract", declarer, {"bid": amount, "blind": blind, "talon": codes(in_deck_order(hand.talon))})
    return contract, (*events, won)


def _check_turn(hand: Bidding, seat: Seat) -> None:
    if seat in hand.passed:
        raise IllegalAction("you have passed, and passing is final (F-3)")
    if not hand.hands[seat]:
        raise IllegalAction("you sit this hand out as the dealer")
    if seat != hand.turn:
        raise IllegalAction(f"not your turn: seat {hand.turn} bids next")


def _check_declarer(hand: Contract, seat: Seat) -> None:
    if seat != hand.declarer:
        raise IllegalAction(f"seat {hand.declarer} won the bidding: only they declare or abandon")


def _next(table: Table, hand: Bidding, seat: Seat, passed: frozenset[Seat]) -> Seat:
    active = table.active(hand.dealer)
    i = active.index(seat)
    for step in range(1, len(active)):
        candidate = active[(i + step) % len(active)]
        if candidate not in passed:
            return candidate
    raise AssertionError("no one left to bid")
