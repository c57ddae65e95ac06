"""What one seat, or a spectator, may see (DESIGN.md "Security"): never another hand, never the talon
before it is exposed, never a blind player's own cards, never which card went face down to whom.

With a decision limit the view also carries the running decision's timing, under the names the
Spectacular Bid view uses (`clock_running`, `decision_since_ms`, `deadline_ms`, all match time), so a
client counts either game's decision down the same way: `deadline_ms - now`."""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.engine import JSON, Millis, Seat
from workers.games.five_oh_one.actions import MIN_BID, Bid, trump_code
from workers.games.five_oh_one.cards import Card, codes, in_deck_order
from workers.games.five_oh_one.legal import ContractChoices, legal_actions, lowest_bid
from workers.games.five_oh_one.options import NAME
from workers.games.five_oh_one.rules import next_deadline
from workers.games.five_oh_one.state import (
    Bidding,
    Call,
    Contract,
    HandResult,
    Marriage,
    State,
    Trick,
    Tricks,
)


@dataclass(frozen=True, slots=True)
class TableView:
    seat: Seat | None
    """The viewer; None for a spectator."""
    phase: str
    """"deal" (waiting for the next deal), "bidding", "contract", "tricks" or "over"."""
    dealer: Seat
    sitting_out: Seat | None
    scores: tuple[int, ...]
    turn: Seat | None
    hand: tuple[Card, ...] | None
    """The viewer's own cards; None for a spectator, or while the viewer is still blind (F-4)."""
    hand_sizes: tuple[int, ...]
    looked: tuple[Seat, ...]
    calls: tuple[Call, ...]
    declarer: Seat | None
    bid: int | None
    blind: bool | None
    talon: tuple[Card, ...] | None
    """Once exposed (F-5); None before."""
    trump: str | None
    target: int | None
    trick: tuple[tuple[Seat, Card], ...]
    tricks: tuple[Trick, ...]
    marriages: tuple[Marriage, ...]
    legal: tuple[dict[str, JSON], ...]
    results: tuple[HandResult, ...]
    winners: tuple[Seat, ...]
    limit_ms: Millis | None
    """The per-decision time limit (option `decision_limit_s`), None when there is none."""
    clock_running: Seat | None
    """Whose decision the limit is timing now; None without a limit, between hands, and once over."""
    decision_since_ms: Millis | None
    """When that decision began (match time); None when no decision is timed."""
    deadline_ms: Millis | None
    """The first instant at which that player has lost on time (`next_deadline`), None when none."""
    status: str = "in_progress"
    """in_progress, finished or voided (the same words as the record outcome)."""
    void_reason: str | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "game": NAME,
            "seat": self.seat,
            "phase": self.phase,
            "dealer": self.dealer,
            "sitting_out": self.sitting_out,
            "scores": list(self.scores),
            "turn": self.turn,
            "hand": None if self.hand is None else codes(self.hand),
            "hand_sizes": list(self.hand_sizes),
            "looked": list(self.looked),
            "calls": [
                {"seat": s, "bid": amount} if amount is not None else {"seat": s, "pass": True}
                for s, amount in self.calls
            ],
            "declarer": self.declarer,
            "bid": self.bid,
            "blind": self.blind,
            "talon": None if self.talon is None else codes(self.talon),
            "trump": self.trump,
            "target": self.target,
            "trick": [{"seat": s, "card": c.code} for s, c in self.trick],
            "tricks": [{"leader": t.leader, "cards": codes(t.cards), "winner": t.winner} for t in self.tricks],
            "marriages": [{"seat": m.seat, "suit": m.suit.value, "value": m.value} for m in self.marriages],
            "legal": list(self.legal),
            "hands": [result.to_json() for result in self.results],
            "winners": list(self.winners),
            "limit_ms": self.limit_ms,
            "clock_running": self.clock_running,
            "decision_since_ms": self.decision_since_ms,
            "deadline_ms": self.deadline_ms,
            "status": self.status,
            "void_reason": self.void_reason,
        }


def view(state: State, seat: Seat | None) -> TableView:
    hand = state.hand
    table = state.table
    phase = (
        "over"
        if state.ending is not None
        else "deal"
        if hand is None
        else ("bidding" if isinstance(hand, Bidding) else "contract" if isinstance(hand, Contract) else "tricks")
    )
    dealer = hand.terms.dealer if isinstance(hand, Tricks) else state.dealer if hand is None else hand.dealer
    sizes = (0,) * table.seats if hand is None else tuple(len(cards) for cards in hand.hands)
    mine: tuple[Card, ...] | None = None
    if seat is not None and hand is not None and (not isinstance(hand, Bidding) or seat in hand.looked):
        mine = in_deck_order(hand.hands[seat])
    declarer = bid = target = trump = blind = talon = None
    calls: tuple[Call, ...] = ()
    looked: tuple[Seat, ...] = ()
    turn: Seat | None = None
    trick: tuple[tuple[Seat, Card], ...] = ()
    done: tuple[Trick, ...] = ()
    marriages: tuple[Marriage, ...] = ()
    if isinstance(hand, Bidding):
        calls, turn = hand.calls, hand.turn
        looked = tuple(sorted(hand.looked))
    elif isinstance(hand, Contract):
        calls, turn, declarer, bid, blind, talon = (
            hand.calls,
            hand.declarer,
            hand.declarer,
            hand.bid,
            hand.blind,
            hand.talon,
        )
    elif isinstance(hand, Tricks):
        terms = hand.terms
        calls, declarer, bid, blind, talon = terms.calls, terms.declarer, terms.bid, terms.blind, terms.talon
        trump, target = trump_code(terms.trump), terms.target
        turn, trick, done, marriages = hand.turn, hand.trick, hand.done, hand.marriages
    ending = state.ending
    if ending is not None:
        turn = None
    legal = () if seat is None else _legal(state, seat)
    clock = state.clock
    running = clock.turn if clock is not None and ending is None else None
    return TableView(
        seat,
        phase,
        dealer,
        dealer if table.seats == 4 else None,
        state.scores,
        turn,
        mine,
        sizes,
        looked,
        calls,
        declarer,
        bid,
        blind,
        talon,
        trump,
        target,
        trick,
        done,
        marriages,
        legal,
        state.results,
        () if ending is None else ending.winners,
        state.table.limit,
        running,
        None if clock is None or running is None else clock.since,
        next_deadline(state),
        "in_progress" if ending is None else "voided" if ending.reason == "void" else "finished",
        ending.detail if ending is not None and ending.reason == "void" else None,
    )


def _legal(state: State, seat: Seat) -> tuple[dict[str, JSON], ...]:
    """The viewer's legal actions; bids and declarations summarized as ranges (there are thousands)."""
    actions = legal_actions(state, seat)
    if isinstance(actions, ContractChoices):
        hand = state.hand
        assert isinstance(hand, Contract)
        to = [s for s in state.table.active(hand.dealer) if s != seat]
        return (
            {"do": "abandon"},
            {
                "do": "declare",
                "trump": ["S", "H", "D", "C", "NT"],
                "target": {"min": hand.bid, "max": 220},
                "give": {"to": to, "cards": "two different cards of your hand"},
            },
        )
    out = [action.to_json() for action in actions if not isinstance(action, Bid)]
    if any(isinstance(action, Bid) for action in actions):
        assert isinstance(state.hand, Bidding)
        out.append({"do": "bid", "amount": {"min": max(MIN_BID, lowest_bid(state.hand)), "max": 220}})
    return tuple(out)
