"""Bytes that are no request message, through every door to every public method (unary and streaming,
Matches, Tournaments and Lobby): INVALID_ARGUMENT with `malformed_input` in `tablehall-error`, a short message,
nothing in the log above debug; random bytes never make the edge answer UNKNOWN or INTERNAL."""

from __future__ import annotations

import gzip
import logging

import pytest
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.tablehall.v1 import matches_pb2
from tests.edge_support import DOORS, Answer, call, connect_unary, edge, methods, path_of, troubles
from tests.web_support import LiveService

__all__ = ["edge"]  # the module-scoped service fixture

UNREADABLE = (b"\x0a", b"\x0a\x05ab", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
"""A field cut short, a length past the end, a tag too long: no message of any type."""

NOT_UTF8 = b"\x0a\x02\xff\xfe"
"""Field 1 as two bytes that are not UTF-8: no message whose field 1 is a string (`match_id`)."""


def refused_as_malformed(answer: Answer, method: MethodDescriptor) -> None:
    assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
    assert method.input_type.full_name in answer.message and len(answer.message) < 120, answer.message


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("method", methods(), ids=lambda m: m.full_name.removeprefix("tablehall.v1."))
def test_bytes_that_are_no_message_are_malformed_input(
    edge: LiveService, door: str, method: MethodDescriptor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for unreadable in UNREADABLE:
        refused_as_malformed(call(edge, door, method, [unreadable]), method)
    first = method.input_type.fields_by_number.get(1)
    if first is not None and first.type == FieldDescriptor.TYPE_STRING:
        refused_as_malformed(call(edge, door, method, [NOT_UTF8]), method)
    assert troubles(caplog.records) == []


@pytest.mark.parametrize("door", DOORS)
def test_an_unreadable_message_ends_a_play_session_as_malformed_input(
    edge: LiveService, door: str, caplog: pytest.LogCaptureFixture
) -> None:
    created = edge.run(_match(edge))
    (play,) = [m for m in methods() if m.name == "Play"]
    opening = matches_pb2.PlayRequest(match_id=created[0]).SerializeToString()
    answer = call(edge, door, play, [opening, b"\x0a"], token=created[1])
    refused_as_malformed(answer, play)
    assert troubles(caplog.records) == []


async def _match(edge: LiveService) -> tuple[str, str]:
    from tablehall.client import Client

    async with Client(edge.address) as client:
        created = await client.create_match("spectacular-bid", ["Ana", "Bia"])
    return created.match_id, created.tokens[0]


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"matchId": 5}', b'{"matchId": "' + b"\xff" * 4 + b'"}', b"[" * 5000 + b"]" * 5000]
)
def test_json_that_is_no_message_is_malformed_input(edge: LiveService, body: bytes) -> None:
    (get_view,) = [m for m in methods() if m.name == "GetView"]
    answer = connect_unary(edge.url, path_of(get_view), body, "application/json")
    refused_as_malformed(answer, get_view)


def test_gzip_that_is_not_gzip_is_malformed_input(edge: LiveService) -> None:
    (get_view,) = [m for m in methods() if m.name == "GetView"]
    for body in (b"not gzip at all", gzip.compress(b"\x0a\x10" + b"0" * 16)[:-6]):
        gzipped = {"content-encoding": "gzip"}
        answer = connect_unary(edge.url, path_of(get_view), body, "application/proto", extra=gzipped)
        assert (answer.status, answer.code) == ("INVALID_ARGUMENT", "malformed_input"), answer
        assert "gzip" in answer.message


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(door=st.sampled_from(DOORS), method=st.sampled_from(methods()), noise=st.binary(max_size=48))
def test_random_bytes_never_break_the_edge(
    edge: LiveService, door: str, method: MethodDescriptor, noise: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    answer = call(edge, door, method, [noise])
    assert answer.status not in ("UNKNOWN", "INTERNAL"), answer
    assert answer.status == "OK" or answer.code is not None, f"a refusal without its stable code: {answer}"
    assert len(answer.message) < 300
    assert troubles(caplog.records) == []
