"""Requests too big, strings too long, and long inputs inside the bounds: every door refuses them as
INVALID_ARGUMENT `malformed_input` (or the method's own refusal) with a short message that quotes at most
a few dozen characters of the input, so the `tablehall-error` code always reaches the caller."""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from gateway.bounds import MAX_BULK_REQUEST_BYTES, MAX_REQUEST_BYTES, MAX_TEXT, TRANSPORT_MAX_BYTES, limit_of
from protos.tablehall.v1 import matches_pb2, tournaments_pb2
from tablehall.client import Client, action_message
from tests.edge_support import DOORS, Answer, call, connect_unary, edge, enveloped, methods, path_of, troubles
from tests.web_support import GRPC_WEB, LiveService, envelope
from workers.games.errors import QUOTED_CHARS, quote

__all__ = ["edge"]  # the module-scoped service fixture

REPO = Path(__file__).resolve().parents[1]
HUGE = 1_000_000
OVER = MAX_TEXT + 44
LONG = MAX_TEXT - 6
"""Three lengths of input: far over every bound, just over the string bound, just inside it."""

Build = Callable[[str], Message]

A_MATCH = "0" * 16


def act(action: matches_pb2.Action) -> matches_pb2.ActRequest:
    return matches_pb2.ActRequest(match_id=A_MATCH, action=action)


def play(**fields: str) -> matches_pb2.Action:
    return matches_pb2.Action(play=matches_pb2.Play(**fields))


def declare(trump: str, give: dict[int, str] | None = None) -> matches_pb2.Action:
    return matches_pb2.Action(declare=matches_pb2.Declare(trump=trump, give=give or {}))


REQUESTS: dict[str, tuple[str, Build]] = {
    "GetView.match_id": ("GetView", lambda s: matches_pb2.GetViewRequest(match_id=s)),
    "Act.match_id": ("Act", lambda s: matches_pb2.ActRequest(match_id=s, action=action_message({"do": "ready"}))),
    "Act.tile": ("Act", lambda s: act(play(tile=s))),
    "Act.end": ("Act", lambda s: act(play(tile="6-6", end=s))),
    "Act.card": ("Act", lambda s: act(play(card=s))),
    "Act.give": ("Act", lambda s: act(declare(trump="S", give={1: s}))),
    "GetRecord.match_id": ("GetRecord", lambda s: matches_pb2.GetRecordRequest(match_id=s)),
    "Watch.match_id": ("Watch", lambda s: matches_pb2.WatchRequest(match_id=s)),
    "Play.match_id": ("Play", lambda s: matches_pb2.PlayRequest(match_id=s)),
    "CreateMatch.game": ("CreateMatch", lambda s: matches_pb2.CreateMatchRequest(game=s, players=["Ana", "Bia"])),
    "CreateMatch.players": ("CreateMatch", lambda s: matches_pb2.CreateMatchRequest(game="501", players=["A", s])),
    "GetRules.game": ("GetRules", lambda s: matches_pb2.GetRulesRequest(game=s)),
    "GetRating.player": ("GetRating", lambda s: matches_pb2.GetRatingRequest(player=s, game="501")),
    "GetLeaderboard.game": ("GetLeaderboard", lambda s: matches_pb2.GetLeaderboardRequest(game=s)),
    "CreateTournament.name": ("CreateTournament", lambda s: tournaments_pb2.CreateTournamentRequest(name=s)),
    "GetStandings.tournament_id": ("GetStandings", lambda s: tournaments_pb2.GetStandingsRequest(tournament_id=s)),
}


def method_named(name: str) -> MethodDescriptor:
    (found,) = [m for m in methods() if m.name == name]
    return found


