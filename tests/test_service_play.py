"""The `Play` session: a seat's commands and updates on one stream, with the same rules as Act/Watch."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from tablehall.client import Client, Result, Session
from tests.test_bots import serve


async def next_update(session: Session, events: Any) -> tuple[int, dict[str, Any]]:
    while True:
        event = await asyncio.wait_for(anext(events), 10)
        if not isinstance(event, Result):
            return event


async def next_result(events: Any) -> Result:
    while True:
        event = await asyncio.wait_for(anext(events), 10)
        if isinstance(event, Result):
            return event


def test_a_session_carries_commands_results_and_updates() -> None:
    async def body(address: str, client: Client) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        sessions = [await client.seat(match.match_id, token).session() for token in match.tokens]
        streams = [s.events() for s in sessions]
        seq, view = await next_update(sessions[0], streams[0])
        assert seq == 1 and view["phase"] == "ready" and view["hand"]
        ref = await sessions[0].send({"do": "ready"})
        result = await next_result(streams[0])
        assert result.ref == ref and result.seq == 2 and result.error is None
        # refused commands come back as results; the stream and the match go on
        ref = await sessions[1].send({"do": "play", "tile": "6-6"})
        refused = await next_result(streams[1])
        assert refused.ref == ref and refused.seq == 0 and refused.error is not None
        assert refused.error.status == grpc.StatusCode.FAILED_PRECONDITION and refused.error.code == "illegal_action"
        ref = await sessions[1].send({"do": "play", "tile": "9-9"})
        malformed = await next_result(streams[1])
        assert malformed.error is not None and malformed.error.status == grpc.StatusCode.INVALID_ARGUMENT
        _, view = await client.seat(match.match_id, match.tokens[1]).view()
        assert view["ready"] == [0]
        for session in sessions:
            await session.close()

    serve(body)


def test_a_spectator_session_watches_but_cannot_act() -> None:
    async def body(address: str, client: Client) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        session = await client.spectator(match.match_id).session()
        stream = session.events()
        _, view = await next_update(session, stream)
        assert view["hand"] is None
        await session.send({"do": "ready"})
        refused = await next_result(stream)
        assert refused.error is not None and refused.error.status == grpc.StatusCode.UNAUTHENTICATED
        await session.close()

    serve(body)


def test_a_session_on_a_bad_match_is_refused() -> None:
    async def body(address: str, client: Client) -> None:
        session = await client.seat("0123456789abcdef", "nope").session()
        try:
            await asyncio.wait_for(anext(session.events()), 10)
        except Exception as error:  # the SDK raises TablehallError with the status
            assert getattr(error, "status", None) == grpc.StatusCode.NOT_FOUND
        else:
            raise AssertionError("a session on an unknown match must be refused")

    serve(body)
