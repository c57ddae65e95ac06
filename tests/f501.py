"""Helpers for 501♠ tests: deals and positions written the way the rules talk about them."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import EXAMPLES, RECORDS
from workers.games.engine import CHANCE, Event, Seat, millis
from workers.games.five_oh_one import FiveOhOne
from workers.games.five_oh_one.actions import TRUMPS, parse_action
from workers.games.five_oh_one.cards import Card, card
from workers.games.five_oh_one.state import State, Table, Terms, Tricks
from workers.games.records import replay

GAME = FiveOhOne()

F10_HANDS = ("KH TH 9D KS AD AS QD", "QC TD QS TC JC JS KD", "9S 9H AH 9C JD TS JH")
F10_TALON = "AC KC QH"


def cards(text: str) -> tuple[Card, ...]:
    return tuple(card(code) for code in text.split())


def load(path: str) -> dict[str, Any]:
    """A record from tests/examples ("examples/...") or tests/records (a bare name)."""
    if path.startswith("examples/"):
        return json.loads((EXAMPLES / path.removeprefix("examples/")).read_text())  # type: ignore[no-any-return]
    return json.loads((RECORDS / path).read_text())  # type: ignore[no-any-return]


def run(record: dict[str, Any]) -> dict[str, Any]:
    return replay(record).to_json()


def dealt(
    hands: tuple[str, ...] = F10_HANDS, talon: str = F10_TALON, dealer: int = 2, at: float = 0, **options: Any
) -> State:
    """A new game with this first deal (a sitting-out dealer's hand is "")."""
    state = GAME.start(len(hands), options, Seat(dealer))
    deal = GAME.parse_deal({"deal": [h.split() for h in hands], "talon": talon.split()})
    state, _ = GAME.apply(state, CHANCE, deal, millis(at))
    return state


def act(state: State, seat: int, do: str, t: float = 0, **fields: Any) -> State:
    return events(state, seat, do, t, **fields)[0]


def events(state: State, seat: int, do: str, t: float = 0, **fields: Any) -> tuple[State, tuple[Event, ...]]:
    return GAME.apply(state, Seat(seat), parse_action({"do": do, **fields}), millis(t))


def position(hands: dict[int, str], trump: str = "S", lead: int = 0, played: str = "", dealer: int = 2) -> State:
    """A three-player position in the tricks: each seat's cards, the trump, and the cards already on the
    table this trick (`played`, from `lead` clockwise). Seat 0 declared 66 and nobody looked."""
    table = Table(3, 501, None, Seat(dealer))
    terms = Terms(Seat(dealer), (), (), Seat(0), 66, True, TRUMPS[trump], 66)
    on_table = tuple((Seat((lead + i) % 3), c) for i, c in enumerate(cards(played)))
    turn = Seat((lead + len(on_table)) % 3)
    hand = Tricks(terms, tuple(frozenset(cards(hands[s])) for s in range(3)), turn, on_table, (), (0, 0, 0), ())
    return State(table, (501, 501, 501), Seat(dealer), hand, (), None)


def legal_codes(state: State, seat: int) -> set[str]:
    return {
        a.to_json()["card"] + ("+" if a.to_json().get("marriage") else "")
        for a in GAME.legal_actions(state, Seat(seat))
    }
