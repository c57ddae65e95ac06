"""The clocks come first on a worker (issue 16, items 4 and 7): a bulk creation or start of tables gives the
event loop back every few tables, so the timers of the worker's other matches are not held for the whole
chunk; the tables it made are frozen out of the cyclic collector's full passes. And `tablehall bench
clocks` runs at a tiny size and prints its figures (no thresholds: the figures are printed, not judged)."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import re
import subprocess
import sys

from protos.tablehall.v1 import host_pb2
from workers import tables
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
