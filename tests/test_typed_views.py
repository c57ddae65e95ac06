"""The typed views (views.proto) against view_json: for many random positions of both games, every seat
and the spectator, the typed message turned back into a dict is the JSON view, field for field (so every
field the JSON Schemas describe is in the typed view); every legal entry's Action is ready to send (the
engine accepts it as is, and a 501 range's other end too); and over a real gateway a client that asks for
typed views only gets no view_json and never a hidden tile or card in the Update bytes."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.tablehall.v1 import actions_pb2, matches_pb2, views_pb2
from tablehall.selfplay import self_play
from tests.conftest import REPO
from tests.over_grpc import Service, bot_match, five_hidden, five_own, framed, sb_hidden, sb_own, serve
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, game_named
from workers.games.engine import Seat
from workers.games.records import Match
from workers.typed_views import FIELDS, as_dict, typed_of, typed_view, view_dict
from workers.typed_views.legal import action_dict

TYPED = matches_pb2.VIEW_FORMAT_TYPED
SLOW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def positions(game: str, players: int, seed: int, options: dict[str, Any]) -> Iterator[Match]:
    """Every step of a self-played match, and the same match voided halfway."""
    engine = game_named(game)
    assert engine is not None
    names = [f"P{i}" for i in range(players)]
    steps = [t.match for t in self_play(engine, names, random.Random(seed), options=options, think_ms=(100, 4000))]
    yield from steps
    middle = steps[len(steps) // 2]
    yield middle.void("worker_down", middle.now)[0]


def check_position(match: Match) -> None:
    """Each viewer's typed view equals its JSON view, and each legal Action is one the engine accepts."""
    game = match.game
    for seat in [*map(Seat, range(len(match.players))), None]:
        view = game.view(match.state, seat)
        typed = typed_view(game.name, view)
        assert as_dict(typed) == view.to_json()
        assert seat is not None or not typed.legal  # type: ignore[attr-defined]
        if seat is not None:
            for entry in typed.legal:  # type: ignore[attr-defined]
                for action in ready_to_send(entry):
                    match.apply(seat, game.parse_action(action_dict(action)), match.now)  # raises if refused


def ready_to_send(entry: Any) -> list[actions_pb2.Action]:
    """The entry's Action, and for a 501 range also its highest choice."""
    actions = [entry.action]
    if isinstance(entry, views_pb2.FiveOhOneLegal):
        if entry.HasField("amount"):
            assert entry.action.bid.amount == entry.amount.min and entry.amount.step == 1
            highest = actions_pb2.Action()
            highest.CopyFrom(entry.action)
            highest.bid.amount = entry.amount.max
            actions.append(highest)
        if entry.HasField("declare"):
            declare = entry.action.declare
            assert declare.trump in entry.declare.trumps and declare.target == entry.declare.target.min
            assert sorted(declare.give) == sorted(entry.declare.give_to) and len(set(declare.give.values())) == 2
            highest = actions_pb2.Action()
            highest.CopyFrom(entry.action)
            highest.declare.target = entry.declare.target.max
            highest.declare.trump = entry.declare.trumps[-1]
            actions.append(highest)
    return actions


@SLOW
@given(seed=st.integers(0, 2**32), start=st.sampled_from([20, 40, 60]), shared=st.booleans())
def test_spectacular_bid_typed_views_equal_the_json_views(seed: int, start: int, shared: bool) -> None:
    for match in positions(SPECTACULAR_BID, 2, seed, {"start_points": start, "shared_device": shared}):
        check_position(match)


@SLOW
@given(
    seed=st.integers(0, 2**32),
    players=st.sampled_from([3, 4]),
    start=st.sampled_from([60, 120]),
    limit=st.sampled_from([None, 30.0]),
)
def test_501_typed_views_equal_the_json_views(seed: int, players: int, start: int, limit: float | None) -> None:
    options: dict[str, Any] = {"start_score": start}
    if limit is not None:
        options["decision_limit_s"] = limit
    for match in positions(FIVE_OH_ONE, players, seed, options):
        check_position(match)


SCHEMAS = REPO / "protos" / "tablehall" / "v1" / "views"
IMPLIED = {"game", "counts"}
"""Schema fields the typed view holds otherwise: the game is the oneof's field, counts are legal[].count."""


