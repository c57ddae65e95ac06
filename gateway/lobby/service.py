"""The public `tablehall.v1.Lobby` service: registers players, authenticates them by their key, and
hands the queue and the challenges to the database and the hall (gateway/lobby/hall.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import grpc
from google.protobuf.json_format import MessageToDict, ParseDict
from sqlalchemy import Engine

from gateway.lobby import bot_seats, challenges, players, queue
from gateway.lobby import metrics as lm
from gateway.lobby.hall import LobbyHall
from gateway.lobby.players import Player
from gateway.lobby.queue import PlacedSeat
from gateway.service import bearer
from gateway.tournaments.errors import NoDatabase
from gateway.workers import Router
from protos.tablehall.v1 import lobby_pb2, lobby_pb2_grpc, matches_pb2
from workers.edge import edge, edge_stream
from workers.errors import NotFound, Unauthenticated

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class LobbyService(lobby_pb2_grpc.LobbyServicer):
    def __init__(self, router: Router, hall: LobbyHall | None = None) -> None:
        self.router = router
        self._hall = hall

    async def hall(self, url: str | None = None) -> LobbyHall:
        """Made on first use on the database at `url` (default TABLEHALL_DATABASE_URL), migrated."""
        if self._hall is None:
            self._hall = LobbyHall(await _engine(url), self.router)
        return self._hall

    async def consent(self, names: list[str], caller_sha256: bytes) -> None:
        """CreateMatch's check (gateway/lobby/players.py `check_names`), once this gateway runs the Lobby."""
        if self._hall is not None:
            await asyncio.to_thread(players.check_names, self._hall.engine, names, caller_sha256)

    async def engine(self) -> Engine:
        return (await self.hall()).engine

    async def player(self, context: Context) -> tuple[LobbyHall, Player]:
        hall = await self.hall()
        key = bearer(context, required=False)
        if not key:
            raise Unauthenticated("Lobby calls need a player key: 'authorization: Bearer <key>' (RegisterPlayer)")
        found = await asyncio.to_thread(players.player_by_key, hall.engine, key)
        if found is None:
            raise Unauthenticated("that player key is not known (RegisterPlayer makes one)")
        return hall, found

    @edge
    async def RegisterPlayer(
        self, request: lobby_pb2.RegisterPlayerRequest, context: Context
    ) -> lobby_pb2.RegisteredPlayer:
        hall = await self.hall()
        made = await asyncio.to_thread(players.register, hall.engine, request.name, hall.clock())
        return lobby_pb2.RegisteredPlayer(player_id=made.player.id, name=made.player.name, key=made.key)

    @edge
    async def WhoAmI(self, request: lobby_pb2.WhoAmIRequest, context: Context) -> lobby_pb2.PlayerInfo:
        _, me = await self.player(context)
        return lobby_pb2.PlayerInfo(player_id=me.id, name=me.name)

    @edge
    async def Join(self, request: lobby_pb2.JoinRequest, context: Context) -> lobby_pb2.Ticket:
        hall, me = await self.player(context)
        where = queue.queue_for(request.game, _options(request.options))
        ticket = await asyncio.to_thread(queue.join, hall.engine, me.id, where, hall.clock())
        hall.wake.set()
        return lobby_pb2.Ticket(
            ticket=ticket.ticket, game=where.game, ordinal=ticket.ordinal, joined_unix_ms=ticket.joined_ms
        )

    @edge
    async def Leave(self, request: lobby_pb2.LeaveRequest, context: Context) -> lobby_pb2.LeaveResponse:
        hall, me = await self.player(context)
        if not await asyncio.to_thread(queue.leave, hall.engine, me.id):
            raise NotFound("you are in no queue (seated already, or never joined)")
        return lobby_pb2.LeaveResponse()

    @edge_stream
    async def Seated(self, request: lobby_pb2.SeatedRequest, context: Context) -> AsyncIterator[lobby_pb2.Seat]:
        hall, me = await self.player(context)
        listener = hall.listen(me.id)
        try:
            for _, seat in await asyncio.to_thread(queue.seats_of, hall.engine, [me.id]):
                listener.give(seat)
            while True:
                yield _seat(await listener.seats.get())
        finally:
            hall.forget(listener)

    @edge
    async def OpenChallenge(self, request: lobby_pb2.OpenChallengeRequest, context: Context) -> lobby_pb2.Challenge:
        hall, me = await self.player(context)
        where = queue.queue_for(request.game, _options(request.options))
        made = await asyncio.to_thread(
            challenges.open_challenge, hall.engine, me.id, where, request.seats, request.unlisted, hall.clock()
        )
        found = await asyncio.to_thread(challenges.challenge, hall.engine, made, hall.settings.challenge_ms)
        assert found is not None
        return _challenge(found)

    @edge
    async def ListChallenges(
        self, request: lobby_pb2.ListChallengesRequest, context: Context
    ) -> lobby_pb2.ChallengeList:
        hall = await self.hall()
        game = queue.queue_for(request.game, {}).game if request.game else ""
        now = hall.clock()
        found = await asyncio.to_thread(challenges.listed, hall.engine, game, now, hall.settings.challenge_ms)
        return lobby_pb2.ChallengeList(challenges=[_challenge(c) for c in found], now_unix_ms=now)

    @edge
    async def TakeChallenge(self, request: lobby_pb2.TakeChallengeRequest, context: Context) -> lobby_pb2.Seat:
        hall, me = await self.player(context)
        taken = await asyncio.to_thread(
            challenges.take, hall.engine, me.id, request.challenge_id, hall.clock(), hall.settings.challenge_ms
        )
        if not taken.match_id:
            return lobby_pb2.Seat(seat=taken.seat, ticket=request.challenge_id)
        lm.PAIRINGS[(taken.game, "challenge")].inc()
        await hall.create(await asyncio.to_thread(queue.creating, hall.engine, [taken.match_id]))  # none: made already
        await hall.deliver()
        seats = await asyncio.to_thread(queue.seats_of, hall.engine, [me.id])
        mine = next((seat for _, seat in seats if seat.match_id == taken.match_id), None)
        if mine is None:  # the worker was away: the table is made at a later beat and comes on Seated
            return lobby_pb2.Seat(seat=taken.seat, ticket=request.challenge_id, match_id=taken.match_id)
        return _seat(mine)

    @edge
    async def PlayBot(self, request: lobby_pb2.PlayBotRequest, context: Context) -> lobby_pb2.Seat:
        hall, me = await self.player(context)
        level = bot_seats.level_named(request.level)
        where = queue.queue_for(request.game, _options(request.options))
        made = await asyncio.to_thread(bot_seats.open_bot_table, hall.engine, me, where, level, hall.clock())
        lm.PAIRINGS[(where.game, "bot")].inc()
        await hall.create(await asyncio.to_thread(queue.creating, hall.engine, [made]))
        await hall.deliver()
        hall.wake.set()  # the leader's next beat starts the bots
        seats = await asyncio.to_thread(queue.seats_of, hall.engine, [me.id])
        mine = next((seat for _, seat in seats if seat.match_id == made), None)
        if mine is None:  # the worker was away: the table is made at a later beat and comes on Seated
            return lobby_pb2.Seat(match_id=made, game=where.game)
        return _seat(mine)

    @edge
    async def CancelChallenge(
        self, request: lobby_pb2.CancelChallengeRequest, context: Context
    ) -> lobby_pb2.CancelChallengeResponse:
        hall, me = await self.player(context)
        await asyncio.to_thread(challenges.cancel, hall.engine, me.id, request.challenge_id)
        return lobby_pb2.CancelChallengeResponse()


def _options(message: matches_pb2.Options) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True)


def _seat(seat: PlacedSeat) -> lobby_pb2.Seat:
    return lobby_pb2.Seat(
        match_id=seat.match_id,
        seat=seat.seat,
        game=seat.game,
        players=list(seat.players),
        ticket=seat.ticket,
        seated_unix_ms=seat.seated_ms,
    )


def _challenge(found: challenges.Challenge) -> lobby_pb2.Challenge:
    return lobby_pb2.Challenge(
        challenge_id=found.id,
        game=found.game,
        host=found.host,
        seats=found.seats,
        taken_by=list(found.taken_by),
        opened_unix_ms=found.opened_ms,
        expires_unix_ms=found.expires_ms,
        options=ParseDict(found.options, matches_pb2.Options()),
    )


async def _engine(url: str | None) -> Engine:
    from workers.sql.engine import database_url
    from workers.sql.migrate import engine_for

    url = url or database_url()
    if url == "memory":
        raise NoDatabase("the Lobby needs a database: this service runs with TABLEHALL_DATABASE_URL=memory")
    return await asyncio.to_thread(engine_for, url)


__all__ = ["LobbyService"]
