"""The service's clock reading in every Update (matches.proto `Update.match_time_ms`), over real gRPC: a client
that opens a match in the middle of a decision reads the exact time left as `deadline_ms - match_time_ms`,
on Watch, Play and GetView alike, for seats and spectators, with the worker's wall clock moved by the test."""

from __future__ import annotations

import json
from typing import Any

import pytest

import gateway.service
from protos.tablehall.v1 import matches_pb2
from tests.over_grpc import Service, serve
from tests.test_service_clock import SHORT, T0, Wall


def auth_metadata(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def left(update: matches_pb2.Update) -> int:
    view: dict[str, Any] = json.loads(update.view_json)
    assert view["deadline_ms"] is not None
    return int(view["deadline_ms"]) - update.match_time_ms


def test_every_update_carries_the_match_time_at_which_it_was_built(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = Wall(T0)
    monkeypatch.setattr(gateway.service, "time", wall)

    async def body(service: Service) -> None:
        created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"], SHORT)
        match_id = created.match_id
        seats = [service.client.seat(match_id, token) for token in created.tokens]
        spectator = service.client.spectator(match_id)

        wall.now = T0 + 1_234  # the deal shows; nobody has pressed Continue yet
        first = await service.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id))
        assert first.match_time_ms == 1_234
        assert left(first) == 5_000 - 1_234, "the ready timeout left, read from the update alone"

        for seat in seats:
            await seat.act({"do": "ready"})
        started = json.loads((await service.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id))).view_json)
        mover = started["turn"]
        assert started["clock_running"] == mover and started["decision_since_ms"] == 1_234

        # a page loaded 3.5 s into the decision (1.5 s into the bank): each door says exactly that
        wall.now = T0 + 1_234 + 3_500
        expected = 2_000 + 10_000 - 3_500
        token = created.tokens[mover]
        view = await service.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=auth_metadata(token))
        assert (view.match_time_ms, left(view)) == (4_734, expected)
        watched = [u async for u in _first(service.stub.Watch(matches_pb2.WatchRequest(match_id=match_id)), 3)]
        assert [u.match_time_ms for u in watched] == [4_734] * 3, "a catch-up is read now, not when first sent"
        assert left(watched[-1]) == expected

        async def one() -> Any:
            yield matches_pb2.PlayRequest(match_id=match_id, after_seq=watched[-1].seq - 1)

        play = service.stub.Play(one(), metadata=auth_metadata(token))
        event = await anext(aiter(play))
        play.cancel()
        assert event.update.match_time_ms == 4_734 and left(event.update) == expected

        # the clock moves on: a move made later is stamped later, and the other seat's fresh decision starts
        wall.now = T0 + 6_000
        after, _ = await seats[mover].act(_lead(json.loads(view.view_json)))
        stream = aiter(spectator.updates(after - 1))
        moved = await anext(stream)
        assert moved.match_time_ms == 6_000
        assert json.loads(moved.view_json)["decision_since_ms"] == 6_000 and left(moved) == 2_000 + 10_000

        # once the match is over no clock runs: every read of it is the same bytes, with no reading
        wall.now = T0 + 7_000
        await seats[mover].act({"do": "resign"})
        ended = [await service.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id)) for _ in range(2)]
        assert ended[0].over and ended[0].match_time_ms == 0
        wall.now = T0 + 9_000
        assert (
            ended[0].SerializeToString()
            == ended[1].SerializeToString()
            == (await service.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id))).SerializeToString()
        )

    serve(body, clock=lambda: wall.now)


async def _first(stream: Any, n: int) -> Any:
    taken = 0
    async for update in stream:
        yield update
        taken += 1
        if taken == n:
            stream.cancel()
            return


def _lead(view: dict[str, Any]) -> dict[str, Any]:
    return next(a for a in view["legal"] if a["do"] == "play")
