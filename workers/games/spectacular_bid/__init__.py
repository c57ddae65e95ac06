"""Spectacular Bid: a two-player Fives duel with lead auctions and a match clock (RULES.md SB-1..SB-13)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workers.games.clock import Clock
from workers.games.engine import JSON, Event, Millis, Placement, Seat, seconds
from workers.games.errors import MalformedAction
from workers.games.spectacular_bid import placements as ranking
from workers.games.spectacular_bid import rules
from workers.games.spectacular_bid.actions import Action, Deal, parse_action
from workers.games.spectacular_bid.options import NAME, OPTIONS, Options
from workers.games.spectacular_bid.state import Phase, State
from workers.games.spectacular_bid.tiles import TILES
from workers.games.spectacular_bid.view import MatchView, status, view

__all__ = ["Action", "Deal", "SpectacularBid", "State"]


class SpectacularBid:
    name = NAME
    min_seats = 2
    max_seats = 2
    deals_key = "rounds"
    options = OPTIONS
    endings: tuple[str, ...] = ("points", "time", "resign")
    """A balance reached 0 (SB-1, by count, payment or block), a flag fell, or a resignation."""

    def start(self, seats: int, options: Mapping[str, JSON], lot: Seat = Seat(0)) -> State:
        if seats != 2:
            raise MalformedAction("Spectacular Bid is a duel: two players")
        chosen = Options.parse(options)
        return State(chosen, Clock.fresh(chosen.clock, 2), (chosen.start_points, chosen.start_points))

    def options_json(self, state: State) -> dict[str, JSON]:
        return state.options.to_json()

    def lot(self, state: State) -> Seat:
        return Seat(0)

    def needs_deal(self, state: State) -> bool:
        return state.phase is Phase.DEAL

    def deck_size(self, state: State) -> int:
        return len(TILES)

    def deal_from(self, state: State, order: Sequence[int]) -> Deal:
        return Deal.from_order(order)

    def legal_actions(self, state: State, seat: Seat) -> Sequence[Action]:
        return rules.legal_actions(state, seat)

    # the engine's hottest calls are the rules' functions themselves, with no method in between
    apply = staticmethod(rules.apply)

    def view(self, state: State, seat: Seat | None) -> MatchView:
        return view(state, seat)

    next_deadline = staticmethod(rules.next_deadline)

    def on_deadline(self, state: State, now: Millis) -> tuple[State, tuple[Event, ...]]:
        return rules.on_deadline(state, now)

    def void(self, state: State, reason: str, now: Millis) -> tuple[State, tuple[Event, ...]]:
        return rules.void(state, reason, now)

    def is_over(self, state: State) -> bool:
        return state.phase is Phase.OVER

    def outcome(self, state: State, now: Millis) -> dict[str, JSON]:
        rounds = [*state.past, *((state.round,) if state.round is not None else ())]
        return {
            "status": status(state),
            "winner": state.winner,
            "reason": state.reason,
            "points": list(state.points),
            "bank_s": [seconds(state.clock.bank_at(Seat(seat), now)) for seat in (0, 1)],
            "rounds": [r.summary() for r in rounds],
            **({"void_reason": state.void_reason} if state.void_reason is not None else {}),
        }

    def placements(self, state: State) -> tuple[Placement, ...] | None:
        return ranking.placements(state)

    def placements_of(self, outcome: Mapping[str, JSON]) -> tuple[Placement, ...] | None:
        return ranking.placements_of(outcome)

    def parse_action(self, obj: Mapping[str, JSON]) -> Action:
        return parse_action(obj)

    def parse_deal(self, obj: JSON) -> Deal:
        return Deal.parse(obj)

    def deal_json(self, deal: Deal) -> JSON:
        return deal.to_json()

    def parse_lot(self, record: Mapping[str, JSON]) -> Seat:
        return Seat(0)

    def lot_json(self, lot: Seat) -> dict[str, JSON]:
        return {}
