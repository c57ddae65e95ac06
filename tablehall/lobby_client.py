"""The SDK's Lobby: register a player, queue, leave, wait to be seated, challenges (async).

    me = await register(client, "Ana")                  # me.key: keep it, it is shown once
    lobby = LobbyClient(client, me.key)
    ticket = await lobby.join("spectacular-bid")
    seat = await lobby.seated(ticket)                    # then client.seat(seat.match_id, me.key)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.json_format import ParseDict

from protos.tablehall.v1 import lobby_pb2, lobby_pb2_grpc
from tablehall.client import Client, TablehallError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Me:
    player_id: int
    name: str
    key: str


async def _called(call: Awaitable[T]) -> T:
    try:
        return await call
    except grpc.aio.AioRpcError as error:
        raise TablehallError.of(error) from None


async def register(client: Client, name: str) -> Me:
    stub = lobby_pb2_grpc.LobbyStub(client.channel)
    made = await _called(stub.RegisterPlayer(lobby_pb2.RegisterPlayerRequest(name=name)))
    return Me(made.player_id, made.name, made.key)


class LobbyClient:
    """One player's Lobby calls, with their key."""

    def __init__(self, client: Client, key: str) -> None:
        self.client = client
        self.stub = lobby_pb2_grpc.LobbyStub(client.channel)
        self.metadata = (("authorization", f"Bearer {key}"),)

    async def me(self) -> lobby_pb2.PlayerInfo:
        return await _called(self.stub.WhoAmI(lobby_pb2.WhoAmIRequest(), metadata=self.metadata))

    async def join(self, game: str, options: Mapping[str, Any] | None = None) -> lobby_pb2.Ticket:
        request = lobby_pb2.JoinRequest(game=game)
        ParseDict(dict(options or {}), request.options)
        return await _called(self.stub.Join(request, metadata=self.metadata))

    async def leave(self) -> None:
        await _called(self.stub.Leave(lobby_pb2.LeaveRequest(), metadata=self.metadata))

    async def seats(self) -> AsyncGenerator[lobby_pb2.Seat, None]:
        """Every seat still pending, then each new one, until the caller stops."""
        call = self.stub.Seated(lobby_pb2.SeatedRequest(), metadata=self.metadata)
        try:
            async for seat in call:
                yield seat
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None
        finally:
            call.cancel()

    async def seated(self, ticket: str | None = None) -> lobby_pb2.Seat:
        """The seat this ticket (or challenge id) ends in; with None, the first seat that comes."""
        async for seat in self.seats():
            if ticket is None or seat.ticket == ticket:
                return seat
        raise TablehallError(grpc.StatusCode.UNAVAILABLE, "unavailable", "the Seated stream ended")

    async def open_challenge(
        self, game: str, options: Mapping[str, Any] | None = None, seats: int = 0, unlisted: bool = False
    ) -> lobby_pb2.Challenge:
        request = lobby_pb2.OpenChallengeRequest(game=game, seats=seats, unlisted=unlisted)
        ParseDict(dict(options or {}), request.options)
        return await _called(self.stub.OpenChallenge(request, metadata=self.metadata))

    async def challenges(self, game: str = "") -> list[lobby_pb2.Challenge]:
        return list((await self.challenge_list(game)).challenges)

    async def challenge_list(self, game: str = "") -> lobby_pb2.ChallengeList:
        """The listed challenges with the service's clock reading (their time left: expires − now)."""
        request = lobby_pb2.ListChallengesRequest(game=game)
        listed: lobby_pb2.ChallengeList = await _called(self.stub.ListChallenges(request, metadata=self.metadata))
        return listed

    async def play_bot(self, game: str, level: str = "", options: Mapping[str, Any] | None = None) -> lobby_pb2.Seat:
        """A table against practice bots of a level (random, greedy, search): the caller's Seat."""
        request = lobby_pb2.PlayBotRequest(game=game, level=level)
        ParseDict(dict(options or {}), request.options)
        return await _called(self.stub.PlayBot(request, metadata=self.metadata))

    async def take(self, challenge_id: str) -> lobby_pb2.Seat:
        request = lobby_pb2.TakeChallengeRequest(challenge_id=challenge_id)
        return await _called(self.stub.TakeChallenge(request, metadata=self.metadata))

    async def cancel(self, challenge_id: str) -> None:
        request = lobby_pb2.CancelChallengeRequest(challenge_id=challenge_id)
        await _called(self.stub.CancelChallenge(request, metadata=self.metadata))
