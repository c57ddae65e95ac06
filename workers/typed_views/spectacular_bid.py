"""A Spectacular Bid view as its typed message (views.proto SpectacularBidView), and back as the dict
view_json carries (the test that compares the two keeps them equal field for field)."""

from __future__ import annotations

from typing import Any

from protos.tablehall.v1 import views_pb2
from workers.games.catalog import SPECTACULAR_BID
from workers.games.engine import JSON
from workers.games.spectacular_bid.view import LayoutView, MatchView, TableView
from workers.typed_views.legal import action_dict, action_fields
from workers.wire import field, tag

ARMS = (("W", "west"), ("E", "east"), ("N", "north"), ("S", "south"))
"""view_json's layout.lines keys and the typed layout's fields."""
DECLINED = "declined"


def message(view: MatchView) -> views_pb2.SpectacularBidView:
    """The typed view, parsed from its wire form (`wire`)."""
    return views_pb2.SpectacularBidView.FromString(wire(view))


def wire(view: MatchView) -> bytes:
    """The typed view serialized, put together from parts each built once and kept: what every seat and
    spectator of a change sees alike (`_public`), the viewer's seat and hand, and each legal entry. The
    parts hold disjoint fields, so their bytes one after the other are the whole message (protobuf
    merges concatenated messages field by field)."""
    return _public(view) + _own(view.seat, view.hand) + b"".join(map(_legal, view.legal, view.counts))


_VIEW: Any = views_pb2.SpectacularBidView
"""Built from keywords, nested messages as dicts (which protobuf builds fastest; the stubs type them as messages)."""
KEPT = 4096
"""Entries each cache below holds at most (then it starts afresh: the next changes rebuild what they use)."""
_PUBLIC: dict[int, tuple[TableView, bytes]] = {}
_OWN: dict[tuple[int | None, tuple[str, ...] | None], bytes] = {}
_LEGAL: dict[tuple[tuple[tuple[str, Any], ...], int | None], bytes] = {}
_LAYOUT: dict[int, tuple[LayoutView, bytes]] = {}


def _encoded(**fields: Any) -> bytes:
    """A SpectacularBidView of these fields, serialized."""
    encoded: bytes = _VIEW(**fields).SerializeToString()
    return encoded


def _kept(cache: dict[Any, Any], key: Any, value: bytes | tuple[Any, ...]) -> None:
    if len(cache) >= KEPT:
        cache.clear()
    cache[key] = value


def _public(view: MatchView) -> bytes:
    """Every field but the seat, hand and legal entries: the same for each viewer of one change (the
    table they share), so the second seat's view (and the spectators') of a change reuses the first's bytes."""
    table = view.table
    known = _PUBLIC.get(id(table))
    if known is not None and known[0] is table:
        return known[1]
    built = _scalars(table) + _layout_wire(table.layout) + _past_rounds(table.past_rounds)
    if table.final_round is not None:
        built += _final(table)
    _kept(_PUBLIC, id(table), (table, built))  # the table is kept: its id is not reused while cached
    return built


def _scalars(view: TableView) -> bytes:
    """The table's own fields: those that change at most a few times a round from records built once per
    value, those of the clock (new at nearly every change) built together."""
    settled = (
        view.status, view.phase, view.round, view.delay_ms, view.jockey, view.leader, view.auction,
        view.hand_over, view.winner, view.reason, view.void_reason, view.points,
    )  # fmt: skip
    known = _SETTLED.get(settled)
    if known is None:
        auction = None if view.auction is None else {"bid": view.auction[0], "bidder": view.auction[1]}
        known = _encoded(
            status=view.status, phase=view.phase, round=view.round, delay_ms=view.delay_ms, jockey=view.jockey,
            leader=view.leader, auction=auction, hand_over=view.hand_over, winner=view.winner,
            reason=view.reason, void_reason=view.void_reason, points=view.points,
        )  # fmt: skip
        _kept(_SETTLED, settled, known)
    return known + _moving(view)


def _moving(view: TableView) -> bytes:
    """The fields a move changes (whose turn, the clocks, the hands' and boneyard's sizes, who is ready):
    new at nearly every change (protobuf builds them faster than Python writes them field by field)."""
    return _encoded(
        turn=view.turn, banks_ms=view.banks_ms, clock_running=view.clock_running,
        decision_since_ms=view.decision_since_ms, deadline_ms=view.deadline_ms, hand_sizes=view.hand_sizes,
        boneyard_size=view.boneyard_size, ready=view.ready,
    )  # fmt: skip


_SETTLED: dict[tuple[Any, ...], bytes] = {}
"""The table's slow fields' bytes, by their values (the same over most changes of a round)."""


def _final(view: TableView) -> bytes:
    assert view.final_round is not None
    return _encoded(final_round=_round(view.final_round))


def _own(seat: int | None, hand: tuple[str, ...] | None) -> bytes:
    """The viewer's seat and hand."""
    key = (seat, hand)
    known = _OWN.get(key)
    if known is None:
        known = _encoded(seat=seat, hand=None if hand is None else {"tiles": hand})
        _kept(_OWN, key, known)
    return known


def _legal(entry: dict[str, JSON], count: int | None) -> bytes:
    """One legal entry as a one-entry `legal` field (entries one after the other are the repeated field)."""
    key = (tuple(entry.items()), count)
    known = _LEGAL.get(key)
    if known is None:
        known = _encoded(legal=[{"action": action_fields(entry), "count": count}])
        _kept(_LEGAL, key, known)
    return known


