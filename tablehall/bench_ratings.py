"""`tablehall bench ratings` (rating updates per second through a real Celery worker on Redis) and
`tablehall bench sweep` (one sweep over N stored matches). Point them at a scratch database."""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable
from typing import cast

from sqlalchemy import Engine, select

from ratings import rating
from ratings.settings import redis_url
from ratings.sweep import Due, sweep_once
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID
from workers.sql import models as m
from workers.sql.migrate import engine_for


def _finished_template(url: str) -> str:
    """One real finished match (greedy bots through a match host, every step logged), to clone."""
    import hashlib

    from protos.tablehall.v1 import host_pb2
    from tablehall.bots import choose
    from workers.actor import unix_ms
    from workers.games.engine import Seat
    from workers.host import MatchHost
    from workers.sql import SqlStorage

    async def play() -> str:
        storage = await SqlStorage.open(url)
        host = MatchHost(storage)
        await host.start()
        match_id = secrets.token_hex(8)
        tokens = [hashlib.sha256(f"{match_id}/{k}".encode()).digest() for k in (0, 1)]
        await host.create(host_pb2.HostCreateRequest(
            match_id=match_id, game=SPECTACULAR_BID, players=["t0", "t1"], token_sha256=tokens,
            options_json=json.dumps({"start_points": 20}), created_unix_ms=unix_ms()))  # fmt: skip
        actor, rng = host.actors[match_id], random.Random(1)
        while not actor.match.over:
            for seat in (0, 1):
                action = choose(actor.game.view(actor.match.state, Seat(seat)).to_json(), rng, greedy=True)
                if action is not None:
                    await actor.command(tokens[seat], None, action, unix_ms())
                    break
            else:
                await asyncio.sleep(0.005)
        host.close()
        await storage.close()
        return match_id

    return asyncio.run(play())


def _clone(engine: Engine, template: str, count: int) -> list[str]:
    """`count` copies of a finished match, each between two players of its own."""
    t, s, ev, pl = m.matches, m.seats, m.events, m.players
    with engine.begin() as conn:
        match = dict(conn.execute(select(t).where(t.c.id == template)).mappings().one())
        seats = [dict(r) for r in conn.execute(select(s).where(s.c.match_id == template)).mappings()]
        events = [dict(r) for r in conn.execute(select(ev).where(ev.c.match_id == template)).mappings()]
        ids = [secrets.token_hex(8) for _ in range(count)]
        names = [f"bench-{i}-{k}-{secrets.token_hex(3)}" for i in range(count) for k in range(2)]
        conn.execute(pl.insert(), [{"name": n} for n in names])
        named = conn.execute(select(pl.c.name, pl.c.id).where(pl.c.name.in_(names)))
        pid: dict[str, int] = dict(cast("Iterable[tuple[str, int]]", named.all()))
        conn.execute(t.insert(), [{**match, "id": i} for i in ids])
        conn.execute(s.insert(), [
            {**seat, "match_id": i, "player_id": pid[names[2 * n + seat["seat"]]]}
            for n, i in enumerate(ids) for seat in seats
        ])  # fmt: skip
        conn.execute(ev.insert(), [{**e, "match_id": i} for i in ids for e in events])
    return ids


def bench_ratings(url: str, matches: int, concurrency: int) -> int:
    engine = engine_for(url)
    ids = _clone(engine, _finished_template(url), matches)
    env = {**os.environ, "TABLEHALL_DATABASE_URL": url, "TABLEHALL_REDIS_URL": redis_url()}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ratings", "worker", "-c", str(concurrency), "-l", "WARNING",
         "--without-mingle", "--without-gossip", "-n", f"bench-{secrets.token_hex(3)}@%h"],
        env=env,
    )  # fmt: skip
    try:
        from celery import Celery

        client = Celery(broker=redis_url())
        before = rating.count_rated(engine)
        client.send_task("ratings.rate", args=[ids[0]])  # warm-up: the worker is up and connected
        while rating.count_rated(engine) == before:
            time.sleep(0.05)
        start = time.perf_counter()
        for match_id in ids[1:]:
            client.send_task("ratings.rate", args=[match_id])
        while rating.count_rated(engine) < before + len(ids):
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
    finally:
        worker.terminate()
        worker.wait(30)
    n = len(ids) - 1
    print(json.dumps({"backend": engine.dialect.name, "rated": n, "concurrency": concurrency,
                      "seconds": round(elapsed, 3), "ratings_per_s": round(n / elapsed, 1)}))  # fmt: skip
    return 0


def _seed_matches(engine: Engine, total: int, overdue: int) -> None:
    """`total` match rows like a long-running service: most finished or voided, a few thousand in
    progress with deadlines ahead, `overdue` whose deadline passed long ago."""
    now = time.time_ns() // 1_000_000
    rng = random.Random(1)
    t = m.matches
    with engine.begin() as conn:
        rows: list[dict[str, object]] = []
        for i in range(total):
            kind = "overdue" if i < overdue else "live" if i < overdue + 5000 else "done"
            status = "in_progress" if kind != "done" else rng.choice(["finished"] * 9 + ["voided"])
            ahead = now + rng.randrange(60_000, 200_000)
            deadline = now - 60_000 if kind == "overdue" else ahead if kind == "live" else None
            created = now - rng.randrange(0, 80_000) if kind != "done" else now - 86_400_000
            rows.append({
                "id": f"{secrets.token_hex(6)}{i:04x}"[-16:], "game": FIVE_OH_ONE if i % 3 else SPECTACULAR_BID,
                "options": {}, "created_unix_ms": created,
                "lot": 0, "partition": i % 256, "status": status, "void_reason": None, "deadline_unix_ms": deadline,
                "clock_running": deadline is not None, "updated_unix_ms": now,
            })  # fmt: skip
            if len(rows) == 10_000:
                conn.execute(t.insert(), rows)
                rows = []
        if rows:
            conn.execute(t.insert(), rows)


def bench_sweep(url: str, matches: int, overdue: int) -> int:
    engine = engine_for(url)
    _seed_matches(engine, matches, overdue)
    settled: list[str] = []

    async def owner_answers(item: Due) -> bool:  # the owners are alive: the sweep's own cost only
        settled.append(item.match_id)
        return True

    async def sweeps() -> list[float]:
        return [(await sweep_once(engine, owner_answers)).seconds for _ in range(5)]

    times = asyncio.run(sweeps())
    print(json.dumps({"backend": engine.dialect.name, "stored_matches": matches, "overdue": overdue,
                      "found_per_sweep": len(settled) // 5, "sweep_s": [round(x, 4) for x in times]}))  # fmt: skip
    return 0
