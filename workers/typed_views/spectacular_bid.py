"""A Spectacular Bid view as its typed message (views.proto SpectacularBidView), and back as the dict
view_json carries (the test that compares the two keeps them equal field for field)."""

from __future__ import annotations

from typing import Any

from protos.tablehall.v1 import views_pb2
from workers.games.catalog import SPECTACULAR_BID
from workers.games.engine import JSON
from workers.games.spectacular_bid.view import LayoutView, MatchView
from workers.typed_views.legal import action_dict, action_message
from workers.typed_views.present import present

ARMS = (("W", "west"), ("E", "east"), ("N", "north"), ("S", "south"))
"""view_json's layout.lines keys and the typed layout's fields."""
DECLINED = "declined"


def message(view: MatchView) -> views_pb2.SpectacularBidView:
    """The typed view, built straight from the engine's view (no JSON in between)."""
    return views_pb2.SpectacularBidView(
        seat=view.seat, status=view.status, phase=view.phase, round=view.round, turn=view.turn,
        points=view.points, banks_ms=view.banks_ms, clock_running=view.clock_running,
        decision_since_ms=view.decision_since_ms, delay_ms=view.delay_ms, deadline_ms=view.deadline_ms,
        hand=None if view.hand is None else views_pb2.Tiles(tiles=view.hand),
        hand_sizes=view.hand_sizes, boneyard_size=view.boneyard_size, layout=_layout(view.layout),
        jockey=view.jockey, leader=view.leader,
        auction=None if view.auction is None else views_pb2.SpectacularBidAuction(
            bid=view.auction[0], bidder=view.auction[1]
        ),
        ready=view.ready, hand_over=view.hand_over, winner=view.winner, reason=view.reason,
        void_reason=view.void_reason,
        legal=[
            views_pb2.SpectacularBidLegal(action=action_message(entry), count=count)
            for entry, count in zip(view.legal, view.counts, strict=True)
        ],
        past_rounds=[_round(r) for r in view.past_rounds],
        final_round=None if view.final_round is None else _round(view.final_round),
    )  # fmt: skip


def _layout(layout: LayoutView) -> views_pb2.SpectacularBidLayout:
    lines = dict(layout.lines)
    return views_pb2.SpectacularBidLayout(
        lead=layout.lead,
        **{name: lines[end] for end, name in ARMS},
        spinner=layout.spinner,
        open_ends=dict(layout.open_ends),
        count=layout.count,
    )


def _round(summary: dict[str, JSON]) -> views_pb2.SpectacularBidRound:
    auction: Any = summary["auction"]
    block: Any = summary.get("block")
    return views_pb2.SpectacularBidRound(
        end=summary["end"],
        jockey=summary["jockey"],
        lead_by=summary["lead_by"],
        auction_declined=auction == DECLINED,
        sale=views_pb2.SpectacularBidSale(**auction) if isinstance(auction, dict) else None,
        domino_by=summary.get("domino_by"),
        block=None if block is None else views_pb2.SpectacularBidBlock(**block),
    )


def as_dict(view: views_pb2.SpectacularBidView) -> dict[str, JSON]:
    """The typed view as the dict view_json holds (what clients that read dicts keep reading)."""
    layout = view.layout
    return {
        "game": SPECTACULAR_BID,
        "seat": present(view, "seat"),
        "status": view.status,
        "phase": view.phase,
        "round": view.round,
        "turn": present(view, "turn"),
        "points": list(view.points),
        "banks_ms": list(view.banks_ms),
        "clock_running": present(view, "clock_running"),
        "decision_since_ms": present(view, "decision_since_ms"),
        "delay_ms": view.delay_ms,
        "deadline_ms": present(view, "deadline_ms"),
        "hand": list(view.hand.tiles) if view.HasField("hand") else None,
        "hand_sizes": list(view.hand_sizes),
        "boneyard_size": view.boneyard_size,
        "layout": {
            "lead": present(layout, "lead"),
            "lines": {end: list(getattr(layout, name)) for end, name in ARMS},
            "spinner": present(layout, "spinner"),
            "open_ends": dict(layout.open_ends),
            "count": layout.count,
        },
        "jockey": present(view, "jockey"),
        "leader": present(view, "leader"),
        "auction": {"bid": view.auction.bid, "bidder": view.auction.bidder} if view.HasField("auction") else None,
        "ready": list(view.ready),
        "hand_over": view.hand_over,
        "winner": present(view, "winner"),
        "reason": present(view, "reason"),
        "void_reason": present(view, "void_reason"),
        "legal": [action_dict(entry.action) for entry in view.legal],
        "counts": [present(entry, "count") for entry in view.legal],
        "past_rounds": [_round_dict(r) for r in view.past_rounds],
        "final_round": _round_dict(view.final_round) if view.HasField("final_round") else None,
    }


def _round_dict(summary: views_pb2.SpectacularBidRound) -> dict[str, JSON]:
    auction: JSON = None
    if summary.auction_declined:
        auction = DECLINED
    elif summary.HasField("sale"):
        sale = summary.sale
        auction = {"winner": sale.winner, "bid": sale.bid, "paid": sale.paid}
    out: dict[str, JSON] = {
        "end": present(summary, "end"),
        "jockey": present(summary, "jockey"),
        "lead_by": present(summary, "lead_by"),
        "auction": auction,
    }
    if summary.HasField("domino_by"):
        out["domino_by"] = summary.domino_by
    if summary.HasField("block"):
        block = summary.block
        out["block"] = {"sums": list(block.sums), "to": present(block, "to"), "owed": block.owed, "short": block.short}
    return out