@pytest.mark.parametrize(
    ("game", "message"), [(SPECTACULAR_BID, views_pb2.SpectacularBidView), (FIVE_OH_ONE, views_pb2.FiveOhOneView)]
)
def test_every_field_of_the_json_schema_is_a_field_of_the_typed_view(game: str, message: Any) -> None:
    schema = json.loads((SCHEMAS / f"{game}.schema.json").read_text())
    assert set(schema["properties"]) - IMPLIED == set(message.DESCRIPTOR.fields_by_name)


def test_each_game_has_its_view_field() -> None:
    """The `view` oneof of Update and ActResponse holds one field per game of the catalog."""
    for carrier in (matches_pb2.Update, matches_pb2.ActResponse):
        oneof = carrier.DESCRIPTOR.oneofs_by_name["view"]
        assert sorted(f.name for f in oneof.fields) == sorted(FIELDS.values())
    assert matches_pb2.Update.DESCRIPTOR.fields_by_name["view_json"].GetOptions().deprecated


# --- over a real gateway -------------------------------------------------------------------------------------


async def collect(updates: AsyncIterator[matches_pb2.Update]) -> list[matches_pb2.Update]:
    return [update async for update in updates]


def test_typed_only_updates_carry_no_json_and_no_hidden_tile_or_card() -> None:
    """After whole bot matches, every seat and a spectator read the match again asking typed views only:
    no view_json, the typed view equal to the JSON one of the same change, and in the serialized bytes none
    of the tiles or cards hidden from that viewer (and the viewer's own hand present, so the check sees)."""

    async def body(service: Service) -> list[tuple[str, list[Any], list[list[matches_pb2.Update]]]]:
        out = []
        for game, players, seed, options in (
            (SPECTACULAR_BID, ["Ana", "Bia"], 21, {"start_points": 40}),
            (FIVE_OH_ONE, ["Ana", "Bia", "Cid"], 22, {"start_score": 120}),
            (FIVE_OH_ONE, ["Ana", "Bia", "Cid", "Dee"], 23, {"start_score": 120}),
        ):
            played = await bot_match(service, game, players, seed, options)
            snapshots = service.actor(played.match_id).snapshots
            readers = [service.client.seat(played.match_id, t) for t in played.tokens]
            readers.append(service.client.spectator(played.match_id))
            streams = await asyncio.gather(*(collect(r.updates(0, TYPED)) for r in readers))
            both = await asyncio.gather(*(collect(r.updates(0)) for r in readers))
            for typed_only, whole in zip(streams, both, strict=True):
                for update, full in zip(typed_only, whole, strict=True):
                    assert view_dict(update) == json.loads(full.view_json)
            out.append((game, snapshots, streams))
        return out

    for game, snapshots, streams in serve(body, timeout=90):
        hidden, own = (sb_hidden, sb_own) if game == SPECTACULAR_BID else (five_hidden, five_own)
        for seat, updates in enumerate(streams):
            viewer = seat if seat < len(streams) - 1 else None
            assert [u.seq for u in updates] == list(range(1, len(snapshots) + 1))
            shown_own = 0
            for update in updates:
                assert update.view_json == "" and typed_of(update) is not None
                raw = update.SerializeToString()
                state = snapshots[update.seq - 1].state
                leaked = [name for name in framed(hidden(state, viewer)) if name in raw]
                assert not leaked, f"seat {viewer} received hidden {leaked} at seq {update.seq}"
                mine = own(state, viewer)
                assert all(name in raw for name in framed(mine)), f"seat {viewer} did not get its own hand"
                shown_own += bool(mine)
            assert (shown_own > 0) == (viewer is not None)


def test_the_client_offers_dicts_and_typed_views() -> None:
    """The Python client's dicts come from the typed view (no JSON asked); the typed view is offered too."""

    async def body(service: Service) -> None:
        made = await service.client.create_match(SPECTACULAR_BID, ["Ana", "Bia"])
        ana = service.client.seat(made.match_id, made.tokens[0])
        seq, view = await ana.act({"do": "ready"})
        seq_typed, typed = await ana.typed_view()
        assert isinstance(typed, views_pb2.SpectacularBidView) and seq_typed == seq
        assert as_dict(typed) == view and typed.seat == 0
        assert (await ana.update()).view_json == ""
        session = await ana.session(after_seq=seq - 1)
        events = session.events(typed=True)
        first = await anext(events)
        assert isinstance(first, tuple) and first[0] == seq and as_dict(first[1]) == view
        await session.close()

    serve(body)
