"""A command's typed action becomes the record event the engines read exactly as protobuf's JSON form of it
would (what the log stores must not depend on how it was converted)."""

from __future__ import annotations

import pytest
from google.protobuf.json_format import MessageToDict

from protos.tablehall.v1 import actions_pb2
from workers.games.errors import MalformedAction
from workers.host import action_json

ACTIONS = [
    actions_pb2.Action(ready=actions_pb2.Ready()),
    actions_pb2.Action(play=actions_pb2.Play(tile="6-4", end="E")),
    actions_pb2.Action(play=actions_pb2.Play(tile="4-6")),
    actions_pb2.Action(play=actions_pb2.Play(card="TS", marriage=True)),
    actions_pb2.Action(play=actions_pb2.Play(tile="", end="")),
    actions_pb2.Action(bid=actions_pb2.Bid(amount=20)),
    actions_pb2.Action(bid=actions_pb2.Bid(amount=0)),
    actions_pb2.Action(bid=actions_pb2.Bid(amount=-5)),
    actions_pb2.Action(raise_=actions_pb2.Raise(amount=25)),
    actions_pb2.Action(pass_=actions_pb2.Pass()),
    actions_pb2.Action(declare=actions_pb2.Declare(trump="NT", target=120, give={1: "AS", 2: "9H"})),
    actions_pb2.Action(declare=actions_pb2.Declare()),
    actions_pb2.Action(resign=actions_pb2.Resign()),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.WhichOneof("kind"))
def test_a_typed_action_reads_as_its_protobuf_json(action: actions_pb2.Action) -> None:
    kind = action.WhichOneof("kind")
    assert kind is not None
    expected = {"do": kind.rstrip("_"), **MessageToDict(getattr(action, kind), preserving_proto_field_name=True)}
    assert action_json(action) == expected


def test_an_empty_action_is_refused() -> None:
    with pytest.raises(MalformedAction, match="empty"):
        action_json(actions_pb2.Action())
