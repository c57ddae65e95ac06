"""A 501♠ view as its typed message (views.proto FiveOhOneView), and back as the dict view_json carries
(the test that compares the two keeps them equal field for field). The bidding's and the declaration's
many choices are typed ranges; each legal entry's Action is ready to send (the range's first choice)."""

from __future__ import annotations

from typing import Any

from protos.tablehall.v1 import views_pb2
from workers.games.catalog import FIVE_OH_ONE
from workers.games.engine import JSON
from workers.games.five_oh_one.actions import trump_code
from workers.games.five_oh_one.cards import codes
from workers.games.five_oh_one.state import HandResult
from workers.games.five_oh_one.view import TableView
from workers.typed_views.legal import action_dict, action_fields

STEP = 1
"""501's bids and targets are any whole number in their range (F-3, F-5)."""


def message(view: TableView) -> views_pb2.FiveOhOneView:
    """The typed view, built straight from the engine's view (no JSON in between; nested messages are
    added in place, from keywords, which protobuf builds fastest)."""
    hand = None if view.hand is None else codes(view.hand)
    nested: dict[str, Any] = {  # messages as keywords (the stubs type them as messages)
        "hand": None if hand is None else {"cards": hand},
        "talon": None if view.talon is None else {"cards": codes(view.talon)},
    }
    out = views_pb2.FiveOhOneView(
        seat=view.seat, phase=view.phase, dealer=view.dealer, sitting_out=view.sitting_out,
        scores=view.scores, turn=view.turn, hand_sizes=view.hand_sizes, looked=view.looked,
        declarer=view.declarer, bid=view.bid, blind=view.blind, trump=view.trump, target=view.target,
        winners=view.winners, limit_ms=view.limit_ms, clock_running=view.clock_running,
        decision_since_ms=view.decision_since_ms, deadline_ms=view.deadline_ms, status=view.status,
        void_reason=view.void_reason, **nested,
    )  # fmt: skip
    for seat, amount in view.calls:
        out.calls.add(seat=seat, bid=amount)
    for seat, card in view.trick:
        out.trick.add(seat=seat, card=card.code)
    for trick in view.tricks:
        out.tricks.add(leader=trick.leader, cards=codes(trick.cards), winner=trick.winner)
    for marriage in view.marriages:
        out.marriages.add(seat=marriage.seat, suit=marriage.suit.value, value=marriage.value)
    for entry in view.legal:
        out.legal.add(**_legal(entry, hand or []))
    out.MergeFromString(_hands(view.results))
    return out


def wire(view: TableView) -> bytes:
    """The typed view serialized."""
    encoded: bytes = message(view).SerializeToString()
    return encoded


_SCORED: dict[int, tuple[tuple[HandResult, ...], bytes]] = {}
"""The scored hands already converted, by the identity of the state's tuple (the same for every seat and
every change until the next hand is scored), as the serialized `hands` field: merged in C, not rebuilt."""
KEPT = 4096


def _hands(results: tuple[HandResult, ...]) -> bytes:
    known = _SCORED.get(id(results))
    if known is not None and known[0] is results:
        return known[1]
    scored = views_pb2.FiveOhOneView()
    for result in results:
        scored.hands.add(**_hand(result))
    encoded = scored.SerializeToString()
    if len(_SCORED) >= KEPT:
        _SCORED.clear()
    _SCORED[id(results)] = (results, encoded)  # the tuple is kept: its id is not reused while cached
    return encoded


def _legal(entry: dict[str, JSON], hand: list[str]) -> dict[str, Any]:
    """A legal entry as its message's keywords: ranges typed, and its Action ready to send (the lowest bid;
    the first trump, the lowest target and the hand's last cards in deck order given away)."""
    amount: Any = entry.get("amount")
    if entry["do"] == "bid" and isinstance(amount, dict):
        least = int(amount["min"])
        return {
            "action": {"bid": {"amount": least}},
            "amount": {"min": least, "max": int(amount["max"]), "step": STEP},
        }
    if entry["do"] == "declare":
        trumps: Any = entry["trump"]
        target: Any = entry["target"]
        give: Any = entry["give"]
        to = [int(seat) for seat in give["to"]]
        gives = dict(zip(to, hand[-len(to) :] if len(hand) >= len(to) else [], strict=False))
        least = int(target["min"])
        return {
            "action": {"declare": {"trump": trumps[0], "target": least, "give": gives}},
            "declare": {
                "trumps": trumps,
                "target": {"min": least, "max": int(target["max"]), "step": STEP},
                "give_to": to,
                "give_cards": str(give["cards"]),
            },
        }
    return {"action": action_fields(entry)}


def _hand(result: HandResult) -> dict[str, Any]:
    return {
        "dealer": result.dealer, "declarer": result.declarer, "bid": result.bid, "target": result.target,
        "trump": None if result.target is None else trump_code(result.trump), "blind": result.blind,
        "abandoned": result.abandoned, "made": result.made, "points": result.points, "deltas": result.deltas,
    }  # fmt: skip


def as_dict(view: views_pb2.FiveOhOneView) -> dict[str, JSON]:
    """The typed view as the dict view_json holds (what clients that read dicts keep reading)."""
    return {
        "game": FIVE_OH_ONE,
        "seat": view.seat if view.HasField("seat") else None,
        "phase": view.phase,
        "dealer": view.dealer,
        "sitting_out": view.sitting_out if view.HasField("sitting_out") else None,
        "scores": list(view.scores),
        "turn": view.turn if view.HasField("turn") else None,
        "hand": list(view.hand.cards) if view.HasField("hand") else None,
        "hand_sizes": list(view.hand_sizes),
        "looked": list(view.looked),
        "calls": [
            {"seat": c.seat, "bid": c.bid} if c.HasField("bid") else {"seat": c.seat, "pass": True} for c in view.calls
        ],
        "declarer": view.declarer if view.HasField("declarer") else None,
        "bid": view.bid if view.HasField("bid") else None,
        "blind": view.blind if view.HasField("blind") else None,
        "talon": list(view.talon.cards) if view.HasField("talon") else None,
        "trump": view.trump if view.HasField("trump") else None,
        "target": view.target if view.HasField("target") else None,
        "trick": [{"seat": t.seat, "card": t.card} for t in view.trick],
        "tricks": [{"leader": t.leader, "cards": list(t.cards), "winner": t.winner} for t in view.tricks],
        "marriages": [{"seat": m.seat, "suit": m.suit, "value": m.value} for m in view.marriages],
        "legal": [_legal_dict(entry) for entry in view.legal],
        "hands": [_hand_dict(h) for h in view.hands],
        "winners": list(view.winners),
        "limit_ms": view.limit_ms if view.HasField("limit_ms") else None,
        "clock_running": view.clock_running if view.HasField("clock_running") else None,
        "decision_since_ms": view.decision_since_ms if view.HasField("decision_since_ms") else None,
        "deadline_ms": view.deadline_ms if view.HasField("deadline_ms") else None,
        "status": view.status,
        "void_reason": view.void_reason if view.HasField("void_reason") else None,
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
        "declarer": hand.declarer if hand.HasField("declarer") else None,
        "bid": hand.bid if hand.HasField("bid") else None,
        "target": hand.target if hand.HasField("target") else None,
        "trump": hand.trump if hand.HasField("trump") else None,
        "blind": hand.blind,
        "abandoned": hand.abandoned,
        "made": hand.made,
        "points": list(hand.points),
        "deltas": list(hand.deltas),
    }
