"""`tablehall bench log`: durable appends to the event log with group commit (and recovery's bulk load).

    tablehall bench log --database-url sqlite:////tmp/bench.db
    tablehall bench log --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench
    tablehall bench log --database-url ... --recovery 10000

`--matches` matches play at once, each appending one entry at a time and waiting for its commit (as a
match actor does); the figure is committed appends per second. It claims partitions and writes test
matches: point it at a scratch database, never at a live one.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from workers.games.catalog import FIVE_OH_ONE
from workers.sql.engine import database_url
from workers.sql.storage import SqlStorage
from workers.storage import LogEntry, MatchEntry, Progress, Snapshot

PARTITIONS = list(range(256))


def _entry(prefix: str, i: int, partition: int) -> MatchEntry:
    return MatchEntry(f"{prefix}-{i}", FIVE_OH_ONE, ("ann", "bob", "cid"), {}, (b"\0" * 32,) * 3, 0, 0, partition)


def _step(seq: int) -> LogEntry:
    return LogEntry(seq, seq, "command", seq % 3, {"play": "AS", "bid": 120, "pad": "x" * 40}, seq * 700)


async def appends(url: str, matches: int, per_match: int) -> None:
    s = await SqlStorage.open(url)
    epochs = await s.claim(f"bench-{uuid.uuid4().hex[:6]}", PARTITIONS)
    prefix = uuid.uuid4().hex[:8]
    entries = [_entry(prefix, i, i % 256) for i in range(matches)]
    await asyncio.gather(*(s.create(e, epochs[e.partition]) for e in entries))
    progress = Progress(deadline_unix_ms=int(time.time() * 1000) + 60_000, clock_running=True)

    async def play(e: MatchEntry) -> None:
        for seq in range(1, per_match + 1):
            await s.append(e.match_id, e.partition, epochs[e.partition], _step(seq), progress)

    batches, ops = s.stats.batches, s.stats.ops
    start = time.perf_counter()
    await asyncio.gather(*(play(e) for e in entries))
    elapsed = time.perf_counter() - start
    n = matches * per_match
    batches, ops = s.stats.batches - batches, s.stats.ops - ops
    print(f"{s.engine.url.get_backend_name()}: {n} appends from {matches} concurrent matches in {elapsed:.2f} s"
          f" = {n / elapsed:,.0f} appends/s ({batches} commits, {ops / max(batches, 1):.1f} appends per commit)")
    await s.close()


async def recovery(url: str, matches: int) -> None:
    s = await SqlStorage.open(url)
    mine = [p for p in PARTITIONS if p % 3 == 0]  # worker 0 of 3
    epochs = await s.claim(f"bench-{uuid.uuid4().hex[:6]}", mine)
    prefix = uuid.uuid4().hex[:8]
    entries = [_entry(prefix, i, mine[i % len(mine)]) for i in range(matches)]
    for chunk in range(0, matches, 2000):
        part = entries[chunk : chunk + 2000]
        await asyncio.gather(*(s.create(e, epochs[e.partition]) for e in part))
        for seq in range(1, 21):
            await asyncio.gather(*(s.append(e.match_id, e.partition, epochs[e.partition], _step(seq), Progress())
                                   for e in part))  # fmt: skip
        blob = bytes(4000)
        await asyncio.gather(*(s.snapshot(e.match_id, e.partition, epochs[e.partition], Snapshot(12, blob))
                               for e in part))  # fmt: skip
    start = time.perf_counter()
    found = await s.unfinished(mine)
    elapsed = time.perf_counter() - start
    print(f"{s.engine.url.get_backend_name()}: unfinished() loaded {len(found)} matches"
          f" (snapshot + 8 later events each) in {elapsed:.2f} s")
    await s.close()


def bench_log(url: str | None, matches: int, per_match: int, recovered: int) -> int:
    """Appends per second from `matches` concurrent matches; with `recovered` > 0, also the time of
    `unfinished()` over that many matches. `url` None: `TABLEHALL_DATABASE_URL` (or the default file)."""
    url = url or database_url()
    asyncio.run(appends(url, matches, per_match))
    if recovered:
        asyncio.run(recovery(url, recovered))
    return 0
