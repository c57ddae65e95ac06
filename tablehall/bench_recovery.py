"""`tablehall bench recovery`: how long one worker takes to recover N unfinished matches from the log.

It creates N Spectacular Bid matches through a worker on the given database, plays a few commands in
each (ready, ready, the lead, some plays), stops that worker, then times a new worker's `start()`:
claiming the partitions, loading every unfinished match (snapshot + later steps) and re-arming timers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import secrets
import time

from rich.console import Console
from rich.progress import Progress

from protos.tablehall.v1 import host_pb2
from tablehall.bots import choose
from tablehall.client import action_message
from workers.actor import unix_ms
from workers.games.catalog import SPECTACULAR_BID
from workers.host import MatchHost
from workers.settings import open_storage

PLAYERS = ["A", "B"]


async def fill(host: MatchHost, matches: int, moves: int, rng: random.Random) -> None:
    tokens = [secrets.token_urlsafe(16) for _ in PLAYERS]
    hashes = [hashlib.sha256(t.encode()).digest() for t in tokens]
    gate = asyncio.Semaphore(64)
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("creating matches", total=matches)

        async def one() -> None:
            async with gate:
                match_id = secrets.token_hex(8)
                created = unix_ms()
                await host.create(
                    host_pb2.HostCreateRequest(
                        match_id=match_id, game=SPECTACULAR_BID, players=PLAYERS, options_json=json.dumps({}),
                        token_sha256=hashes, created_unix_ms=created,
                    )
                )
                actor = host.actors[match_id]
                for _ in range(moves):
                    for seat in (0, 1):
                        view = json.loads(actor.view_json(seat, actor.seq))  # type: ignore[arg-type]
                        action = choose(view, rng, greedy=False)
                        if action is not None:
                            command = host_pb2.HostCommandRequest(
                                match_id=match_id, token_sha256=hashes[seat], action=action_message(action),
                                arrival_unix_ms=unix_ms(),
                            )
                            await host.command(command)
                            break
            progress.advance(task)

        await asyncio.gather(*(one() for _ in range(matches)))


async def run(matches: int, moves: int, database_url: str) -> tuple[float, int, int]:
    storage = await open_storage(database_url)
    first = MatchHost(storage, tolerance_ms=3_600_000)
    await first.start()
    await fill(first, matches, moves, random.Random(1))
    await first.stop()
    await storage.close()

    storage = await open_storage(database_url)
    second = MatchHost(storage, tolerance_ms=3_600_000)
    started = time.perf_counter()
    await second.start()
    took = time.perf_counter() - started
    steps = sum(a.position.logged for a in second.actors.values())
    recovered = len(second.actors)
    await second.stop()
    await storage.close()
    return took, recovered, steps


def bench_recovery(matches: int, moves: int, database_url: str) -> int:
    took, recovered, steps = asyncio.run(run(matches, moves, database_url))
    Console().print(
        f"recovered {recovered} unfinished matches ({steps} logged steps) in {took:.2f} s "
        f"({recovered / took:,.0f} matches/s) from {database_url}"
    )
    return 0
