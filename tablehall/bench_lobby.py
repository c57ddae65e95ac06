"""`tablehall bench lobby [--players 2000] [--over-s 60]`: players join the Lobby's queue over a period
against an embedded `tablehall serve` (its one pairing loop); the time from each join to its seat.

The players are registered in the bench's database before the service starts (a key each), with
ratings drawn from N(0, σ=8) ordinal points (the spread of an active leaderboard; seed fixed), so the
pairing has gaps to weigh. Each player opens its `Seated` stream, then joins at its moment of the
period (evenly spread), and is done at its seat. Players share a few connections (each within the
per-connection stream limit). Prints join→seated p50/p99/max, the mean rating gap of the tables made,
and anyone not seated within `--grace-s` after the last join.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, func, select

from tablehall.children import stop
from tablehall.client import Client
from tablehall.lobby_client import LobbyClient

PER_CONNECTION = 50
RATING_SPREAD = 8.0


@dataclass(frozen=True, slots=True)
class Outcome:
    waits_s: list[float]
    unseated: int
    tables: int
    mean_gap: float


def bench_lobby(players: int, over_s: float, game: str, database_url: str | None, grace_s: float) -> int:
    with tempfile.TemporaryDirectory(prefix="tablehall-bench-lobby-") as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        from workers.sql.migrate import engine_for

        engine = engine_for(url)
        keys = _registered(engine, players, game)
        command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--web-port", "off"]
        env = {"TABLEHALL_LOG_LEVEL": "WARNING", "TABLEHALL_DATABASE_URL": url}
        command += ["--database-url", url]  # its log (tables voided `abandoned`: nobody plays them) is dropped
        server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(env))
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            if "serving on" not in line:
                print(f"tablehall bench lobby: the service did not start: {line!r}", file=sys.stderr)
                return 1
            outcome = asyncio.run(_measure(line.split()[3], keys, over_s, game, grace_s, engine))
        finally:
            stop(server)
    _report(players, over_s, game, url, outcome)
    return 0


def _env(extra: dict[str, str]) -> dict[str, str]:
    import os

    return {**os.environ, **extra}


def _registered(engine: Engine, players: int, game: str) -> list[str]:
    """Players with keys and ratings, written straight to the database (setup, not measured)."""
    from gateway.lobby.players import register
    from ratings import models as r
    from ratings.rating import DEFAULT_SIGMA

    rng = random.Random(1)
    stamp = time.time_ns() // 1_000_000
    keys, rows = [], []
    for i in range(players):
        made = register(engine, f"bench-{stamp % 100_000_000}-{i}", stamp)
        keys.append(made.key)
        ordinal = rng.gauss(0.0, RATING_SPREAD)
        rows.append({
            "player_id": made.player.id, "game": game, "mu": ordinal + 3 * DEFAULT_SIGMA, "sigma": DEFAULT_SIGMA,
            "ordinal": ordinal, "games": 10, "updated_unix_ms": stamp,
        })  # fmt: skip
    with engine.begin() as conn:
        conn.execute(r.ratings.insert(), rows)
    return keys


async def _measure(address: str, keys: list[str], over_s: float, game: str, grace_s: float, engine: Engine) -> Outcome:
    clients = [Client(address) for _ in range(max(1, -(-len(keys) // PER_CONNECTION)))]
    waits: list[float] = []
    try:
        start = time.perf_counter()
        step = over_s / max(1, len(keys))
        tasks = [
            asyncio.create_task(_one(clients[i // PER_CONNECTION], key, game, start + i * step, waits))
            for i, key in enumerate(keys)
        ]
        done, late = await asyncio.wait(tasks, timeout=over_s + grace_s)
        for task in late:
            task.cancel()
        for task in done:
            task.result()
    finally:
        for client in clients:
            await client.close()
    tables, gap = await asyncio.to_thread(_tables, engine)
    return Outcome(waits, len(keys) - len(waits), tables, gap)


async def _one(client: Client, key: str, game: str, at: float, waits: list[float]) -> None:
    lobby = LobbyClient(client, key)
    await asyncio.sleep(max(0.0, at - time.perf_counter()))  # the bench's schedule, not a test's clock
    seats = lobby.seats()
    first = asyncio.ensure_future(anext(seats))
    await asyncio.sleep(0)  # the stream is on its way (a seat made before it is listened for comes first on it)
    joined = time.perf_counter()
    ticket = await lobby.join(game)
    seat = await first
    while seat.ticket != ticket.ticket:
        seat = await anext(seats)
    waits.append(time.perf_counter() - joined)
    await seats.aclose()


def _tables(engine: Engine) -> tuple[int, float]:
    from gateway.lobby import schema
    from workers.sql.models import rows

    t = schema.lobby_tables
    with engine.connect() as conn:
        count, gap = rows(conn, select(func.count(), func.avg(t.c.gap)))[0]
    return int(count), float(gap or 0.0)


def _report(players: int, over_s: float, game: str, url: str, outcome: Outcome) -> None:
    waits = sorted(outcome.waits_s)

    def at(q: float) -> float:
        return waits[min(len(waits) - 1, int(q * len(waits)))] * 1000 if waits else float("nan")

    where = url.split("://")[0]
    print(f"{players} players joined the {game} queue over {over_s:g} s, embedded tablehall serve ({where}):")
    print(f"  join → seated      p50 {at(0.5):7.0f} ms   p99 {at(0.99):7.0f} ms   max {at(1.0):7.0f} ms")
    spread = f"ordinal; ratings drawn with σ {RATING_SPREAD:g}"
    print(f"  tables made        {outcome.tables}   mean rating gap {outcome.mean_gap:.2f} ({spread})")
    mean = statistics.fmean(waits) if waits else float("nan")
    print(f"  seated             {len(waits)} (mean wait {mean:.2f} s); not seated in time: {outcome.unseated}")
