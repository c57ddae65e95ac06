"""The Lobby in the distributed topology on PostgreSQL: two gateways, each with its own pairing loop,
one worker, one database. One loop holds the lease and pairs; a seat made by it reaches a player
listening on the other gateway; two loops forced to pair at once still seat nobody twice."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy import select

from gateway.lobby import queue, schema
from gateway.lobby.hall import LobbyHall
from gateway.lobby.service import LobbyService
from gateway.server import Gateway, public_servicers, start_gateway
from gateway.workers import Router
from tablehall.client import Client
from tablehall.lobby_client import LobbyClient, register
from tests.lobby_support import Clock, lobby_hall
from tests.storage_backends import postgres_database
from workers.host import MatchHost
from workers.sql import SqlStorage
from workers.sql.migrate import engine_for

SB = "spectacular-bid"


@dataclass
class Door:
    hall: LobbyHall
    gateway: Gateway
    client: Client


@contextlib.asynccontextmanager
async def two_gateways(url: str, clock: Clock) -> AsyncIterator[tuple[MatchHost, Door, Door]]:
    storage = await SqlStorage.open(url)
    host = MatchHost(storage, 0, 1)
    await host.start()
    os.environ["TABLEHALL_DATABASE_URL"] = url
    engine = await asyncio.to_thread(engine_for, url)
    doors = []
    try:
        for _ in range(2):
            router = Router([host])
            hall = lobby_hall(engine, router, clock)
            servicers = public_servicers(router, lobby=LobbyService(router, hall))
            gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
            doors.append(Door(hall, gateway, Client(f"127.0.0.1:{gateway.port}")))
        yield host, doors[0], doors[1]
    finally:
        for door in doors:
            await door.client.close()
            await door.gateway.stop(grace=0.5)
        host.close()
        await storage.close()


def test_two_gateways_one_pairing_loop_and_seats_reach_either_gateway() -> None:
    saved = os.environ.get("TABLEHALL_DATABASE_URL")

    async def main(url: str) -> None:
        clock = Clock()
        async with two_gateways(url, clock) as (host, a, b):
            keys = {}
            for i in range(8):
                door = (a, b)[i % 2]
                me = await register(door.client, f"P{i}")
                keys[me.player_id] = (door, me.key)
            listening = {}
            for pid, (door, key) in keys.items():
                player = LobbyClient(door.client, key)
                ticket = await player.join(SB)
                listening[pid] = asyncio.create_task(asyncio.wait_for(player.seated(ticket.ticket), 20))
            made_a, made_b = await asyncio.gather(a.hall.tick(), b.hall.tick())
            assert sorted([a.hall.leading, b.hall.leading]) == [False, True], "one loop leads"
            assert len(made_a) + len(made_b) == 4 and (made_a == [] or made_b == [])
            for _ in range(3):  # the other gateway delivers at its next beat
                await asyncio.gather(a.hall.tick(), b.hall.tick())
            seats = {pid: await task for pid, task in listening.items()}
            assert sorted(s.match_id for s in seats.values()) == sorted(2 * [*made_a, *made_b])
            assert all(s.match_id in host.actors for s in seats.values())

    try:
        with postgres_database() as url:
            asyncio.run(asyncio.wait_for(main(url), 60))
    finally:
        if saved is None:
            os.environ.pop("TABLEHALL_DATABASE_URL", None)
        else:
            os.environ["TABLEHALL_DATABASE_URL"] = saved


def test_two_loops_pairing_at_once_seat_nobody_twice() -> None:
    """Whatever the lease: claims delete queue rows, so racing loops cannot both seat a player."""

    async def main(url: str) -> None:
        clock = Clock()
        async with two_gateways(url, clock) as (_, a, b):
            for i in range(40):
                me = await register(a.client, f"R{i}")
                await LobbyClient(a.client, me.key).join(SB)
            made = await asyncio.gather(*(asyncio.to_thread(h._pair, clock()) for h in (a.hall, b.hall, a.hall)))
            # a pair whose claim lost one player to another loop is skipped, its partner left queued for the
            # next beat (a CI failure: 19 of 20 in the racing passes): one more beat seats the rest
            made.append(await asyncio.to_thread(a.hall._pair, clock()))
            assert sum(len(m) for m in made) == 20
            with a.hall.engine.connect() as conn:
                seated = [r[0] for r in conn.execute(select(schema.lobby_seats.c.player_id))]
            assert len(seated) == len(set(seated)) == 40
            assert await asyncio.to_thread(queue.queued, a.hall.engine) == []

    saved = os.environ.get("TABLEHALL_DATABASE_URL")
    try:
        with postgres_database() as url:
            asyncio.run(asyncio.wait_for(main(url), 60))
    finally:
        if saved is None:
            os.environ.pop("TABLEHALL_DATABASE_URL", None)
        else:
            os.environ["TABLEHALL_DATABASE_URL"] = saved
