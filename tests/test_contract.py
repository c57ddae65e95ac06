"""What matches.proto promises a client author, over a real gateway: which actions each game takes (any
other is INVALID_ARGUMENT), that GetView without a token is the spectator's view, that Watch ends after
the final update, and that an action in Play's first message is ignored."""

from __future__ import annotations

import asyncio
import json
import re

import grpc
import pytest

from protos.tablehall.v1 import matches_pb2
from tablehall.client import TablehallError, action_message
from tests.conftest import REPO
from tests.over_grpc import Service, serve

PROTO = REPO / "protos" / "tablehall" / "v1" / "matches.proto"
TAKES = {
    "spectacular-bid": {"ready", "reveal", "play", "draw", "bid", "raise_", "accept", "decline", "resign"},
    "501": {"look", "bid", "pass_", "abandon", "declare", "play"},
}
PLAYERS = {"spectacular-bid": ["Ana", "Bia"], "501": ["Ana", "Bia", "Cid"]}


def test_the_proto_names_the_actions_each_game_takes_and_the_view_schemas() -> None:
    text = PROTO.read_text()
    section = text[text.index("// Which actions each game takes") :]
    for line, game in (("Spectacular Bid:", "spectacular-bid"), ("501:", "501")):
        listed = re.search(rf"//\s+{line}[ ]+(.+)", section)
        assert listed is not None, line
        names = re.sub(r"\s*\([^)]*\)", "", listed.group(1)).split(", ")
        assert set(names) == TAKES[game]
    named = set(re.findall(r"protos/tablehall/v1/views/[\w.-]+\.schema\.json", text))
    assert named == {f"protos/tablehall/v1/views/{g}.schema.json" for g in TAKES}
    assert all((REPO / path).is_file() for path in named)


@pytest.mark.parametrize("game", sorted(TAKES))
def test_an_action_the_game_does_not_take_is_invalid_argument(game: str) -> None:
    others = set(matches_pb2.Action.DESCRIPTOR.fields_by_name) - TAKES[game]
    assert ("resign" in others) == (game == "501")

    async def body(service: Service) -> None:
        made = await service.client.create_match(game, PLAYERS[game])
        seat = service.client.seat(made.match_id, made.tokens[0])
        before = service.actor(made.match_id).seq
        for kind in sorted(others):
            with pytest.raises(TablehallError) as caught:
                await seat.act({"do": kind.rstrip("_")})
            assert (caught.value.status, caught.value.code) == (grpc.StatusCode.INVALID_ARGUMENT, "malformed_input")
        assert service.actor(made.match_id).seq == before, "a refused command changes nothing"

    serve(body)


def test_get_view_without_a_token_is_the_spectators_view() -> None:
    async def body(service: Service) -> None:
        made = await service.client.create_match("spectacular-bid", PLAYERS["spectacular-bid"])
        reply = await service.stub.GetView(matches_pb2.GetViewRequest(match_id=made.match_id))
        assert not reply.HasField("seat")
        view = json.loads(reply.view_json)
        assert (view["seat"], view["hand"], view["legal"]) == (None, None, [])
        watched = await anext(aiter(service.client.spectator(made.match_id).updates(reply.seq - 1)))
        assert watched.view_json == reply.view_json

    serve(body)


def test_watch_ends_right_after_the_final_update() -> None:
    async def body(service: Service) -> None:
        made = await service.client.create_match("spectacular-bid", PLAYERS["spectacular-bid"])
        live = asyncio.ensure_future(_all(service, made.match_id, 0))
        await service.client.seat(made.match_id, made.tokens[1]).act({"do": "resign"})
        for updates in (await live, await _all(service, made.match_id, 0), await _all(service, made.match_id, 1)):
            assert updates[-1].over and not any(u.over for u in updates[:-1])
            assert json.loads(updates[-1].view_json)["status"] == "finished"

    serve(body)


async def _all(service: Service, match_id: str, after: int) -> list[matches_pb2.Update]:
    return [u async for u in service.client.spectator(match_id).updates(after)]


def test_an_action_in_plays_first_message_is_ignored() -> None:
    async def body(service: Service) -> None:
        made = await service.client.create_match("spectacular-bid", PLAYERS["spectacular-bid"])
        requests: asyncio.Queue[matches_pb2.PlayRequest | None] = asyncio.Queue()

        async def sent() -> object:
            while (request := await requests.get()) is not None:
                yield request

        call = service.stub.Play(sent(), metadata=(("authorization", f"Bearer {made.tokens[0]}"),))
        first = matches_pb2.PlayRequest(match_id=made.match_id, ref=7, action=action_message({"do": "resign"}))
        await requests.put(first)
        event = await call.read()
        assert event.WhichOneof("kind") == "update" and event.update.seq == 1 and not event.update.over
        await requests.put(matches_pb2.PlayRequest(ref=8, action=action_message({"do": "ready"})))
        event = await call.read()
        while event.WhichOneof("kind") == "update":
            event = await call.read()
        assert event.result.ref == 8, "the first message's action got no result: it was never a command"
        assert event.result.seq == 2 and not event.result.HasField("error")
        actor = service.actor(made.match_id)
        assert not actor.match.over and [step.action.to_json() for step in actor.match.steps()] == [{"do": "ready"}]
        await requests.put(None)
        call.cancel()

    serve(body)