def short(answer: Answer) -> None:
    """A message anyone can read whole: no run of input characters longer than a quote."""
    assert len(answer.message) < 200, len(answer.message)
    assert not re.search(f"x{{{QUOTED_CHARS + 1}}}", answer.message), answer.message


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("field", list(REQUESTS))
def test_strings_over_the_bound_are_refused_naming_the_field(
    edge: LiveService, door: str, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    name, build = REQUESTS[field]
    answer = call(edge, door, method_named(name), [build("x" * OVER).SerializeToString()], token="a-token")
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
    assert f"{OVER} characters long" in answer.message and f"at most {MAX_TEXT}" in answer.message, answer.message
    assert field.split(".")[-1] in answer.message, answer.message
    short(answer)
    assert troubles(caplog.records) == []


@pytest.mark.parametrize("field", list(REQUESTS))
def test_a_huge_string_is_refused_by_the_request_size(edge: LiveService, field: str) -> None:
    """One 1,000,000-character field: the whole request is over its limit (the code arrives; before, the
    echoed message was too big for the client's metadata and the code was lost)."""
    name, build = REQUESTS[field]
    method = method_named(name)
    answer = call(edge, "grpc", method, [build("x" * HUGE).SerializeToString()], token="a-token")
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
    if limit_of(method.full_name) < HUGE:
        assert f"over the limit of {limit_of(method.full_name):,} bytes" in answer.message, answer.message
    else:  # a bulk method reads a request that big, and refuses the string
        assert f"{HUGE:,} characters long" in answer.message, answer.message
    short(answer)


async def two_matches(edge: LiveService) -> tuple[tuple[str, str], tuple[str, str]]:
    """A Spectacular Bid and a 501 match: (match id, seat 0's token) each."""
    async with Client(edge.address) as client:
        sb = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        five = await client.create_match("501", ["Ana", "Bia", "Cid"])
    return (sb.match_id, sb.tokens[0]), (five.match_id, five.tokens[0])


def test_long_input_inside_the_bounds_is_quoted_short(edge: LiveService) -> None:
    (sb, sb_token), (five, five_token) = edge.run(two_matches(edge))
    text = "x" * LONG
    invalid = "INVALID_ARGUMENT"
    cases: list[tuple[str, Message, str | None, str]] = [
        ("GetView", matches_pb2.GetViewRequest(match_id=text), None, invalid),
        ("GetRules", matches_pb2.GetRulesRequest(game=text), None, "NOT_FOUND"),
        ("CreateMatch", matches_pb2.CreateMatchRequest(game=text, players=["A", "B"]), None, invalid),
        ("GetLeaderboard", matches_pb2.GetLeaderboardRequest(game=text), None, invalid),
        ("Act", matches_pb2.ActRequest(match_id=sb, action=play(tile=text)), sb_token, invalid),
        ("Act", matches_pb2.ActRequest(match_id=sb, action=play(tile="6-6", end=text)), sb_token, invalid),
        ("Act", matches_pb2.ActRequest(match_id=five, action=play(card=text)), five_token, invalid),
        ("Act", matches_pb2.ActRequest(match_id=five, action=declare(trump=text)), five_token, invalid),
    ]
    for door in DOORS:
        for name, request, token, status in cases:
            answer = call(edge, door, method_named(name), [request.SerializeToString()], token=token)
            assert answer.status == status and answer.code is not None, (door, name, answer)
            assert f"({LONG:,} characters)" in answer.message, answer.message
            short(answer)


def test_bulk_requests_have_a_larger_bound(edge: LiveService) -> None:
    create = method_named("CreateTables")
    pairs = [(f"Player {2 * n:05}", f"Player {2 * n + 1:05}") for n in range(3000)]
    tables = [tournaments_pb2.TableRequest(players=pair) for pair in pairs]
    request = tournaments_pb2.CreateTablesRequest(game="spectacular-bid", tables=tables).SerializeToString()
    assert MAX_REQUEST_BYTES < len(request) < MAX_BULK_REQUEST_BYTES
    for door in DOORS:
        read = call(edge, door, create, [request], token="an-organizer-key")
        assert (read.status, read.code) == ("FAILED_PRECONDITION", "no_database"), read  # read, then refused
    too_big = tournaments_pb2.CreateTablesRequest(game="x", tables=tables * 60).SerializeToString()
    assert MAX_BULK_REQUEST_BYTES < len(too_big) < TRANSPORT_MAX_BYTES
    refused = call(edge, "grpc", create, [too_big], token="an-organizer-key")
    assert (refused.status, refused.code) == ("INVALID_ARGUMENT", "malformed_input"), refused
    assert f"over the limit of {MAX_BULK_REQUEST_BYTES:,} bytes" in refused.message


def test_the_grpc_transport_drops_what_is_over_its_own_bound(edge: LiveService) -> None:
    """Above `TRANSPORT_MAX_BYTES` gRPC refuses a message before the service reads it (its own answer)."""
    request = matches_pb2.GetViewRequest(match_id="x" * (TRANSPORT_MAX_BYTES + 1)).SerializeToString()
    answer = call(edge, "grpc", method_named("GetView"), [request])
    assert answer.status == grpc.StatusCode.RESOURCE_EXHAUSTED.name, answer


def test_the_http_door_refuses_a_body_over_the_bound_before_reading_it(edge: LiveService) -> None:
    get_view = method_named("GetView")
    # a gRPC-Web envelope that declares 100 MB and sends a few bytes: refused at its prefix
    declared = b"\x00" + (100_000_000).to_bytes(4, "big") + b"\x0a\x10"
    answer = enveloped(edge.url, path_of(get_view), declared, GRPC_WEB)
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
    assert "100,000,000 bytes" in answer.message
    # a Connect body over the bound, and a small gzip body that would inflate past it
    body = matches_pb2.GetViewRequest(match_id="0" * (MAX_REQUEST_BYTES + 1)).SerializeToString()
    answer = connect_unary(edge.url, path_of(get_view), body, "application/proto")
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
    bomb = gzip.compress(b"\x0a\x80\x80\x80\x01" + b"0" * 50_000_000)
    assert len(bomb) < MAX_REQUEST_BYTES
    answer = connect_unary(edge.url, path_of(get_view), bomb, "application/proto", extra={"content-encoding": "gzip"})
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
    assert "inflates past the limit" in answer.message
    answer = enveloped(edge.url, path_of(get_view), envelope(body), GRPC_WEB)
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer


def test_quote_shows_a_few_dozen_characters_and_counts_the_rest() -> None:
    assert quote("6-4") == "'6-4'"
    assert quote("x" * HUGE) == f"'{'x' * QUOTED_CHARS}'… ({HUGE:,} characters)"
    assert quote(7) == "7"
    assert len(quote(list(range(HUGE // 10)))) < 2 * QUOTED_CHARS


def test_the_documented_bounds_are_the_enforced_ones() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    protos = "".join(p.read_text(encoding="utf-8") for p in (REPO / "protos" / "tablehall" / "v1").glob("*.proto"))
    figures = (f"{MAX_TEXT} characters", f"{MAX_REQUEST_BYTES // 1024} KiB", f"{MAX_BULK_REQUEST_BYTES // 2**20} MiB")
    for figure in figures:
        assert figure in readme and figure in protos, figure
    assert f"{TRANSPORT_MAX_BYTES // 2**20} MiB" in readme
