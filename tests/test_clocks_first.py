"""The clocks come first on a worker (issue 16, items 4 and 7): a bulk creation or start of tables gives the
event loop back every few tables, so the timers of the worker's other matches are not held for the whole
chunk; the tables it made are frozen out of the cyclic collector's full passes, and a clocks process
(`workers.clocks_first`) never starts a full pass by itself. The bench's loop-stall meter counts a stretch
without a turn. And `tablehall bench clocks` runs at a tiny size and prints its figures (no thresholds:
the figures are printed, not judged)."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
import time

from protos.tablehall.v1 import host_pb2
from tablehall.loop_stalls import LoopStalls
from workers import tables
from workers.clocks_first import SWITCH_S, clocks_first
from workers.host import MatchHost

TABLES = 250
BOUND_S = 300.0
"""A hang fails the bench's test (three phases of 16 s each, and a pool process started on a busy machine)."""


def requests(host: MatchHost, start_unix_ms: int) -> host_pb2.HostCreateTablesRequest:
    return host_pb2.HostCreateTablesRequest(tables=[
        host_pb2.HostCreateRequest(
            match_id=f"bulk-{n}", game="spectacular-bid", players=["A", "B"], options_json=json.dumps({}),
            token_sha256=[hashlib.sha256(f"{n}-{s}".encode()).digest() for s in "AB"], created_unix_ms=start_unix_ms,
        )
        for n in range(TABLES)
    ])  # fmt: skip


async def turns_during(work: asyncio.Task[object]) -> int:
    """How many turns of the event loop other tasks had while `work` ran."""
    turns = 0
    while not work.done():
        await asyncio.sleep(0)
        turns += 1
    await work
    return turns


def test_creating_and_starting_a_chunk_of_tables_yields_to_the_loop_every_slice() -> None:
    async def body() -> tuple[int, int, int]:
        host = MatchHost()
        await host.start()
        try:
            frozen = gc.get_freeze_count()
            later = host.clock() + 3_600_000  # held: StartTables starts them
            created = await turns_during(asyncio.ensure_future(host.create_tables(requests(host, later))))
            grew = gc.get_freeze_count() - frozen
            start = host_pb2.HostTablesRequest(match_ids=[f"bulk-{n}" for n in range(TABLES)])
            started = await turns_during(asyncio.ensure_future(host.start_tables(start)))
            assert all(not host.actors[f"bulk-{n}"].scheduled for n in range(TABLES))
            return created, started, grew
        finally:
            host.close()

    created, started, grew = asyncio.run(body())
    assert created >= 2 * TABLES // tables.SLICE and started >= TABLES // tables.SLICE, (created, started)
    assert grew > 0


def test_bench_clocks_prints_lateness_for_each_phase() -> None:
    args = ["bench", "clocks", "--clocks", "20", "--window", "1", "--load", "2", "--swiss", "8"]
    ran = subprocess.run([sys.executable, "-m", "tablehall.cli", *args], capture_output=True, text=True,
                         timeout=BOUND_S, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr[-3000:]
    phases = r"│\s+(idle|load \(2 bot matches\)|swiss \(8 players, the pool\))\s+│\s+[\d.]+ s\s+│\s+(\d+)\s+│"
    rows = {m.group(1): m.group(2) for m in re.finditer(phases, ran.stdout)}
    assert set(rows) == {"idle", "load (2 bot matches)", "swiss (8 players, the pool)"}, ran.stdout
    voids = [int(v) for v in re.findall(r"│\s+(\d+)\s+│\s+[\d,]*\s+│[^│\n]*│\n", ran.stdout)]
    assert len(voids) == 3, ran.stdout
    for (phase, timers), voided in zip(rows.items(), voids, strict=True):
        assert int(timers) == 2 * 20 - voided, (phase, ran.stdout)  # a clock start and a flag each, but a void
    assert "pairing took" in ran.stdout
    assert len(re.findall(r"│\s+[\d.]+ / [\d.]+ ms\s+│\s+[\d.]+ ms \(\d+\)\s+│", ran.stdout)) == 3, ran.stdout  # stalls
    played = re.search(r"load \(2 bot matches\).*│\s+([\d,]+)\s+│\s+\d+ refused\s+│", ran.stdout)
    assert played and int(played.group(1).replace(",", "")) > 0, ran.stdout  # the bots' commands came over gRPC
    assert re.search(r"cyclic garbage: .* found [\d,]+ unreachable objects", ran.stdout), ran.stdout


class Passes:
    """The cyclic collector's passes while counting, by generation."""

    def __init__(self) -> None:
        self.by_generation = [0, 0, 0]

    def __call__(self, phase: str, about: dict[str, int]) -> None:
        if phase == "start":
            self.by_generation[about["generation"]] += 1


def passes_creating_matches(count: int) -> Passes:
    """Create and deal `count` matches one by one on a fresh host (no bulk creation: that freezes what it
    made), the oldest generation emptied first (frozen) so that a full pass is due as soon as the
    collector's own rule allows."""

    async def body() -> None:
        host = MatchHost()
        await host.start()
        try:
            for table in list(requests(host, host.clock()).tables) * (count // TABLES):
                table.match_id = f"one-{secrets.token_hex(6)}"
                await host.create(table)
        finally:
            host.close()

    gc.freeze()
    gc.collect()
    passes = Passes()
    gc.callbacks.append(passes)
    try:
        asyncio.run(body())
    finally:
        gc.callbacks.remove(passes)
    return passes


def test_a_clocks_process_runs_young_collections_but_never_a_full_one_by_itself() -> None:
    saved_threshold, saved_interval = gc.get_threshold(), sys.getswitchinterval()
    try:
        gc.set_threshold(700, 10, 10)  # CPython's defaults
        by_default = passes_creating_matches(16 * TABLES)
        clocks_first()
        ours = passes_creating_matches(16 * TABLES)
        assert sys.getswitchinterval() == SWITCH_S
    finally:
        gc.set_threshold(*saved_threshold)
        sys.setswitchinterval(saved_interval)
    assert by_default.by_generation[2] > 0, by_default.by_generation  # the same work, set up as CPython is
    assert ours.by_generation[2] == 0 and ours.by_generation[1] > 0, ours.by_generation


def test_loop_stalls_covers_a_stretch_without_a_turn_and_times_a_full_pass() -> None:
    def stretch() -> float:
        """Work that holds the loop (no await), as long as it takes: its own CPU time, in ms."""
        started = time.thread_time_ns()
        sum(n * n for n in range(300_000))
        gc.collect()
        return (time.thread_time_ns() - started) / 1e6

    async def body() -> tuple[LoopStalls, float]:
        stalls = LoopStalls()
        stalls.start()
        spent = stretch()
        while not stalls.gaps_ms:
            await asyncio.sleep(0)  # the loop turns: its first beat, due during the stretch, counts it
        stalls.stop()
        return stalls, spent

    stalls, spent = asyncio.run(body())
    passes = len(stalls.collections_ms[2])
    assert max(stalls.gaps_ms) >= spent, (max(stalls.gaps_ms), spent)  # the beat after it counts all of it
    assert max(wall for wall, _ in stalls.waits) >= spent  # and its wall-clock gap holds it
    assert stalls.collections_ms[2] and min(stalls.collections_ms[2]) <= spent
    gc.collect()
    assert len(stalls.collections_ms[2]) == passes, "stopped: it no longer counts the collector's passes"
