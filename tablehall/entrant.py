"""A tournament entrant: with a player's tournament token, fetch each assignment and play it with a bot,
until the tournament is over (`tablehall tournament bot`, and the end-to-end tournament test)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import grpc

from protos.tablehall.v1 import tournaments_pb2, tournaments_pb2_grpc
from tablehall.bots import run_bot
from tablehall.client import Client, TablehallError

log = logging.getLogger("tablehall.entrant")

RETRY_S = 0.5
"""The wait before an entrant opens its assignment stream again after the service dropped it."""


async def assignment(
    stub: tournaments_pb2_grpc.TournamentsStub, tournament_id: str, token: str
) -> tournaments_pb2.Assignment:
    try:
        reply: tournaments_pb2.Assignment = await stub.GetAssignment(
            tournaments_pb2.GetAssignmentRequest(tournament_id=tournament_id),
            metadata=(("authorization", f"Bearer {token}"),),
        )
    except grpc.aio.AioRpcError as error:
        raise TablehallError.of(error) from None
    return reply


async def pushed(
    stub: tournaments_pb2_grpc.TournamentsStub, tournament_id: str, token: str
) -> AsyncIterator[tournaments_pb2.Assignment]:
    """The player's assignments as the service pushes them (WatchAssignment), refusals as TablehallError."""
    request = tournaments_pb2.GetAssignmentRequest(tournament_id=tournament_id)
    call = stub.WatchAssignment(request, metadata=(("authorization", f"Bearer {token}"),))
    try:
        async for message in call:
            yield message
    except grpc.aio.AioRpcError as error:
        raise TablehallError.of(error) from None
    finally:
        call.cancel()


async def play_tournament(
    client: Client,
    tournament_id: str,
    token: str,
    *,
    greedy: bool = True,
    seed: int | None = None,
    on_table: Callable[[tournaments_pb2.Assignment], None] | None = None,
) -> tournaments_pb2.Assignment:
    """Play every table this player is given, as each is pushed; returns the final assignment (status
    finished, the rank). A stream the service drops (UNAVAILABLE) is opened again."""
    stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
    played: set[str] = set()
    while True:
        try:
            async for now in pushed(stub, tournament_id, token):
                if now.status == "finished":
                    return now
                if now.status == "table" and now.match_id not in played:
                    if on_table is not None:
                        on_table(now)
                    played.add(now.match_id)
                    await run_bot("", now.match_id, now.seat_token, greedy=greedy, seed=seed, client=client)
        except TablehallError as error:
            if error.status != grpc.StatusCode.UNAVAILABLE:
                raise
            log.info("assignment stream lost (%s); opening it again", error.line())
        await asyncio.sleep(RETRY_S)
