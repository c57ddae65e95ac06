"""`tablehall bench log`: durable appends to the event log with group commit (and recovery's bulk load).

    tablehall bench log --database-url sqlite:////tmp/bench.db
    tablehall bench log --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench
    tablehall bench log --database-url ... --recovery 10000

`--matches` matches play at once, each appending one entry at a time and waiting for its commit (as a
match actor does); the figure is committed appends per second, and each append's wait for its commit.
`--busy-ms N` keeps the event loop busy meanwhile, N ms of Python a turn (as a saturated service's loop
is): the log's writer thread then waits for the interpreter each time its driver gave it up. It claims
partitions and writes test matches: point it at a scratch database, never at a live one.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from workers.clocks_first import clocks_first
from workers.games.catalog import FIVE_OH_ONE
from workers.sql.engine import database_url
from workers.sql.storage import SqlStorage
from workers.storage import LogEntry, MatchEntry, Progress, Snapshot

PARTITIONS = list(range(256))


def _entry(prefix: str, i: int, partition: int) -> MatchEntry:
    return MatchEntry(f"{prefix}-{i}", FIVE_OH_ONE, ("ann", "bob", "cid"), {}, (b"\0" * 32,) * 3, 0, 0, partition)


def _step(seq: int) -> LogEntry:
    return LogEntry(seq, seq, "command", seq % 3, {"play": "AS", "bid": 120, "pad": "x" * 40}, seq * 700)


async def _busy(turn_s: float, stop: asyncio.Event) -> None:
    """The event loop's own work, `turn_s` of Python between two yields, until `stop`."""
    while not stop.is_set():
        until = time.perf_counter() + turn_s
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


async def appends(url: str, matches: int, per_match: int, busy_ms: float = 0.0) -> None:
    s = await SqlStorage.open(url)
    epochs = await s.claim(f"bench-{uuid.uuid4().hex[:6]}", PARTITIONS)
    prefix = uuid.uuid4().hex[:8]
    entries = [_entry(prefix, i, i % 256) for i in range(matches)]
    await asyncio.gather(*(s.create(e, epochs[e.partition]) for e in entries))
    progress = Progress(deadline_unix_ms=int(time.time() * 1000) + 60_000, clock_running=True)

    waits: list[float] = []

    async def play(e: MatchEntry) -> None:
        for seq in range(1, per_match + 1):
            asked = time.perf_counter()
            await s.append(e.match_id, e.partition, epochs[e.partition], _step(seq), progress)
            waits.append(time.perf_counter() - asked)

    stop = asyncio.Event()
    busy = asyncio.create_task(_busy(busy_ms / 1000, stop)) if busy_ms > 0 else None
    batches, ops = s.stats.batches, s.stats.ops
    start = time.perf_counter()
    await asyncio.gather(*(play(e) for e in entries))
    elapsed = time.perf_counter() - start
    stop.set()
    if busy is not None:
        await busy
    n = matches * per_match
    batches, ops = s.stats.batches - batches, s.stats.ops - ops
    waits.sort()
    beside = f", beside a loop busy {busy_ms:g} ms a turn" if busy_ms > 0 else ""
    print(f"{s.engine.url.get_backend_name()}: {n} appends from {matches} concurrent matches in {elapsed:.2f} s"
          f" = {n / elapsed:,.0f} appends/s ({batches} commits, {ops / max(batches, 1):.1f} appends per commit)"
          f"; commit wait p50 {waits[n // 2] * 1000:.1f} ms, p99 {waits[int(n * 0.99)] * 1000:.1f} ms{beside}")
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


def bench_log(url: str | None, matches: int, per_match: int, recovered: int, busy_ms: float = 0.0) -> int:
    """Appends per second from `matches` concurrent matches (beside a loop busy `busy_ms` a turn); with
    `recovered` > 0, also the time of `unfinished()` over that many matches. `url` None:
    `TABLEHALL_DATABASE_URL` (or the default file)."""
    url = url or database_url()
    clocks_first()  # as a worker process is set up: threads hand over the interpreter every ms
    asyncio.run(appends(url, matches, per_match, busy_ms))
    if recovered:
        asyncio.run(recovery(url, recovered))
    return 0
