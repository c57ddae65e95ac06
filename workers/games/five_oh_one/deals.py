"""Dealing (F-2) and deals as records carry them: `{"deal": [[cards of seat 0], ...], "talon": [3 cards]}`."""

from __future__ import annotations

from collections.abc import Sequence

from workers.games.engine import JSON, Seat
from workers.games.errors import MalformedAction
from workers.games.five_oh_one.cards import DECK, Card, codes, parse
from workers.games.five_oh_one.state import Bidding, Deal, Table

HAND_SIZE = 7
TALON_SIZE = 3


def deal_from(table: Table, dealer: Seat, order: Sequence[int]) -> Deal:
    """F-2: the deck shuffled into `order`, dealt one card at a time clockwise from the dealer's left
    to the active players, with one card to the talon after each of the first three rounds."""
    if sorted(order) != list(range(len(DECK))):
        raise MalformedAction(f"a shuffle is a permutation of 0..{len(DECK) - 1}")
    deck = iter(DECK[i] for i in order)
    active = table.active(dealer)
    hands: list[list[Card]] = [[] for _ in range(table.seats)]
    talon: list[Card] = []
    for round_ in range(HAND_SIZE):
        for seat in active:
            hands[seat].append(next(deck))
        if round_ < TALON_SIZE:
            talon.append(next(deck))
    return Deal(tuple(tuple(hand) for hand in hands), tuple(talon))


def parse_deal(obj: JSON) -> Deal:
    """A record's deal, checked on its own: 3 or 4 hands of 7 (one may be the dealer's []), 3 talon
    cards, 24 different cards. Whether it fits the table is checked when it is dealt."""
    if not isinstance(obj, dict) or not isinstance(obj.get("deal"), list) or not isinstance(obj.get("talon"), list):
        raise MalformedAction('a deal is {"deal": [[cards of seat 0], ...], "talon": [3 cards]}')
    raw_hands: list[JSON] = obj["deal"]
    if not 3 <= len(raw_hands) <= 4 or not all(isinstance(hand, list) for hand in raw_hands):
        raise MalformedAction('"deal" holds one list of cards per seat (3 or 4 seats)')
    hands = tuple(tuple(parse(code) for code in hand) for hand in raw_hands)
    talon = tuple(parse(code) for code in obj["talon"])
    if len(talon) != TALON_SIZE:
        raise MalformedAction(f"the talon holds {TALON_SIZE} cards, not {len(talon)}")
    for seat, hand in enumerate(hands):
        if len(hand) != HAND_SIZE and not (len(hands) == 4 and not hand):
            raise MalformedAction(f"seat {seat} is dealt {len(hand)} cards: a hand is {HAND_SIZE}")
    if len(hands) == 4 and sum(1 for hand in hands if not hand) != 1:
        raise MalformedAction("with four players exactly one hand, the dealer's, is []")
    cards = [card for hand in hands for card in hand] + list(talon)
    seen: set[Card] = set()
    for card in cards:
        if card in seen:
            raise MalformedAction(f"the {card.code} is dealt twice")
        seen.add(card)
    return Deal(hands, talon)


def deal_json(deal: Deal) -> JSON:
    return {"deal": [codes(hand) for hand in deal.hands], "talon": codes(deal.talon)}


def bidding(table: Table, dealer: Seat, deal: Deal) -> Bidding:
    """The hand dealt by `dealer` begins: the bidding opens on the dealer's left (F-3)."""
    if len(deal.hands) != table.seats:
        raise MalformedAction(f"the deal has {len(deal.hands)} hands for {table.seats} players")
    for seat, hand in enumerate(deal.hands):
        if table.seats == 4 and (seat == dealer) != (not hand):
            raise MalformedAction(f"the dealer, seat {dealer}, sits out: only their list is []")
    hands = tuple(frozenset(hand) for hand in deal.hands)
    return Bidding(dealer, hands, deal.talon, table.active(dealer)[0], (), frozenset(), frozenset())
