"""Bearer-token auth over real gRPC: a token acts only for its own seat, a spectator never acts, and a refused
call changes nothing."""

from __future__ import annotations

import grpc
import pytest

from protos.tablehall.v1 import matches_pb2
from tablehall.client import SeatClient, TablehallError, action_message
from tests.over_grpc import Service, first_to_move, serve

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED


async def snapshot(seats: list[SeatClient], service: Service, match_id: str) -> list[bytes]:
    """Every seat's view as bytes, the spectator's too, and the server's own seq: what must not change."""
    views = []
    for seat in seats:
        update = await seat.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=seat.metadata)
        update.ClearField("match_time_ms")  # the service's clock reading moves with time, not with the match
        views.append(update.SerializeToString())
    views.append(str(service.actor(match_id).seq).encode())
    return views


async def started(service: Service) -> tuple[str, list[SeatClient], int, dict[str, object]]:
    """A Spectacular Bid match past Continue: one seat is to lead, holding a legal lead."""
    created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"])
    seats = [service.client.seat(created.match_id, token) for token in created.tokens]
    for seat in seats:
        await seat.act({"do": "ready"})
    mover, view = await first_to_move(seats)
    return created.match_id, seats, mover, view["legal"][0]


async def refused(call: object, status: grpc.StatusCode, *words: str) -> TablehallError:
    with pytest.raises(TablehallError) as caught:
        await call  # type: ignore[misc]
    error = caught.value
    assert error.status == status, f"{error.status} {error}"
    for word in words:
        assert word in str(error), f"{word!r} not in the message {str(error)!r}"
    return error


def test_acting_without_a_token_is_unauthenticated() -> None:
    async def body(service: Service) -> None:
        match_id, seats, mover, action = await started(service)
        before = await snapshot(seats, service, match_id)
        spectator = service.client.spectator(match_id)
        error = await refused(spectator.act(action), UNAUTHENTICATED, "token", "Bearer")
        assert error.code == "unauthenticated"
        # the seat number alone proves nothing
        await refused(spectator.act(action, seat=mover), UNAUTHENTICATED, "token")
        assert await snapshot(seats, service, match_id) == before

    serve(body)


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-token-of-this-match",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "bearer",
    ],
)
def test_a_wrong_or_malformed_token_is_unauthenticated(header: str) -> None:
    async def body(service: Service) -> None:
        match_id, seats, _, action = await started(service)
        before = await snapshot(seats, service, match_id)
        request = matches_pb2.ActRequest(match_id=match_id, action=action_message(action))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await service.stub.Act(request, metadata=(("authorization", header),))
        assert caught.value.code() == UNAUTHENTICATED
        assert "token" in (caught.value.details() or "")
        # watching and viewing with a bad token is refused too, not silently downgraded to a spectator
        with pytest.raises(TablehallError) as watched:
            wrong = SeatClient(service.stub, match_id, None)
            wrong.metadata = (("authorization", header),)
            async for _ in wrong.updates():
                raise AssertionError("a bad token got a stream")
        assert watched.value.status == UNAUTHENTICATED
        await refused(wrong.view(), UNAUTHENTICATED)
        assert await snapshot(seats, service, match_id) == before

    serve(body)


def test_a_token_of_another_match_is_unauthenticated() -> None:
    async def body(service: Service) -> None:
        match_id, seats, mover, action = await started(service)
        other = await service.client.create_match("spectacular-bid", ["Cid", "Dee"])
        before = await snapshot(seats, service, match_id)
        stranger = service.client.seat(match_id, other.tokens[mover])
        await refused(stranger.act(action), UNAUTHENTICATED, "not a seat", match_id)
        assert await snapshot(seats, service, match_id) == before

    serve(body)


def test_a_token_acts_only_for_its_own_seat() -> None:
    async def body(service: Service) -> None:
        match_id, seats, mover, action = await started(service)
        before = await snapshot(seats, service, match_id)
        other = 1 - mover
        # the other seat's token claiming the mover's seat, with the mover's own legal lead
        error = await refused(
            seats[other].act(action, seat=mover), PERMISSION_DENIED, f"seat {other}", f"not seat {mover}"
        )
        assert error.code == "permission_denied"
        assert await snapshot(seats, service, match_id) == before
        # the right claim goes through: the refusal was about the seat, not the action
        seq, _ = await seats[mover].act(action, seat=mover)
        assert seq == service.actor(match_id).seq
        assert await snapshot(seats, service, match_id) != before

    serve(body)


def test_a_spectator_sees_no_hand_and_no_legal_actions() -> None:
    async def body(service: Service) -> None:
        match_id, seats, _, _ = await started(service)
        seq, view = await service.client.spectator(match_id).view()
        assert seq == service.actor(match_id).seq
        assert view["seat"] is None and view["hand"] is None and view["legal"] == []
        _, mine = await seats[0].view()
        assert mine["seat"] == 0 and len(mine["hand"]) == 7 and mine["legal"]

    serve(body)
