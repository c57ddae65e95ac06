"""The eight tricks (F-6) and marriages (F-7). This is the hot path: plain tuples and frozensets."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from types import MappingProxyType

from workers.games.engine import Event, Seat
from workers.games.errors import IllegalAction
from workers.games.five_oh_one.actions import Play
from workers.games.five_oh_one.cards import DECK, Card, Suit, partner
from workers.games.five_oh_one.scoring import played
from workers.games.five_oh_one.state import HandResult, Marriage, Table, Trick, Tricks

TRICKS = 8  # F-6
PLAYERS = 3  # active players in every hand (F-1)

SUIT_NAMES = {Suit.S: "spade", Suit.H: "heart", Suit.D: "diamond", Suit.C: "club"}

_PLAIN = {card: Play(card) for card in DECK}
_ANNOUNCED = {card: Play(card, True) for card in DECK if partner(card) is not None}
_PLAYED = tuple(
    tuple(
        tuple(Event("play", Seat(seat), MappingProxyType({"card": card.code, "marriage": m})) for m in (False, True))
        for card in DECK
    )
    for seat in range(4)
)
"""The event of each play, by seat, card index and marriage: made once, as the plays are (facts read-only)."""
_WON = tuple(
    tuple(Event("trick", Seat(seat), MappingProxyType({"points": points})) for points in range(3 * 11 + 1))
    for seat in range(4)
)
"""The event of each trick taken, by its winner and its card points (at most three aces): made once."""


def play(table: Table, hand: Tricks, seat: Seat, action: Play) -> tuple[Tricks | HandResult, tuple[Event, ...]]:
    if seat != hand.turn:
        raise IllegalAction(f"not your turn: seat {hand.turn} plays next")
    card = action.card
    mine = hand.hands[seat]
    if card not in mine:
        raise IllegalAction(f"the {card.code} is not in your hand")
    trick = hand.trick
    trump = hand.terms.trump
    marriages = hand.marriages
    if trick:
        if action.marriage:
            raise IllegalAction("a marriage is announced only when leading (F-7)")
        led = trick[0][1].suit
        if card.suit is not led:
            if _holds(mine, led):
                raise IllegalAction(f"follow suit: you must play a {SUIT_NAMES[led]} (F-6)")
            if trump is not None and card.suit is not trump and _holds(mine, trump):
                raise IllegalAction(
                    f"you have no {SUIT_NAMES[led]}: you must play a trump ({SUIT_NAMES[trump]}), "
                    "even one that cannot win (F-6)"
                )
    elif action.marriage:
        marriages = (*marriages, _marriage(hand, seat, card))
    changed = list(hand.hands)
    changed[seat] = mine.difference((card,))
    hands = tuple(changed)
    trick = (*trick, (seat, card))
    events: tuple[Event, ...] = (_PLAYED[seat][card.index][action.marriage],)
    if len(trick) < PLAYERS:
        left = _LEFT[table.seats][hand.terms.dealer][seat]
        return Tricks(hand.terms, hands, left, trick, hand.done, hand.taken, marriages), events
    winner = _winner(trick, trump)
    points = trick[0][1].points + trick[1][1].points + trick[2][1].points
    gained = list(hand.taken)
    gained[winner] += points
    taken = tuple(gained)
    done = (*hand.done, Trick(trick[0][0], (trick[0][1], trick[1][1], trick[2][1]), winner))
    events = (*events, _WON[winner][points])
    after = Tricks(hand.terms, hands, winner, (), done, taken, marriages)
    if len(done) < TRICKS:
        return after, events
    return played(after, table.seats), events


def playable(hand: Tricks, seat: Seat) -> Sequence[Play]:
    """The legal plays of `seat` (its turn or not): F-6 following, and F-7 announcements when leading."""
    mine = sorted(hand.hands[seat], key=_DECK_ORDER)  # a set's order would differ from process to process
    trick = hand.trick
    if not trick:
        plays = [_PLAIN[c] for c in mine]
        plays += [_ANNOUNCED[c] for c in mine if c in _ANNOUNCED and partner(c) in mine]
        return plays
    led = trick[0][1].suit
    follow = [_PLAIN[c] for c in mine if c.suit is led]
    if follow:
        return follow
    trump = hand.terms.trump
    trumps = [_PLAIN[c] for c in mine if c.suit is trump]
    return trumps or [_PLAIN[c] for c in mine]


_DECK_ORDER = attrgetter("index")


def _holds(cards: frozenset[Card], suit: Suit) -> bool:
    for c in cards:  # noqa: SIM110 - a plain loop, not a generator: this runs for every card not followed
        if c.suit is suit:
            return True
    return False


def _marriage(hand: Tricks, seat: Seat, card: Card) -> Marriage:
    """F-7: leading the K or Q while holding the other announces 40 in trump, 20 otherwise (NT: 20)."""
    other = partner(card)
    if other is None:
        raise IllegalAction(f"a marriage is announced by leading its K or Q, not the {card.code} (F-7)")
    if other not in hand.hands[seat]:
        if any(other in trick.cards for trick in hand.done):
            raise IllegalAction(f"no marriage: the {other.code} was already played (F-7)")
        raise IllegalAction(f"no marriage: you do not hold the {other.code} (F-7)")
    return Marriage(seat, card.suit, 40 if card.suit is hand.terms.trump else 20)


def _winner(trick: tuple[tuple[Seat, Card], ...], trump: Suit | None) -> Seat:
    """F-6: the highest trump, else the highest card of the suit led."""
    best_seat, best = trick[0]
    for seat, card in trick[1:]:
        if card.suit is best.suit:
            if card.strength > best.strength:
                best_seat, best = seat, card
        elif card.suit is trump:
            best_seat, best = seat, card
    return best_seat


def _left(seats: int, dealer: int, seat: int) -> Seat:
    """The next active player clockwise: a sitting-out dealer is skipped."""
    nxt = (seat + 1) % seats
    if nxt == dealer and seats == 4:
        nxt = (nxt + 1) % 4
    return Seat(nxt)


_LEFT = {n: tuple(tuple(_left(n, dealer, seat) for seat in range(n)) for dealer in range(n)) for n in (3, 4)}
"""`_left` for every table size, dealer and seat, made once: read at every card that does not end a trick."""
