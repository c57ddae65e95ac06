"""`tablehall bench clocks`: how late match timers fire on one worker with N running Spectacular Bid clocks.

One match host (the worker's own code, in this process, in-memory log) gets `--clocks` matches whose
deadlines are spread over a window: each match's Continue pause ends at a random instant of the window
(its clocks start: a timer), then its bank runs out a window later (a flag: the second timer). Every timer's
lateness — the instant its deadline was settled, after the match's mailbox, minus its deadline — is read
from the host's timer path (`workers.metrics.timer_lateness`, the `tablehall_timer_lateness_seconds`
histogram's feed), in whole milliseconds (the host's clock). Phases, each with fresh clocks:

- `idle`: the clocks alone;
- `load` (`--load M`): bots play M matches at a time on the same host, each acting as soon as its view
  allows, from a process of their own through the worker's gRPC service, as a gateway sends commands
  (`tablehall.clock_load`);
- `swiss` (`--swiss P`): a P-player Swiss round 1 is paired the way the director pairs it
  (`gateway.tournaments.pairing`, a process pool) while the clocks run.

A timer later than the tolerance voids its match `timer_late` (SB-11): those are counted too.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import logging
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from gateway.tournaments import pairing, rounds
from gateway.tournaments.rounds import History, Settings
from protos.tablehall.v1 import host_pb2
from tablehall import clock_load
from tablehall.loop_stalls import LoopStalls
from workers import event_loop, metrics, tables
from workers.clocks_first import clocks_first
from workers.games.catalog import SPECTACULAR_BID
from workers.host import MatchHost
from workers.service import start_worker_server
from workers.settings import tolerance_ms
from workers.voids import VoidReason

GAME = SPECTACULAR_BID
READY_S = 5.0
"""The shortest Continue pause the game allows: the window of a table's clock start begins this long after
its creation."""
MIN_BANK_S = 10.0
"""The shortest bank the game allows. The bank is the window (at least this): every clock flags a window after
it started, so once the last clock started all of them run, and each flag falls in a second window."""
CHUNK = 250
"""Tables per `CreateTables` request, as the gateway sends them."""


@dataclass
class Phase:
    name: str
    late_ms: list[float] = field(default_factory=list)
    created_at: int = 0
    """How many of `late_ms` were measured while the clocks were still being created."""
    voided_late: int = 0
    commands: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0
    swiss_s: float | None = None
    create_s: float = 0.0
    stalls: LoopStalls = field(default_factory=LoopStalls)
    """The loop's gaps between turns (CPU ms); `created_beats` of them came while the clocks were created."""
    created_beats: int = 0


def _token() -> tuple[str, bytes]:
    token = secrets.token_urlsafe(16)
    return token, hashlib.sha256(token.encode()).digest()


async def _create_clocks(host: MatchHost, count: int, window_s: float, rng: random.Random) -> list[str]:
    """`count` matches with no player acting: each one's Continue pause ends at a random instant of the window
    after its own creation (creating 10,000 takes seconds: the deadlines spread over that too)."""
    ids = []
    for first in range(0, count, CHUNK):
        now = host.clock()
        requests = []
        for number in range(first, min(count, first + CHUNK)):
            if number % tables.SLICE == 0:
                await asyncio.sleep(0)  # the gateway builds these in its own process: here, between timers
            options = {"ready_timeout_s": round(READY_S + rng.uniform(0.0, window_s), 3),
                       "bank_s": max(MIN_BANK_S, window_s), "delay_s": 0}  # fmt: skip
            match_id = f"clock-{secrets.token_hex(6)}-{number}"
            requests.append(host_pb2.HostCreateRequest(
                match_id=match_id, game=GAME, players=["A", "B"], options_json=json.dumps(options),
                token_sha256=[_token()[1], _token()[1]], created_unix_ms=now,
            ))  # fmt: skip
            ids.append(match_id)
        await host.create_tables(host_pb2.HostCreateTablesRequest(tables=requests))
    return ids


async def _load(address: str, matches: int, seed: int, phase: Phase, stop: asyncio.Event) -> None:
    tally = await clock_load.load(address, matches, seed, stop)
    phase.commands, phase.refused = tally.commands, tally.refused


async def _swiss(players: int, phase: Phase, in_thread: bool) -> None:
    """Round 1 of a `players`-player Swiss, paired as the director pairs it (a process pool)."""
    names = tuple(f"P{n:05d}" for n in range(players))
    settings = Settings(GAME, "swiss", 10, "replay", names)
    started = time.perf_counter()
    if in_thread:  # how it was paired before: a thread of this process, holding the GIL the clocks need
        await asyncio.to_thread(rounds.plan, settings, History(), 1)
    else:
        await pairing.plan(settings, History(), 1)
    phase.swiss_s = time.perf_counter() - started


async def _phase(
    host: MatchHost, name: str, clocks: int, window_s: float, rng: random.Random,
    beside: Callable[[Phase, asyncio.Event], Coroutine[Any, Any, None]] | None = None,
) -> Phase:  # fmt: skip
    """Fresh clocks; the work `beside` them runs until every one of their timers has fired."""
    phase = Phase(name)
    taps = metrics.LATENESS_TAPS
    tap: Callable[[str, float], None] = lambda game, late_s: phase.late_ms.append(late_s * 1000)  # noqa: E731
    started = time.perf_counter()
    taps.append(tap)
    phase.stalls.start()
    ids = await _create_clocks(host, clocks, window_s, rng)
    phase.create_s = time.perf_counter() - started
    phase.created_at = len(phase.late_ms)
    phase.created_beats = len(phase.stalls.gaps_ms)
    stop = asyncio.Event()
    work = asyncio.create_task(beside(phase, stop)) if beside is not None else None
    try:
        running = 0  # the clocks before this one are over (a match once over stays over)
        while running < len(ids):
            while running < len(ids) and host.actors[ids[running]].match.over:
                running += 1
            await asyncio.sleep(0.25)
    finally:
        stop.set()
        phase.stalls.stop()
        taps.remove(tap)
        if work is not None:
            await work
    phase.wall_s = time.perf_counter() - started
    phase.voided_late = sum(1 for m in ids if host.actors.pop(m).match.void_reason == VoidReason.TIMER_LATE)
    return phase


