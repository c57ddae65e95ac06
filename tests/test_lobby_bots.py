"""Play a bot from the Lobby over a real gateway and database: a table of the caller and bot players of
the chosen level is made at once, the leader's beat starts the bots, and the match is played to its end
by the caller (a greedy policy on its own view) and the bots; an unknown level changes nothing."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import grpc
import pytest

from gateway.lobby import schema
from protos.tablehall.v1 import lobby_pb2
from tablehall.client import Client, TablehallError
from tests.lobby_support import Lobby, run_lobby
from workers.bots import Level, decide, is_over
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID

OPTIONS = {SPECTACULAR_BID: {"start_points": 40}, FIVE_OH_ONE: {"start_score": 100}}


async def play_out(lobby: Lobby, match_id: str, key: str) -> dict[str, object]:
    """The caller plays greedy from its own view until the match is over; the final view."""
    return await play_on(lobby.client, match_id, key)


async def play_out_at(address: str, match_id: str, key: str) -> dict[str, object]:
    async with Client(address) as client:
        return await play_on(client, match_id, key)


async def play_on(client: Client, match_id: str, key: str, until: str = "over") -> dict[str, object]:
    """Play greedy from the seat's view until its phase is `until` (or the match is over)."""
    seat, rng = client.seat(match_id, key), random.Random(7)
    async for _seq, view in seat.watch():
        if is_over(view) or view.get("phase") == until:
            return view
        action = decide(view, Level.GREEDY, rng)
        if action is not None:
            try:
                await seat.act(action)
            except TablehallError as refused:  # a view already behind a bot's move: the next one decides
                assert refused.code in ("illegal_action", "not_your_turn"), refused
    raise AssertionError("the watch ended before the match")


@pytest.mark.parametrize(
    ("game", "level"), [(SPECTACULAR_BID, "greedy"), (FIVE_OH_ONE, "random"), (SPECTACULAR_BID, "search")]
)
def test_a_player_plays_a_bot_of_the_chosen_level_to_the_end(tmp_path: Path, game: str, level: str) -> None:
    async def body(lobby: Lobby) -> None:
        ana = await lobby.player("Ana")
        request = lobby_pb2.PlayBotRequest(game=game, level=level)
        for name, value in OPTIONS[game].items():
            setattr(request.options, name, value)
        seat = await ana.stub.PlayBot(request, metadata=ana.metadata)
        bots = [p for p in seat.players if p != "Ana"]
        assert seat.match_id and len(seat.players) in (2, 3) and seat.players[seat.seat] == "Ana"
        assert bots == [f"Bot ({level})"] + [f"Bot ({level}) {n}" for n in range(2, len(bots) + 1)]
        lobby.hall.bots.move_ms = 50  # a search bot thinks 50 ms a move here (1 s in service)
        await lobby.hall.tick()  # the leader's beat starts the bots
        assert len(lobby.hall.bots.running) == len(bots)
        final = await play_out(lobby, seat.match_id, lobby.players["Ana"].key)
        assert final.get("void_reason") in (None, ""), final
        record = await lobby.client.record(seat.match_id)
        acted = {e.get("seat") for e in record["events"] if e.get("do") not in ("deal", None)}
        assert set(range(len(seat.players))) <= acted, "every seat, the bots' too, acted"
        await asyncio.gather(*lobby.hall.bots.running.values())  # each runner ends with its match
        again = await ana.stub.PlayBot(request, metadata=ana.metadata)  # the same bot players, a new table
        assert list(again.players) and set(again.players) - {"Ana"} == set(bots)
        await lobby.hall.bots.stop()

    run_lobby(tmp_path, body, timeout=240)


def test_an_unknown_level_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana = await lobby.player("Ana")
        request = lobby_pb2.PlayBotRequest(game=SPECTACULAR_BID, level="grandmaster" * 30)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await ana.stub.PlayBot(request, metadata=ana.metadata)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert len(refused.value.details() or "") < 200
        assert lobby.count(schema.lobby_tables) == 0 and lobby.count(schema.player_keys) == 1

    run_lobby(tmp_path, body)
