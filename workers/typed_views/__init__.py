"""The typed views (views.proto) at their one seam: the worker converts each engine view to its message
where views are published (workers/published.py), and any client turns a typed view back into the dict
view_json carries with `view_dict`. One module per game; nothing else here branches on the game."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import Message

from protos.tablehall.v1 import matches_pb2, views_pb2
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID
from workers.games.engine import JSON
from workers.typed_views import five_oh_one, spectacular_bid

FIELDS = {SPECTACULAR_BID: "spectacular_bid", FIVE_OH_ONE: "five_oh_one"}
"""Each game's field in the `view` oneof of Update and ActResponse."""
_MESSAGES: dict[str, Any] = {SPECTACULAR_BID: spectacular_bid.message, FIVE_OH_ONE: five_oh_one.message}
_WIRES: dict[str, Any] = {SPECTACULAR_BID: spectacular_bid.wire, FIVE_OH_ONE: five_oh_one.wire}
_DICTS: dict[type[Message], Any] = {
    views_pb2.SpectacularBidView: spectacular_bid.as_dict,
    views_pb2.FiveOhOneView: five_oh_one.as_dict,
}


def typed_view(game: str, view: Any) -> Message:
    """The engine's view of `game` (its MatchView or TableView) as the game's view message."""
    return _MESSAGES[game](view)  # type: ignore[no-any-return]


def typed_wire(game: str, view: Any) -> bytes:
    """The same, serialized (what an Update carries: merged into it without building the message first)."""
    return _WIRES[game](view)  # type: ignore[no-any-return]


def as_dict(view: Message) -> dict[str, JSON]:
    """A typed view message as the dict view_json holds."""
    return _DICTS[type(view)](view)  # type: ignore[no-any-return]


def typed_of(carrier: matches_pb2.Update | matches_pb2.ActResponse) -> Message | None:
    """The typed view an Update or ActResponse carries, None when it carries only view_json."""
    field = carrier.WhichOneof("view")
    return None if field is None else getattr(carrier, field)


def view_dict(carrier: matches_pb2.Update | matches_pb2.ActResponse) -> dict[str, Any]:
    """The view an Update or ActResponse carries, as a dict: from the typed view, else from view_json."""
    typed = typed_of(carrier)
    if typed is not None:
        return as_dict(typed)
    return json.loads(carrier.view_json)  # type: ignore[no-any-return]