def _layout_wire(layout: LayoutView) -> bytes:
    """The layout field, once per layout (a layout stays the same over the changes that play no tile), put
    together from each tile's, end's and number's record, each built once (`_record`)."""
    known = _LAYOUT.get(id(layout))
    if known is not None and known[0] is layout:
        return known[1]
    arms = _ARMS
    parts = [_record("lead", layout.lead)]
    for (_, tiles), name in zip(layout.lines, ARM_FIELDS, strict=True):
        if tiles:
            parts.append(arms.get((name, tiles)) or _arm(name, tiles))
    parts.append(_record("spinner", layout.spinner))
    parts += [_record("open_ends", end) for end in layout.open_ends]
    parts.append(_record("count", layout.count))
    built = field(LAYOUT_KEY, b"".join(parts))
    _kept(_LAYOUT, id(layout), (layout, built))
    return built


def _arm(name: str, tiles: tuple[str, ...]) -> bytes:
    """One arm's tiles, in their order, as its repeated field (an arm changes by one tile a play: the others
    are found here as they were)."""
    built = b"".join([_RECORDS.get((name, tile)) or _record(name, tile) for tile in tiles])
    _kept(_ARMS, (name, tiles), built)
    return built


def _record(name: str, value: Any) -> bytes:
    """One field of a layout (one tile of an arm, one open end), serialized once per value."""
    key = (name, value)
    known = _RECORDS.get(key)
    if known is None:
        given = {value[0]: value[1]} if name == "open_ends" else [value] if name in ARM_FIELDS else value
        known = _RECORDS[key] = _LAYOUT_TYPE(**{name: given}).SerializeToString()
    return known


_ARMS: dict[tuple[str, tuple[str, ...]], bytes] = {}
"""Each arm's serialized tiles, by its name and tiles."""
_LAYOUT_TYPE: Any = views_pb2.SpectacularBidLayout
_RECORDS: dict[tuple[str, Any], bytes] = {}
"""A layout's fields' records by value: a few hundred at most (28 tiles, 7 pips, counts to 60)."""
ARM_FIELDS = tuple(name for _, name in ARMS)
LAYOUT_KEY = tag(views_pb2.SpectacularBidView.DESCRIPTOR.fields_by_name["layout"].number)


_PAST: dict[int, tuple[tuple[dict[str, JSON], ...], bytes]] = {}
"""The past rounds already converted, by the identity of the engine's tuple of their summaries (the same
for every seat and change until the next round ends), as the serialized `past_rounds` field."""


def _past_rounds(summaries: tuple[dict[str, JSON], ...]) -> bytes:
    known = _PAST.get(id(summaries))
    if known is not None and known[0] is summaries:
        return known[1]
    past = views_pb2.SpectacularBidView()
    for summary in summaries:
        past.past_rounds.add(**_round(summary))
    encoded = past.SerializeToString()
    _kept(_PAST, id(summaries), (summaries, encoded))  # the tuple is kept: its id is not reused while cached
    return encoded


def _round(summary: dict[str, JSON]) -> dict[str, Any]:
    """A round's summary as the keywords of its message."""
    auction: Any = summary["auction"]
    return {
        "end": summary["end"],
        "jockey": summary["jockey"],
        "lead_by": summary["lead_by"],
        "auction_declined": auction == DECLINED,
        "sale": auction if isinstance(auction, dict) else None,
        "domino_by": summary.get("domino_by"),
        "block": summary.get("block"),
    }


def as_dict(view: views_pb2.SpectacularBidView) -> dict[str, JSON]:
    """The typed view as the dict view_json holds (what clients that read dicts keep reading)."""
    layout = view.layout
    return {
        "game": SPECTACULAR_BID,
        "seat": view.seat if view.HasField("seat") else None,
        "status": view.status,
        "phase": view.phase,
        "round": view.round,
        "turn": view.turn if view.HasField("turn") else None,
        "points": list(view.points),
        "banks_ms": list(view.banks_ms),
        "clock_running": view.clock_running if view.HasField("clock_running") else None,
        "decision_since_ms": view.decision_since_ms if view.HasField("decision_since_ms") else None,
        "delay_ms": view.delay_ms,
        "deadline_ms": view.deadline_ms if view.HasField("deadline_ms") else None,
        "hand": list(view.hand.tiles) if view.HasField("hand") else None,
        "hand_sizes": list(view.hand_sizes),
        "boneyard_size": view.boneyard_size,
        "layout": {
            "lead": layout.lead if layout.HasField("lead") else None,
            "lines": {end: list(getattr(layout, name)) for end, name in ARMS},
            "spinner": layout.spinner if layout.HasField("spinner") else None,
            "open_ends": dict(layout.open_ends),
            "count": layout.count,
        },
        "jockey": view.jockey if view.HasField("jockey") else None,
        "leader": view.leader if view.HasField("leader") else None,
        "auction": {"bid": view.auction.bid, "bidder": view.auction.bidder} if view.HasField("auction") else None,
        "ready": list(view.ready),
        "hand_over": view.hand_over,
        "winner": view.winner if view.HasField("winner") else None,
        "reason": view.reason if view.HasField("reason") else None,
        "void_reason": view.void_reason if view.HasField("void_reason") else None,
        "legal": [action_dict(entry.action) for entry in view.legal],
        "counts": [(entry.count if entry.HasField("count") else None) for entry in view.legal],
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
        "end": summary.end if summary.HasField("end") else None,
        "jockey": summary.jockey if summary.HasField("jockey") else None,
        "lead_by": summary.lead_by if summary.HasField("lead_by") else None,
        "auction": auction,
    }
    if summary.HasField("domino_by"):
        out["domino_by"] = summary.domino_by
    if summary.HasField("block"):
        block = summary.block
        out["block"] = {
            "sums": list(block.sums),
            "to": block.to if block.HasField("to") else None,
            "owed": block.owed,
            "short": block.short,
        }
    return out
