"""A 501♠ view as its typed message (views.proto FiveOhOneView), and back as the dict view_json carries
(the test that compares the two keeps them equal field for field). The bidding's and the declaration's
many choices are typed ranges; each legal entry's Action is ready to send (the range's first choice)."""

from __future__ import annotations

from typing import Any

from protos.tablehall.v1 import actions_pb2, views_pb2
from workers.games.catalog import FIVE_OH_ONE
from workers.games.engine import JSON
from workers.games.five_oh_one.actions import trump_code
from workers.games.five_oh_one.cards import codes
from workers.games.five_oh_one.state import HandResult
from workers.games.five_oh_one.view import TableView
from workers.typed_views.legal import action_dict, action_message
from workers.typed_views.present import present

STEP = 1
"""501's bids and targets are any whole number in their range (F-3, F-5)."""


def message(view: TableView) -> views_pb2.FiveOhOneView:
    """The typed view, built straight from the engine's view (no JSON in between)."""
    hand = None if view.hand is None else codes(view.hand)
    return views_pb2.FiveOhOneView(
        seat=view.seat, phase=view.phase, dealer=view.dealer, sitting_out=view.sitting_out,
        scores=view.scores, turn=view.turn, hand=None if hand is None else views_pb2.Cards(cards=hand),
        hand_sizes=view.hand_sizes, looked=view.looked,
        calls=[views_pb2.FiveOhOneCall(seat=seat, bid=amount) for seat, amount in view.calls],
        declarer=view.declarer, bid=view.bid, blind=view.blind,
        talon=None if view.talon is None else views_pb2.Cards(cards=codes(view.talon)),
        trump=view.trump, target=view.target,
        trick=[views_pb2.FiveOhOneTrickCard(seat=seat, card=card.code) for seat, card in view.trick],
        tricks=[
            views_pb2.FiveOhOneTrick(leader=t.leader, cards=codes(t.cards), winner=t.winner) for t in view.tricks
        ],
        marriages=[
            views_pb2.FiveOhOneMarriage(seat=m.seat, suit=m.suit.value, value=m.value) for m in view.marriages
        ],
        legal=[_legal(entry, hand or []) for entry in view.legal],
        hands=[_hand(result) for result in view.results],
        winners=view.winners, limit_ms=view.limit_ms, clock_running=view.clock_running,
        decision_since_ms=view.decision_since_ms, deadline_ms=view.deadline_ms, status=view.status,
        void_reason=view.void_reason,
    )  # fmt: skip


def _legal(entry: dict[str, JSON], hand: list[str]) -> views_pb2.FiveOhOneLegal:
    """A legal entry: ranges typed, and its Action ready to send (the lowest bid; the first trump, the
    lowest target and the hand's last cards in deck order given away)."""
    amount: Any = entry.get("amount")
    if entry["do"] == "bid" and isinstance(amount, dict):
        least = int(amount["min"])
        return views_pb2.FiveOhOneLegal(
            action=actions_pb2.Action(bid=actions_pb2.Bid(amount=least)),
            amount=views_pb2.IntRange(min=least, max=int(amount["max"]), step=STEP),
        )
    if entry["do"] == "declare":
        trumps: Any = entry["trump"]
        target: Any = entry["target"]
        give: Any = entry["give"]
        to = [int(seat) for seat in give["to"]]
        gives = dict(zip(to, hand[-len(to) :] if len(hand) >= len(to) else [], strict=False))
        declare = actions_pb2.Declare(trump=trumps[0], target=int(target["min"]), give=gives)
        return views_pb2.FiveOhOneLegal(
            action=actions_pb2.Action(declare=declare),
            declare=views_pb2.FiveOhOneDeclareChoices(
                trumps=trumps,
                target=views_pb2.IntRange(min=int(target["min"]), max=int(target["max"]), step=STEP),
                give_to=to,
                give_cards=str(give["cards"]),
            ),
        )
    return views_pb2.FiveOhOneLegal(action=action_message(entry))


def _hand(result: HandResult) -> views_pb2.FiveOhOneHand:
    return views_pb2.FiveOhOneHand(
        dealer=result.dealer, declarer=result.declarer, bid=result.bid, target=result.target,
        trump=None if result.target is None else trump_code(result.trump), blind=result.blind,
        abandoned=result.abandoned, made=result.made, points=result.points, deltas=result.deltas,
    )  # fmt: skip


def as_dict(view: views_pb2.FiveOhOneView) -> dict[str, JSON]:
    """The typed view as the dict view_json holds (what clients that read dicts keep reading)."""
    return {
        "game": FIVE_OH_ONE,
        "seat": present(view, "seat"),
        "phase": view.phase,
        "dealer": view.dealer,
        "sitting_out": present(view, "sitting_out"),
        "scores": list(view.scores),
        "turn": present(view, "turn"),
        "hand": list(view.hand.cards) if view.HasField("hand") else None,
        "hand_sizes": list(view.hand_sizes),
        "looked": list(view.looked),
        "calls": [
            {"seat": c.seat, "bid": c.bid} if c.HasField("bid") else {"seat": c.seat, "pass": True} for c in view.calls
        ],
        "declarer": present(view, "declarer"),
        "bid": present(view, "bid"),
        "blind": present(view, "blind"),
        "talon": list(view.talon.cards) if view.HasField("talon") else None,
        "trump": present(view, "trump"),
        "target": present(view, "target"),
        "trick": [{"seat": t.seat, "card": t.card} for t in view.trick],
        "tricks": [{"leader": t.leader, "cards": list(t.cards), "winner": t.winner} for t in view.tricks],
        "marriages": [{"seat": m.seat, "suit": m.suit, "value": m.value} for m in view.marriages],
        "legal": [_legal_dict(entry) for entry in view.legal],
        "hands": [_hand_dict(h) for h in view.hands],
        "winners": list(view.winners),
        "limit_ms": present(view, "limit_ms"),
        "clock_running": present(view, "clock_running"),
        "decision_since_ms": present(view, "decision_since_ms"),
        "deadline_ms": present(view, "deadline_ms"),
        "status": view.status,
        "void_reason": present(view, "void_reason"),
    }


def _legal_dict(entry: views_pb2.FiveOhOneLegal) -> dict[str, JSON]:
    if entry.HasField("amount"):
        return {"do": "bid", "amount": {"min": entry.amount.min, "max": entry.amount.max}}
    if entry.HasField("declare"):
        choices = entry.declare
        return {
            "do": "declare",
            "trump": list(choices.trumps),
            "target": {"min": choices.target.min, "max": choices.target.max},
            "give": {"to": list(choices.give_to), "cards": choices.give_cards},
        }
    return action_dict(entry.action)


def _hand_dict(hand: views_pb2.FiveOhOneHand) -> dict[str, JSON]:
    return {
        "dealer": hand.dealer,
        "declarer": present(hand, "declarer"),
        "bid": present(hand, "bid"),
        "target": present(hand, "target"),
        "trump": present(hand, "trump"),
        "blind": hand.blind,
        "abandoned": hand.abandoned,
        "made": hand.made,
        "points": list(hand.points),
        "deltas": list(hand.deltas),
    }