def _full_pass() -> tuple[float, int]:
    """What one full pass of the cyclic collector over everything (frozen too) takes and finds after the phases:
    the cyclic garbage the worker's setup (`workers.clocks_first`) leaves to it."""
    gc.unfreeze()
    started = time.thread_time_ns()
    found = gc.collect()
    return (time.thread_time_ns() - started) / 1e6, found


async def run(
    clocks: int, load: int, swiss: int, window_s: float, seed: int, in_thread: bool
) -> tuple[list[Phase], tuple[float, int]]:
    rng = random.Random(seed)
    logging.getLogger("tablehall.worker").setLevel(logging.ERROR)  # a void is counted in the table, not logged
    clocks_first()  # as a worker process is set up
    host = MatchHost(tolerance_ms=tolerance_ms())
    await host.start()
    server, port = await start_worker_server(host, "127.0.0.1:0")  # the load's bots call it as a gateway would
    try:
        phases = [await _phase(host, "idle", clocks, window_s, rng)]
        if load:
            address = f"127.0.0.1:{port}"
            phases.append(await _phase(host, f"load ({load} bot matches)", clocks, window_s, rng,
                                       lambda phase, stop: _load(address, load, seed, phase, stop)))  # fmt: skip
        if swiss:
            where = "a thread" if in_thread else "the pool"
            phases.append(await _phase(host, f"swiss ({swiss} players, {where})", clocks, window_s, rng,
                                       lambda phase, _: _swiss(swiss, phase, in_thread)))  # fmt: skip
        return phases, _full_pass()
    finally:
        await server.stop(grace=None)
        host.close()
        pairing.shutdown()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def bench_clocks(clocks: int, load: int, swiss: int, window_s: float, seed: int, in_thread: bool = False) -> int:
    if clocks < 1 or load < 0 or swiss < 0 or window_s <= 0:
        print("tablehall bench clocks: --clocks ≥ 1, --load ≥ 0, --swiss ≥ 0, --window > 0", flush=True)
        return 2
    try:
        phases, full_pass = event_loop.serve(run(clocks, load, swiss, window_s, seed, in_thread))  # as a worker runs
    except KeyboardInterrupt:
        return 130
    except clock_load.BotsEnded as error:
        print(f"tablehall bench clocks: {error}", flush=True)
        return 1
    report(phases, clocks, window_s, full_pass)
    return 0


def report(phases: list[Phase], clocks: int, window_s: float, full_pass: tuple[float, int]) -> None:
    table = Table(title=f"tablehall bench clocks: {clocks} Spectacular Bid clocks on one worker, "
                        f"deadlines spread over {window_s:g} s (timer lateness, whole ms)")  # fmt: skip
    columns = ("phase", "created in", "timers", "p50", "p99", "max", "p99 once created", "loop stall p99 / max",
               "full GC max", "longest wait (CPU in it)", "timer_late voids", "commands/s", "beside")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    for p in phases:
        refused = sum(p.refused.values())
        beside = f"{refused} refused" if p.commands or refused else ""
        if p.swiss_s is not None:
            beside = f"pairing took {p.swiss_s:.1f} s"
        late = p.late_ms
        table.add_row(
            p.name, f"{p.create_s:.1f} s", str(len(late)), f"{quantile(late, 0.5):.0f} ms",
            f"{quantile(late, 0.99):.0f} ms", f"{max(late, default=float('nan')):.0f} ms",
            f"{quantile(late[p.created_at :], 0.99):.0f} ms", stalls(p), full_gc(p), wait(p), str(p.voided_late),
            f"{p.commands / p.wall_s:,.0f}" if p.commands else "", beside,
        )  # fmt: skip
    Console(width=240).print(table)
    print("loop stall: the event loop's gaps between turns once the clocks were created, in CPU ms of its thread "
          "(what its own work delays a timer by; wall-clock lateness adds the wait for a core). full GC: the longest "
          "pass of the cyclic collector over the oldest generation (CPU ms; the passes counted). longest wait: the "
          "longest wall-clock gap between two turns, with the CPU the whole process spent in it (little CPU: the "
          "process waited for a core that other processes held).",
          flush=True)  # fmt: skip
    print(f"cyclic garbage: a full pass over everything after the phases took {full_pass[0]:.0f} ms (CPU) and found "
          f"{full_pass[1]:,} unreachable objects (what the worker's collector setup leaves to an explicit pass)",
          flush=True)  # fmt: skip


def stalls(phase: Phase) -> str:
    gaps = phase.stalls.gaps_ms[phase.created_beats :]
    return f"{quantile(gaps, 0.99):.1f} / {max(gaps, default=float('nan')):.1f} ms"


def wait(phase: Phase) -> str:
    """The longest wall-clock gap between two turns of the loop once created, and the process's CPU in it."""
    wall, cpu = max(phase.stalls.waits[phase.created_beats :], default=(float("nan"), float("nan")))
    return f"{wall:.0f} ms ({cpu:.1f} ms)"


def full_gc(phase: Phase) -> str:
    passes = phase.stalls.collections_ms[2]
    return f"{max(passes, default=0.0):.1f} ms ({len(passes)})"
