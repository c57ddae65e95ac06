"""The view contract: every view of played matches of both games (every phase, seats and spectators, over
the engine and over gRPC) is valid against its committed JSON Schema (protos/tablehall/v1/views/), and
the schemas are strict: a renamed field, an extra field (an opponent's hand, the boneyard) or a spectator
holding a hand fails. Each `legal` entry becomes an `Action` by the rule matches.proto states."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from jsonschema import Draft202012Validator

from protos.tablehall.v1 import matches_pb2
from tablehall.selfplay import self_play
from tests.conftest import REPO
from tests.over_grpc import Service, bot_match, serve
from workers.games.catalog import game_named
from workers.games.engine import Seat
from workers.games.records import Match

VIEWS = REPO / "protos" / "tablehall" / "v1" / "views"
SB, FIVE = "spectacular-bid", "501"
RENAMED = {"raise": "raise_", "pass": "pass_"}
"""matches.proto: a legal entry's "do" names the Action field, but for these two Python-reserved words."""


@cache
def validator(game: str) -> Draft202012Validator:
    schema = json.loads((VIEWS / f"{game}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def problems(view: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(view["game"]).iter_errors(view)]


def every_view(match: Match) -> Iterator[dict[str, Any]]:
    game = match.game
    for seat in [*range(len(match.players)), None]:
        yield game.view(match.state, None if seat is None else Seat(seat)).to_json()


def played(game: str, players: int, seed: int, **options: Any) -> Iterator[Match]:
    """Every step of a match bots play through their own views, then the same match voided halfway."""
    engine = game_named(game)
    assert engine is not None
    steps = [turn.match for turn in self_play(engine, [f"P{i}" for i in range(players)], random.Random(seed),
                                              options=options, think_ms=(100, 4000))]  # fmt: skip
    yield from steps
    middle = steps[len(steps) // 2]
    voided, _ = middle.void("worker_down", middle.now)
    yield voided


@cache
def engine_views(game: str) -> tuple[dict[str, Any], ...]:
    if game == SB:
        matches = [
            *played(SB, 2, 1, start_points=40),
            *played(SB, 2, 2, start_points=60),
            *played(SB, 2, 3, start_points=40, shared_device=True),
        ]
    else:
        matches = [
            *played(FIVE, 3, 1, start_score=120),
            *played(FIVE, 3, 2, start_score=120, decision_limit_s=30),
            *played(FIVE, 4, 3, start_score=120),
        ]
    return tuple(view for match in matches for view in every_view(match))


def assert_covers(game: str, views: tuple[dict[str, Any], ...]) -> None:
    """The views seen include every phase the contract describes, seats and spectators alike."""
    phases = {v["phase"] for v in views}
    statuses = {v["status"] for v in views}
    dos = {entry["do"] for v in views for entry in v["legal"]}
    assert {v["seat"] is None for v in views} == {True, False}
    assert statuses == {"in_progress", "finished", "voided"}
    if game == SB:
        assert phases == {"deal", "ready", "auction", "lead", "play", "over"}
        assert any(v["phase"] == "deal" and v["past_rounds"] for v in views), "a round's end"
        assert any(v["hand_over"] for v in views), "a shared device's hand-over"
        assert dos == {"ready", "reveal", "play", "draw", "bid", "raise", "accept", "decline", "resign"}
    else:
        assert phases == {"deal", "bidding", "contract", "tricks", "over"}
        assert any(v["phase"] == "contract" and v["talon"] for v in views), "the talon turned up"
        assert any(v["phase"] == "tricks" and v["trump"] for v in views), "tricks after a declaration"
        assert any(v["phase"] == "deal" and v["hands"] for v in views), "a hand's end"
        assert any(v["sitting_out"] is not None for v in views), "four players"
        assert any(v["limit_ms"] is not None and v["deadline_ms"] is not None for v in views), "a decision limit"
        assert dos == {"look", "pass", "bid", "abandon", "declare", "play"}


@pytest.mark.parametrize("game", [SB, FIVE])
def test_every_view_of_played_matches_fits_the_schema(game: str) -> None:
    views = engine_views(game)
    assert_covers(game, views)
    for view in views:
        assert problems(view) == [], view


def test_views_on_the_wire_fit_the_schema() -> None:
    """Whole matches over a real gateway: every view a seat or the spectator received (Act replies, Watch)."""

    async def body(service: Service) -> list[dict[str, Any]]:
        matches = [
            await bot_match(service, SB, ["Ana", "Bia"], 4, {"start_points": 40}),
            await bot_match(service, FIVE, ["Ana", "Bia", "Cid"], 5, {"start_score": 120}),
        ]
        return [
            json.loads(message.view_json)
            for match in matches
            for watcher in [*match.seats, match.spectator]
            for message in watcher.received
        ]

    views = serve(body, timeout=60)
    assert {v["game"] for v in views} == {SB, FIVE}
    assert {v["seat"] is None for v in views} == {True, False}
    for view in views:
        assert problems(view) == [], view


# --- strictness: what the schemas must refuse ------------------------------------------------------------


def sample(game: str, phase: str, spectator: bool = False) -> dict[str, Any]:
    """A real view in that phase, as a seat holding cards or tiles (or as a spectator)."""
    for view in engine_views(game):
        if view["phase"] == phase and (view["seat"] is None) == spectator and (spectator or view["hand"]):
            return copy.deepcopy(view)
    raise AssertionError(f"no {game} view in phase {phase}")


def renamed(view: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    view[new] = view.pop(old)
    return view


BROKEN = [
    pytest.param(lambda: renamed(sample(SB, "play"), "points", "score"), id="sb-field-renamed"),
    pytest.param(lambda: renamed(sample(SB, "play"), "void_reason", "void"), id="sb-void-renamed"),
    pytest.param(lambda: {**sample(SB, "play"), "opponent_hand": ["6-6", "5-4"]}, id="sb-opponent-hand"),
    pytest.param(lambda: {**sample(SB, "play"), "boneyard": ["6-6"]}, id="sb-boneyard"),
    pytest.param(lambda: {**sample(SB, "lead", True), "hand": ["6-6"]}, id="sb-spectator-with-a-hand"),
    pytest.param(lambda: {**sample(SB, "lead", True), "legal": [{"do": "resign"}]}, id="sb-spectator-may-act"),
    pytest.param(
        lambda: (v := sample(SB, "play"), v["layout"].update(hands=[["6-6"]]), v)[2], id="sb-layout-extra"
    ),
    pytest.param(lambda: (v := sample(SB, "play"), v.pop("banks_ms"), v)[2], id="sb-field-missing"),
    pytest.param(lambda: renamed(sample(FIVE, "tricks"), "scores", "score"), id="501-field-renamed"),
    pytest.param(lambda: {**sample(FIVE, "tricks"), "hands_of": {"1": ["AS"]}}, id="501-another-hand"),
    pytest.param(lambda: {**sample(FIVE, "bidding", True), "hand": ["AS"]}, id="501-spectator-with-a-hand"),
    pytest.param(lambda: {**sample(FIVE, "bidding"), "talon": ["AS", "KS", "QS"]}, id="501-talon-before-bidding-ends"),
    pytest.param(
        lambda: (v := sample(FIVE, "tricks"), v["legal"].append({"do": "play", "card": "AS", "seat": 1}), v)[2],
        id="501-legal-extra-field",
    ),
    pytest.param(lambda: {**sample(FIVE, "tricks"), "void": "worker_down"}, id="501-ad-hoc-void"),
]


@pytest.mark.parametrize("make", BROKEN)
def test_the_schemas_refuse_renamed_missing_and_hidden_fields(make: Any) -> None:
    assert problems(make()) != []


# --- legal entries to Actions ----------------------------------------------------------------------------


def test_every_legal_entry_names_an_action_and_its_fields() -> None:
    """matches.proto: "do" names the Action field ("raise" is raise_, "pass" is pass_) and the other keys are
    that message's fields; 501's ranges (a dict where a value goes) are filled in by the client."""
    fields = matches_pb2.Action.DESCRIPTOR.fields_by_name
    for game in (SB, FIVE):
        for entry in {json.dumps(e, sort_keys=True) for v in engine_views(game) for e in v["legal"]}:
            legal = json.loads(entry)
            kind = RENAMED.get(legal["do"], legal["do"])
            assert kind in fields, legal
            values = {k: v for k, v in legal.items() if k != "do" and not isinstance(v, dict | list)}
            action = ParseDict({kind: values}, matches_pb2.Action())  # unknown field names would raise
            assert action.WhichOneof("kind") == kind
