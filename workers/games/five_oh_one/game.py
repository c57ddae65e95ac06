"""501♠ behind the one engine interface (workers/games/engine.py `Game`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workers.games.engine import JSON, Event, Millis, Placement, Seat
from workers.games.errors import MalformedAction, quote
from workers.games.five_oh_one import deals, legal, rules
from workers.games.five_oh_one import placements as ranking
from workers.games.five_oh_one.actions import Action, parse_action
from workers.games.five_oh_one.cards import DECK
from workers.games.five_oh_one.options import NAME, OPTIONS
from workers.games.five_oh_one.state import Deal, State
from workers.games.five_oh_one.view import TableView, view

FIRST_SEAT = Seat(0)


class FiveOhOne:
    name = NAME
    min_seats = 3
    max_seats = 4
    deals_key = "hands"
    options = OPTIONS
    endings: tuple[str, ...] = ("score", "time")
    """A score reached the end (F-9), or a decision limit ran out."""

    def start(self, seats: int, options: Mapping[str, JSON], lot: Seat = FIRST_SEAT) -> State:
        return rules.start(seats, options, lot)

    def options_json(self, state: State) -> dict[str, JSON]:
        return rules.options_json(state)

    def lot(self, state: State) -> Seat:
        return state.table.first_dealer

    def needs_deal(self, state: State) -> bool:
        return state.hand is None and state.ending is None

    def deck_size(self, state: State) -> int:
        return len(DECK)

    def deal_from(self, state: State, order: Sequence[int]) -> Deal:
        return deals.deal_from(state.table, state.dealer, order)

    def legal_actions(self, state: State, seat: Seat) -> Sequence[Action]:
        return legal.legal_actions(state, seat)

    # the engine's hottest calls are the rules' functions themselves, with no method in between
    apply = staticmethod(rules.apply)

    def view(self, state: State, seat: Seat | None) -> TableView:
        return view(state, seat)

    next_deadline = staticmethod(rules.next_deadline)

    def on_deadline(self, state: State, now: Millis) -> tuple[State, tuple[Event, ...]]:
        return rules.on_deadline(state, now)

    def void(self, state: State, reason: str, now: Millis) -> tuple[State, tuple[Event, ...]]:
        return rules.void(state, reason, now)

    def is_over(self, state: State) -> bool:
        return state.ending is not None

    def outcome(self, state: State, now: Millis) -> dict[str, JSON]:
        return rules.outcome(state)

    def placements(self, state: State) -> tuple[Placement, ...] | None:
        return ranking.placements(state)

    def placements_of(self, outcome: Mapping[str, JSON]) -> tuple[Placement, ...] | None:
        return ranking.placements_of(outcome)

    def parse_action(self, obj: Mapping[str, JSON]) -> Action:
        return parse_action(obj)

    def parse_deal(self, obj: JSON) -> Deal:
        return deals.parse_deal(obj)

    def deal_json(self, deal: Deal) -> JSON:
        return deals.deal_json(deal)

    def parse_lot(self, record: Mapping[str, JSON]) -> Seat:
        lot = record.get("first_dealer")
        if not isinstance(lot, int) or isinstance(lot, bool) or lot < 0:
            raise MalformedAction(f'"first_dealer" must be a seat number, not {quote(lot)}')
        return Seat(lot)

    def lot_json(self, lot: Seat) -> dict[str, JSON]:
        return {"first_dealer": lot}
