"""Malformed and illegal commands over real gRPC: the documented status, a clear message, and the match
byte-identical after."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import grpc
import pytest

from protos.tablehall.v1 import matches_pb2
from tablehall.client import SeatClient, TablehallError
from tests.over_grpc import Service, first_to_move, serve

INVALID = grpc.StatusCode.INVALID_ARGUMENT
FAILED = grpc.StatusCode.FAILED_PRECONDITION
NOT_FOUND = grpc.StatusCode.NOT_FOUND
UNKNOWN_ID = "0123456789abcdef"


async def frozen(service: Service, match_id: str, seats: list[SeatClient]) -> list[bytes]:
    """What a refused call must leave alone: every seat's and the spectator's GetView bytes (seq included)."""
    out = []
    for seat in [*seats, service.client.spectator(match_id)]:
        update = await seat.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=seat.metadata)
        update.ClearField("match_time_ms")  # the service's clock reading moves with time, not with the match
        out.append(update.SerializeToString())
    out.append(str(service.actor(match_id).seq).encode())
    return out


async def refused(call: Awaitable[Any], status: grpc.StatusCode, *words: str) -> TablehallError:
    with pytest.raises(TablehallError) as caught:
        await call
    error = caught.value
    assert error.status == status, f"{error.status.name}: {error}"
    for word in words:
        assert word in str(error), f"{word!r} is not in the message {str(error)!r}"
    return error


async def leading(service: Service) -> tuple[str, list[SeatClient], int, dict[str, Any]]:
    """A Spectacular Bid match in its first lead: the mover and its view."""
    created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"])
    seats = [service.client.seat(created.match_id, token) for token in created.tokens]
    for seat in seats:
        await seat.act({"do": "ready"})
    mover, view = await first_to_move(seats)
    assert view["phase"] == "lead"
    return created.match_id, seats, mover, view


def test_malformed_commands_are_invalid_argument_and_change_nothing() -> None:
    async def body(service: Service) -> None:
        match_id, seats, mover, view = await leading(service)
        me = seats[mover]
        before = await frozen(service, match_id, seats)
        bad: list[tuple[dict[str, Any], tuple[str, ...]]] = [
            ({"do": "play", "tile": "9-9"}, ("unknown tile", "9-9")),
            ({"do": "play", "tile": "6"}, ("unknown tile",)),
            ({"do": "play", "tile": view["hand"][0], "end": "X"}, ("unknown end",)),
            ({"do": "look"}, ("look",)),  # a 501 action is not a Spectacular Bid one
            ({"do": "declare", "trump": "S", "target": 80}, ()),
        ]
        for action, words in bad:
            error = await refused(me.act(action), INVALID, *words)
            assert error.code == "malformed_input"
            assert await frozen(service, match_id, seats) == before, action
        # the empty action (no oneof set) cannot be written through the SDK: send the raw message
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await me.stub.Act(
                matches_pb2.ActRequest(match_id=match_id, action=matches_pb2.Action()), metadata=me.metadata
            )
        assert caught.value.code() == INVALID and "empty" in (caught.value.details() or "")
        assert await frozen(service, match_id, seats) == before

    serve(body)


def test_illegal_commands_are_failed_precondition_and_change_nothing() -> None:
    async def body(service: Service) -> None:
        match_id, seats, mover, view = await leading(service)
        other = 1 - mover
        before = await frozen(service, match_id, seats)
        _, theirs = await seats[other].view()
        # not your turn: the other seat leads a tile of its own hand
        await refused(seats[other].act({"do": "play", "tile": theirs["hand"][0]}), FAILED, "turn")
        # a tile the mover does not hold
        await refused(seats[mover].act({"do": "play", "tile": theirs["hand"][0]}), FAILED)
        # a lead that is not the forced one (SB-3), and a draw or bid where none is possible
        wrong = [t for t in view["hand"] if {"do": "play", "tile": t} not in view["legal"]]
        for tile in wrong:
            await refused(seats[mover].act({"do": "play", "tile": tile}), FAILED)
        await refused(seats[mover].act({"do": "ready"}), FAILED)
        assert await frozen(service, match_id, seats) == before

        # after the lead: a tile of the other seat's hand that fits no open end
        await seats[mover].act(view["legal"][0])
        _, theirs = await seats[other].view()
        ends = theirs["layout"]["open_ends"]
        misfit = [
            (tile, end)
            for tile in theirs["hand"]
            for end, pip in ends.items()
            if str(pip) not in tile.split("-") and end in ("W", "E")
        ]
        assert misfit, "a hand of seven always holds a tile that misses an end"
        before = await frozen(service, match_id, seats)
        tile, end = misfit[0]
        error = await refused(seats[other].act({"do": "play", "tile": tile, "end": end}), FAILED)
        assert error.code == "illegal_action"
        assert await frozen(service, match_id, seats) == before
        # and the seat can still make a legal move: nothing was half-applied
        await seats[other].act(next(a for a in theirs["legal"] if a["do"] != "resign"))

    serve(body)


def test_bad_match_ids_and_unknown_matches() -> None:
    async def body(service: Service) -> None:
        match_id, seats, mover, view = await leading(service)
        token = seats[mover].metadata
        before = await frozen(service, match_id, seats)
        for bad in ("", "xyz", match_id.upper(), match_id + "0", "../" + match_id[3:]):
            stranger = SeatClient(service.stub, bad, None)
            stranger.metadata = token
            await refused(stranger.act(view["legal"][0]), grpc.StatusCode.INVALID_ARGUMENT, "match id")
            await refused(stranger.view(), INVALID, "match id")
            with pytest.raises(TablehallError) as caught:
                async for _ in stranger.updates():
                    raise AssertionError("a stream for a malformed match id")
            assert caught.value.status == INVALID
            await refused(service.client.record(bad), INVALID, "match id")
        # well formed, but no such match
        nobody = SeatClient(service.stub, UNKNOWN_ID, None)
        nobody.metadata = token
        await refused(nobody.act(view["legal"][0]), NOT_FOUND, UNKNOWN_ID)
        await refused(nobody.view(), NOT_FOUND, UNKNOWN_ID)
        with pytest.raises(TablehallError) as caught:
            async for _ in nobody.updates():
                raise AssertionError("a stream for an unknown match")
        assert caught.value.status == NOT_FOUND
        await refused(service.client.record(UNKNOWN_ID), NOT_FOUND, UNKNOWN_ID)
        # a match still being played has no record yet
        await refused(service.client.record(match_id), FAILED, "still being played")
        assert await frozen(service, match_id, seats) == before

    serve(body)


def test_watch_from_beyond_the_match_is_invalid_argument() -> None:
    async def body(service: Service) -> None:
        match_id, seats, _, _ = await leading(service)
        seq = service.actor(match_id).seq
        with pytest.raises(TablehallError) as caught:
            async for _ in seats[0].updates(after_seq=seq + 1):
                raise AssertionError("a stream from the future")
        assert caught.value.status == INVALID and str(seq) in str(caught.value)

    serve(body)


@pytest.mark.parametrize(
    ("game", "players", "options", "words"),
    [
        ("chess", ["Ana", "Bia"], {}, ("unknown game", "chess")),
        ("", ["Ana", "Bia"], {}, ("unknown game",)),
        ("spectacular-bid", ["Ana"], {}, ("2 to 2",)),
        ("spectacular-bid", ["Ana", "Bia", "Cid"], {}, ("2 to 2",)),
        ("501", ["Ana", "Bia"], {}, ("3 to 4",)),
        ("501", ["Ana", "Bia", "Cid", "Dee", "Eve"], {}, ("3 to 4",)),
        ("spectacular-bid", ["Ana", ""], {}, ("name",)),
        ("spectacular-bid", ["Ana", "B" * 65], {}, ("name",)),
        ("spectacular-bid", ["Ana", "Bia"], {"bank_s": -1.0}, ("bank_s",)),
        ("spectacular-bid", ["Ana", "Bia"], {"bank_s": "NaN"}, ("bank_s",)),
        ("spectacular-bid", ["Ana", "Bia"], {"ready_timeout_s": "Infinity"}, ("ready_timeout_s",)),
        ("spectacular-bid", ["Ana", "Bia"], {"delay_s": 1e9}, ("delay_s",)),
        ("spectacular-bid", ["Ana", "Bia"], {"start_points": 7}, ("start_points",)),
        ("spectacular-bid", ["Ana", "Bia"], {"start_score": 300}, ("start_score",)),
        ("501", ["Ana", "Bia", "Cid"], {"start_score": 0}, ("start_score",)),
        ("501", ["Ana", "Bia", "Cid"], {"bank_s": 30.0}, ("bank_s",)),
        ("501", ["Ana", "Bia", "Cid"], {"decision_limit_s": -2.0}, ("decision_limit_s",)),
    ],
)
def test_bad_matches_are_not_created(game: str, players: list[str], options: dict[str, Any], words: tuple[str]) -> None:
    async def body(service: Service) -> None:
        await refused(service.client.create_match(game, players, options), INVALID, *words)
        assert service.host.actors == {}, "a refused create leaves no match behind"

    serve(body)
