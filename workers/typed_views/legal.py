"""A legal entry or command written as a record event (`{"do": "play", "tile": "6-4"}`) and the typed
`Action` a client sends, both ways (matches.proto, "From a legal entry to an Action")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf.json_format import ParseDict

from protos.tablehall.v1 import actions_pb2
from workers.games.engine import JSON

KINDS = {
    field.name: getattr(actions_pb2, field.message_type.name)
    for field in actions_pb2.Action.DESCRIPTOR.fields
    if field.message_type is not None
}
"""Each Action field and its message class (raise_, pass_: Python's reserved words take a trailing _)."""
RENAMED = {"raise": "raise_", "pass": "pass_"}


def action_message(action: Mapping[str, Any]) -> actions_pb2.Action:
    """A record-style action as the typed wire message (built directly; anything unusual goes through
    protobuf's JSON parser, which also words the error)."""
    fields = dict(action)
    do = fields.pop("do", None)
    kind = RENAMED.get(str(do), str(do))
    if kind not in KINDS:
        raise ValueError(f"unknown action {do!r}")
    give = fields.get("give")
    try:
        if isinstance(give, Mapping):
            fields["give"] = {int(seat): card for seat, card in give.items()}
        return actions_pb2.Action(**{kind: KINDS[kind](**fields)})
    except (TypeError, ValueError):
        message = actions_pb2.Action()
        ParseDict({k: v for k, v in action.items() if k != "do"}, getattr(message, kind))
        getattr(message, kind).SetInParent()
        return message


def action_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A record-style action as the keyword form of an Action (`{"play": {"tile": "6-4"}}`): the fastest
    way to build one inside a view (`legal.add(action=...)`). Only for entries the engine wrote."""
    fields = {key: value for key, value in entry.items() if key != "do"}
    do = entry["do"]
    return {RENAMED.get(do, do): fields}


def action_dict(action: actions_pb2.Action) -> dict[str, JSON]:
    """A typed action as the record event it stands for: its set fields under their own names."""
    kind = action.WhichOneof("kind")
    if kind is None:
        return {}
    out: dict[str, JSON] = {"do": kind.rstrip("_")}
    for field, value in getattr(action, kind).ListFields():
        out[field.name] = {str(seat): card for seat, card in value.items()} if field.name == "give" else value
    return out
