"""`tablehall bench path`: the service's own work per command, in one process, without gRPC.

`tablehall bench service` measures a command through gRPC on a machine whose speed drifts by a third within
the hour, so a change worth a few percent is lost in its noise. This bench runs the same path the gateway's
`Play` runs (`MatchesService.Play`, the router, the embedded `MatchHost` on the in-memory log, the views and
their bytes) with bots in the same process and the same choices as `bench service`'s, handing requests in and
taking the serialized events out where gRPC would. It prints the service's CPU per command (the process's,
less the bots' own, timed around each of their steps) and the cyclic collector's share.

`--seed` also seeds every random number the service draws here (deals, match ids, tokens): this process's
`os.urandom` is replaced by a seeded generator (a bench switch, never in a service). Two runs of one tree then
do exactly the same work, so under `valgrind --tool=cachegrind --cache-sim=no` the difference between a run of
`--matches 80` and one of `--matches 20`, divided by the difference in commands, is the instructions a
command costs: steady to a fraction of a percent, where CPU time is not (README, "Speed").

`--database-url` runs the durable path instead: the service's SQL storage with its log writer in a process of
its own, as `tablehall serve` has it (a scratch database: the bench claims its partitions). It also prints the
writer's CPU a command. The commits' timing then orders the matches' draws, so the commands differ a little
from run to run: compare the CPU a command, not instruction totals.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.json_format import ParseDict
from rich.console import Console
from rich.table import Table

from gateway.service import MatchesService
from gateway.workers import Router
from protos.tablehall.v1 import actions_pb2, matches_pb2
from tablehall.bench_served import cpu_seconds
from tablehall.bench_service import OPTIONS, PLAYERS
from tablehall.client import TYPED
from tablehall.typed_bots import IN_PROGRESS, choose_typed
from workers import event_loop
from workers.clocks_first import clocks_first
from workers.host import MatchHost
from workers.settings import MEMORY, fork_log_writers, open_storage
from workers.typed_views import typed_of
from workers.typed_views.legal import action_message


@dataclass
class Counts:
    """What the measured part did: commands answered, the bots' CPU, the collector's passes and time."""

    commands: int = 0
    bots_s: float = 0.0
    writer_s: float = 0.0
    """The log writer process's CPU (durable runs)."""
    collections: int = 0
    collector_s: float = 0.0
    _began: float = field(default=0.0, repr=False)

    def on_collection(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.collections += 1
            self.collector_s += time.perf_counter() - self._began


class Refused(Exception):
    """The service ended a bot's call with an error (a bench bot only sends what its view allows)."""


class SeatContext:
    """What `Play` and `CreateMatch` use of a gRPC call's context: the caller's bearer token, and `abort`."""

    def __init__(self, token: str) -> None:
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata

    async def abort(self, code: Any, details: str = "", _trailing: Any = ()) -> None:
        raise Refused(f"{getattr(code, 'name', code)}: {details}")


@contextmanager
def seeded_randomness(seed: int) -> Iterator[None]:
    """This process's `os.urandom` (and so `secrets`) drawn from `random.Random(seed)` while it lasts."""
    source = random.Random(seed)
    saved = os.urandom, random._urandom  # type: ignore[attr-defined]  # secrets' SystemRandom reads this one
    seeded = source.randbytes
    os.urandom = random._urandom = seeded  # type: ignore[attr-defined]
    try:
        yield
    finally:
        os.urandom, random._urandom = saved  # type: ignore[attr-defined]


async def _seat(service: MatchesService, match_id: str, token: str, rng: random.Random, counts: Counts) -> None:
    """One bot on one `Play` stream, as `bench service`'s bots: it acts on its newest view, once its last
    command is answered, and closes its side once the match is over."""
    sends: asyncio.Queue[matches_pb2.PlayRequest | None] = asyncio.Queue()

    async def requests() -> AsyncIterator[matches_pb2.PlayRequest]:
        yield matches_pb2.PlayRequest(match_id=match_id, views=TYPED, answer_on_update=True)
        while (request := await sends.get()) is not None:
            yield request

    seen = acted = ref = 0
    view: Any = None
    waiting = False
    async for sent in service.Play(requests(), SeatContext(token)):
        began = time.process_time()
        event = matches_pb2.PlayEvent.FromString(sent)
        results = [event.answered] if event.HasField("answered") else []
        if event.HasField("update"):
            if event.update.seq > seen:
                seen, view = event.update.seq, typed_of(event.update)
        else:
            results.append(event.result)
        for result in results:
            waiting = False
            if not result.HasField("error"):
                acted = result.seq
                counts.commands += 1
        if not waiting and seen >= acted and view is not None:
            action = choose_typed(view, rng)
            if action is not None:
                ref, waiting = ref + 1, True
                typed = action if isinstance(action, actions_pb2.Action) else action_message(action)
                sends.put_nowait(matches_pb2.PlayRequest(ref=ref, action=typed))
            elif view.status != IN_PROGRESS:
                sends.put_nowait(None)
        counts.bots_s += time.process_time() - began


async def _match(service: MatchesService, game: str, rng: random.Random, counts: Counts) -> None:
    request = matches_pb2.CreateMatchRequest(game=game, players=PLAYERS[game])  # as `bench service` makes them
    ParseDict(OPTIONS[game], request.options)
    created = await service.CreateMatch(request, SeatContext(""))
    seats = [_seat(service, created.match_id, s.token, random.Random(rng.random()), counts) for s in created.seats]
    await asyncio.gather(*seats)


async def _played(game: str, matches: int, concurrency: int, seed: int, url: str) -> tuple[Counts, float]:
    """A warm-up of `concurrency` matches, then `matches` measured: the counts and the process's CPU seconds."""
    clocks_first()  # the collector and switch interval as in every serving process
    storage = await open_storage(url)
    host = MatchHost(storage, hop=False)
    try:
        await host.start()
        return await _measured(MatchesService(Router([host])), game, matches, concurrency, seed)
    finally:
        await host.stop()
        await storage.close()


async def _measured(
    service: MatchesService, game: str, matches: int, concurrency: int, seed: int
) -> tuple[Counts, float]:
    rng = random.Random(seed)
    gate = asyncio.Semaphore(concurrency)
    counts = Counts()

    async def gated() -> None:
        async with gate:
            await _match(service, game, rng, counts)

    await asyncio.gather(*(gated() for _ in range(concurrency)))
    counts = Counts()
    gc.callbacks.append(counts.on_collection)
    began, writer_began = time.process_time(), _writer_cpu_s()
    try:
        await asyncio.gather(*(gated() for _ in range(matches)))
    finally:
        gc.callbacks.remove(counts.on_collection)
    counts.writer_s = _writer_cpu_s() - writer_began
    return counts, time.process_time() - began


def _writer_cpu_s() -> float:
    """The CPU seconds of this process's log writer (0 without one)."""
    return cpu_seconds(os.getpid()).get("log writer", 0.0)


def bench_path(game: str, matches: int, concurrency: int, seed: int, url: str = MEMORY) -> int:
    fork_log_writers(url)  # as `tablehall serve` does: the log's writer a process, forked while we have one thread
    try:
        with seeded_randomness(seed):
            counts, cpu_s = event_loop.run(_played(game, matches, concurrency, seed, url))
    except Refused as refused:
        print(f"tablehall bench path: the service refused a bot's call ({refused})", file=sys.stderr)
        return 1
    served = max(1, counts.commands)
    storage = "in memory" if url == MEMORY else "durable, its log writer a process"
    title = f"tablehall bench path: {matches} {game} matches, {concurrency} at a time, one process ({storage}), no gRPC"
    table = Table(title=title)
    columns = ["commands", "service CPU µs a command", "collector µs a command", "collections", "bots µs a command"]
    row = [
        f"{counts.commands:,}",
        f"{(cpu_s - counts.bots_s) / served * 1e6:.1f}",
        f"{counts.collector_s / served * 1e6:.1f}",
        f"{counts.collections:,}",
        f"{counts.bots_s / served * 1e6:.1f}",
    ]
    if url != MEMORY:
        columns.append("log writer µs a command")
        row.append(f"{counts.writer_s / served * 1e6:.1f}")
    for column in columns:
        table.add_column(column, justify="right")
    table.add_row(*row)
    Console().print(table)
    return 0
