"""Match options have documented ranges, declared once per game (`Game.options`): the engines refuse a value
outside them (malformed_input), CreateMatch answers INVALID_ARGUMENT and creates nothing, GetRules lists
them (text and `Rules.options`), the proto and docs/RULES.md state them, and every stored record replays."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import grpc
import pytest

from gateway.rulebook import option_range
from protos.tablehall.v1 import matches_pb2
from tablehall.client import TablehallError
from tests.conftest import EXAMPLES, RECORDS, REPO
from tests.over_grpc import Service, serve
from workers.games.catalog import games
from workers.games.errors import MalformedAction
from workers.games.options import Kind, OptionSpec

RANGES: dict[str, dict[str, tuple[str, float, float, Any]]] = {
    # the chosen ranges (docs/RULES.md, "Match options"): kind, least, most, default
    "spectacular-bid": {
        "start_points": ("whole", 20, 1000, 150),
        "bank_s": ("seconds", 10, 10_800, 120.0),
        "delay_s": ("seconds", 0, 60, 10.0),
        "ready_timeout_s": ("seconds", 5, 600, 60.0),
        "shared_device": ("flag", 0, 0, False),
    },
    "501": {
        "start_score": ("whole", 20, 1001, 501),
        "decision_limit_s": ("seconds", 5, 3600, None),
    },
}
SEATS = {"spectacular-bid": 2, "501": 3}
NUMERIC = [
    pytest.param(name, spec, id=f"{name}-{spec.name}")
    for name, game in games().items()
    for spec in game.options
    if spec.kind is not Kind.FLAG
]


def start(game: str, options: dict[str, Any]) -> dict[str, Any]:
    """A new match with these options, as its record would carry them."""
    engine = games()[game]
    return engine.options_json(engine.start(SEATS[game], options))


def refused(game: str, options: dict[str, Any]) -> str:
    with pytest.raises(MalformedAction) as caught:
        start(game, options)
    assert caught.value.code == "malformed_input"
    return str(caught.value)


def test_each_game_declares_the_documented_ranges() -> None:
    for name, game in games().items():
        assert {s.name: (s.kind.value, s.least, s.most, s.default) for s in game.options} == RANGES[name]
    assert set(games()) == set(RANGES)


def test_a_match_takes_every_declared_option_and_their_defaults() -> None:
    for name, game in games().items():
        assert start(name, {}) == {s.name: s.default for s in game.options}


@pytest.mark.parametrize(("game", "spec"), NUMERIC)
def test_both_ends_of_a_range_are_taken(game: str, spec: OptionSpec) -> None:
    for value in (spec.least, spec.most):
        chosen = int(value) if spec.kind is Kind.WHOLE else value
        assert start(game, {spec.name: chosen})[spec.name] == chosen


@pytest.mark.parametrize(("game", "spec"), NUMERIC)
def test_a_value_just_outside_a_range_or_not_a_number_is_refused(game: str, spec: OptionSpec) -> None:
    step = spec.multiple_of if spec.kind is Kind.WHOLE else 0.001
    below, above = spec.least - step, spec.most + step
    if spec.kind is Kind.WHOLE:
        below, above = int(below), int(above)
    for value in (below, above, math.nan, math.inf, -math.inf, True, "30", [1] * 1000, {"s": 1}):
        message = refused(game, {spec.name: value})
        assert spec.name in message and len(message) < 160, message  # short, never the huge input echoed
        assert spec.allowed() in message  # the range, in words


def test_a_decision_limit_of_a_millisecond_or_less_is_refused() -> None:
    """The defect: 1e-300 s or 0.001 s made a 0–1 ms limit and the game ended on time at once."""
    for tiny in (1e-300, 0.001, 0.5, 4.999):
        message = refused("501", {"decision_limit_s": tiny})
        assert "decision_limit_s must be a number of seconds from 5 to 3600" in message


def test_whole_options_refuse_fractions_and_off_steps() -> None:
    assert "a multiple of 5" in refused("spectacular-bid", {"start_points": 152})
    assert "start_points" in refused("spectacular-bid", {"start_points": 150.0})
    assert "start_score" in refused("501", {"start_score": 300.5})


def test_null_turns_off_only_an_option_that_can_be_off() -> None:
    assert start("501", {"decision_limit_s": None})["decision_limit_s"] is None
    assert "bank_s" in refused("spectacular-bid", {"bank_s": None})
    assert "start_score" in refused("501", {"start_score": None})


def test_flags_are_true_or_false_and_options_belong_to_their_game() -> None:
    assert start("spectacular-bid", {"shared_device": True})["shared_device"] is True
    assert "shared_device must be true or false" in refused("spectacular-bid", {"shared_device": 1})
    assert "unknown 501 option(s): shared_device" in refused("501", {"shared_device": True})
    assert "unknown Spectacular Bid option(s): start_score" in refused("spectacular-bid", {"start_score": 501})
    long_name = "x" * 5000
    assert len(refused("501", {long_name: 1})) < 160


def test_every_stored_record_has_its_options_in_range() -> None:
    """`tablehall replay` of every record in tests/ still works: their options are inside the ranges (a
    record made to show a refusal says so in its `.err.txt`)."""
    checked = 0
    for path in [*RECORDS.glob("*.json"), *EXAMPLES.glob("*.json")]:
        if path.name.endswith(".out.json") or path.with_name(path.stem + ".err.txt").exists():
            continue
        record = json.loads(path.read_text())
        start(record["game"], record.get("options", {}))
        checked += 1
    assert checked >= 70


# --- over gRPC ----------------------------------------------------------------------------------------


def test_create_match_refuses_an_option_out_of_range_and_creates_nothing() -> None:
    cases = [
        ("501", {"decision_limit_s": 1e-300}, "decision_limit_s"),
        ("501", {"decision_limit_s": 0.001}, "decision_limit_s"),
        ("501", {"start_score": 5}, "start_score"),
        ("spectacular-bid", {"bank_s": 0.001}, "bank_s"),
        ("spectacular-bid", {"ready_timeout_s": 0.2}, "ready_timeout_s"),
        ("spectacular-bid", {"delay_s": 3600}, "delay_s"),
        ("spectacular-bid", {"start_points": 5}, "start_points"),
    ]

    async def body(service: Service) -> None:
        for game, options, name in cases:
            players = [f"P{i}" for i in range(SEATS[game])]
            with pytest.raises(TablehallError) as caught:
                await service.client.create_match(game, players, options)
            error = caught.value
            assert (error.status, error.code) == (grpc.StatusCode.INVALID_ARGUMENT, "malformed_input")
            assert name in str(error) and "must be" in str(error) and len(str(error)) < 160, str(error)
        assert service.host.actors == {}, "a refused match is never created"
        made = await service.client.create_match("501", ["A", "B", "C"], {"decision_limit_s": 5})
        assert made.match_id in service.host.actors

    serve(body)


def test_get_rules_lists_every_option_with_its_range_and_default() -> None:
    async def body(service: Service) -> None:
        for name, game in games().items():
            rules = await service.stub.GetRules(matches_pb2.GetRulesRequest(game=name))
            assert list(rules.options) == [option_range(spec) for spec in game.options]
            section = rules.text[rules.text.index("## Match options") :]
            for spec in game.options:
                assert f"- {spec.describe()}" in section
            assert {o.name: json.loads(o.default_json) for o in rules.options} == {
                n: r[3] for n, r in RANGES[name].items()
            }

    serve(body)


# --- the documents ------------------------------------------------------------------------------------


def _comment_above(proto: str, field: str) -> str:
    """The comment lines right above a field's declaration, and its trailing comment."""
    lines = proto.splitlines()
    at = next(i for i, line in enumerate(lines) if re.search(rf"\b{field} = \d+;", line))
    above = []
    for line in reversed(lines[:at]):
        if not line.strip().startswith("//"):
            break
        above.append(line)
    return "\n".join([*reversed(above), lines[at]])


def test_the_proto_and_the_rules_document_state_each_range() -> None:
    proto = (REPO / "protos" / "tablehall" / "v1" / "matches.proto").read_text()
    rules = (REPO / "docs" / "RULES.md").read_text()
    for game in games().values():
        for spec in game.options:
            comment = _comment_above(proto, spec.name)
            words = spec.allowed().replace(", or null (off)", ", or unset (off)")
            assert f"{spec.name}: {words}; default {spec.default_text()}" in comment, (spec.name, comment)
            assert f"- {spec.describe()}" in rules, spec.name
