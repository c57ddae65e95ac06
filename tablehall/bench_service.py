"""`tablehall bench service`: bot-vs-bot matches through the gateway, with the ping baseline in the same run.

Unless `--address` is given it starts `tablehall serve` as a separate process, so that the service and
the load generator each have their own core. Every seat is a bot that watches its own stream and acts
when its view offers legal actions, as a real client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tablehall.client import Client, Result, SeatClient

PLAYERS = {"spectacular-bid": ["A", "B"], "501": ["A", "B", "C"]}
_NEVER = {"resign", "abandon"}


@dataclass
class Tally:
    command_s: list[float] = field(default_factory=list)
    ping_s: list[float] = field(default_factory=list)
    refused: int = 0
    wall_s: float = 0.0
    idle_ping_s: list[float] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds spent during the load, per process of the service and by the load generator."""


def cpu_seconds(root: int | None) -> dict[str, float]:
    """User + system CPU of the `tablehall serve` process and its worker processes, from /proc (Linux);
    the load generator's own as "load generator"."""
    out = {"load generator": time.process_time()}
    pending = [] if root is None else [root]
    while pending:
        pid = pending.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        name = "gateway" if pid == root else " ".join(w for w in words[3:6] if w != "--ordinal") or str(pid)
        out[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@contextlib.asynccontextmanager
async def service(address: str | None, workers: int, database_url: str) -> AsyncIterator[tuple[str, int | None]]:
    if address is not None:
        yield address, None
        return
    env = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", database_url]
    process = subprocess.Popen([*command, "--workers", str(workers)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        if "serving on" not in line:
            raise RuntimeError(f"tablehall serve did not start: {line!r}")
        yield line.split("serving on ", 1)[1].split()[0], process.pid
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 10)


async def bot(seat: SeatClient, rng: random.Random, tally: Tally) -> None:
    """One seat on a `Play` session: act when the newest view offers something and no command of ours
    is in flight; a view older than our last change is stale and waits for the next update."""
    session = await seat.session()
    view: dict[str, Any] = {"legal": []}
    seen = acted = 0
    sent_at: float | None = None
    try:
        async for event in session.events():
            if isinstance(event, Result):
                assert sent_at is not None
                if event.error is None:
                    tally.command_s.append(time.perf_counter() - sent_at)
                    acted = event.seq
                elif event.error.status == grpc.StatusCode.FAILED_PRECONDITION:
                    tally.refused += 1  # the match moved on (a deadline, the other seat)
                else:
                    raise event.error
                sent_at = None
            else:
                seen, view = event
            if sent_at is None and seen >= acted:
                legal = [a for a in view["legal"] if a["do"] not in _NEVER]
                if legal:
                    sent_at = time.perf_counter()
                    await session.send(rng.choice(legal))
    finally:
        await session.close()


async def one_match(client: Client, game: str, rng: random.Random, tally: Tally) -> None:
    created = await client.create_match(game, PLAYERS[game])
    seats = [client.seat(created.match_id, token) for token in created.tokens]
    await asyncio.gather(*(bot(seat, random.Random(rng.random()), tally) for seat in seats))


async def pinger(client: Client, samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await client.ping()
        samples.append(time.perf_counter() - started)
        await asyncio.sleep(0.005)


CHANNELS = 16
"""Bots spread over this many connections, as many devices would be (one HTTP/2 connection serialises)."""


async def run(
    address: str | None, matches: int, concurrency: int, game: str, seed: int, workers: int, database_url: str
) -> Tally:
    tally = Tally()
    rng = random.Random(seed)
    async with service(address, workers, database_url) as (where, pid), contextlib.AsyncExitStack() as stack:
        pool = [await stack.enter_async_context(Client(where)) for _ in range(CHANNELS)]
        client = pool[0]
        for _ in range(50):
            await client.ping()  # warm the channel
        for _ in range(200):
            started = time.perf_counter()
            await client.ping()
            tally.idle_ping_s.append(time.perf_counter() - started)
        gate = asyncio.Semaphore(concurrency)
        stop = asyncio.Event()
        columns = (TextColumn("matches"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("matches", total=matches)

            async def gated(number: int) -> None:
                async with gate:
                    await one_match(pool[number % CHANNELS], game, rng, tally)
                progress.advance(task)

            pings = asyncio.create_task(pinger(client, tally.ping_s, stop))
            started, cpu = time.perf_counter(), cpu_seconds(pid)
            await asyncio.gather(*(gated(number) for number in range(matches)))
            tally.wall_s = time.perf_counter() - started
            tally.cpu_s = {name: spent - cpu.get(name, 0.0) for name, spent in cpu_seconds(pid).items()}
            stop.set()
            await pings
    return tally


def bench_service(
    address: str | None, matches: int, concurrency: int, game: str, seed: int, workers: int, database_url: str
) -> int:
    tally = asyncio.run(run(address, matches, concurrency, game, seed, workers, database_url))
    wall = tally.wall_s
    where = address or f"{workers or 'no'} worker processes, storage {database_url}"
    table = Table(title=f"tablehall bench service: {matches} {game} matches, {concurrency} at a time ({where})")
    for column in ("commands", "commands/s", "command p50", "command p99", "ping p50", "ping p99", "p50 ratio"):
        table.add_column(column, justify="right")
    c50, c99 = quantile(tally.command_s, 0.5), quantile(tally.command_s, 0.99)
    p50, p99 = quantile(tally.ping_s, 0.5), quantile(tally.ping_s, 0.99)
    table.add_row(
        str(len(tally.command_s)),
        f"{len(tally.command_s) / wall:,.0f}",
        f"{c50 * 1000:.2f} ms",
        f"{c99 * 1000:.2f} ms",
        f"{p50 * 1000:.2f} ms",
        f"{p99 * 1000:.2f} ms",
        f"{c50 / p50:.2f}×",
    )
    Console().print(table)
    idle50, idle99 = quantile(tally.idle_ping_s, 0.5), quantile(tally.idle_ping_s, 0.99)
    Console().print(
        f"wall {wall:.1f} s; {tally.refused} commands refused because the match had moved on; "
        f"ping before the load: p50 {idle50 * 1000:.2f} ms, p99 {idle99 * 1000:.2f} ms"
    )
    if tally.command_s:
        per = {name: spent * 1000 / len(tally.command_s) for name, spent in sorted(tally.cpu_s.items())}
        Console().print(
            "CPU per command during the load: "
            + ", ".join(f"{name} {ms:.2f} ms" for name, ms in per.items())
            + f"; in all {sum(per.values()):.2f} ms (PostgreSQL's own not counted)"
        )
    return 0
