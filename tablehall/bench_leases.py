"""`tablehall bench roll` and `tablehall bench failover`: what players notice when workers change under load.

Both start real processes (tablehall/fleet.py): workers on leases and a gateway over one database.

- roll: bots keep matches in flight while every worker is replaced, one at a time (the new one serving
  before the old one drains). Printed: voids, acknowledged commands missing from the log, commands refused
  as unavailable, each new worker's start to serving, and the client-visible pause of a hand-off: the
  calls the gateway held because their partition was moving, from their arrival to their answer (its
  `tablehall_gateway_held_seconds`, p50 and p99 read as bucket bounds), beside every command's latency.
  (Timing commands at the client and picking those in flight at the moment a partition moved would pick
  the long ones first: a command covers an instant in proportion to its length.)
- failover: `--matches` Spectacular Bid matches with their clocks running on three workers; one is killed
  with -9; a command for each of its matches is sent at once and again until served. Printed: the share
  of its matches that go on (not voided worker_down), the time from the kill to each one's first served
  command (p50/p99/max), and acknowledged commands missing from the log.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.table import Table

from tablehall.bench_service import quantile
from tablehall.bots import choose
from tablehall.client import Client, CreatedMatch, SeatClient, TablehallError
from tablehall.fleet import Fleet, owners_of
from workers.games.catalog import SPECTACULAR_BID
from workers.partitions import partition_of
from workers.sql.engine import make_engine

SB = SPECTACULAR_BID
UNLIMITED = {"TABLEHALL_RATE_PER_S": "1000000", "TABLEHALL_BURST": "1000000", "TABLEHALL_MAX_WATCHES": "1000000"}
"""The bench's clients stand for many players on few connections: the per-client limits are lifted."""


@dataclass
class Sent:
    """One command: when it left and came back (monotonic), its match, and how it ended."""

    match_id: str
    started: float
    ended: float
    seq: int = 0
    action: dict[str, Any] = field(default_factory=dict)
    seat: int = 0
    refused: str = ""


@dataclass
class Traffic:
    sent: list[Sent] = field(default_factory=list)
    matches: list[CreatedMatch] = field(default_factory=list)
    unavailable: Counter[str] = field(default_factory=Counter)
    """Commands refused as unavailable, by message (what a player would have seen)."""


async def _seat(seat: SeatClient, rng: random.Random, traffic: Traffic, think_s: float) -> None:
    """One bot: act on each new view while there is something to do; every command timed."""
    seq, view = await seat.view()
    while view.get("status") == "in_progress":
        action = choose(view, rng, greedy=False)
        if action is not None:
            await asyncio.sleep(think_s)
            started = time.monotonic()
            try:
                seq, view = await seat.act(action)
                traffic.sent.append(Sent(seat.match_id, started, time.monotonic(), seq, action, view["seat"]))
                continue
            except TablehallError as error:
                traffic.sent.append(Sent(seat.match_id, started, time.monotonic(), refused=error.code))
                if error.status is grpc.StatusCode.UNAVAILABLE:
                    traffic.unavailable[str(error)[:100]] += 1
        seq, view = await _next_view(seat, seq)


async def _next_view(seat: SeatClient, after: int) -> tuple[int, dict[str, Any]]:
    """The next change of the match after `after` (the other seat's move, a deal, a deadline)."""
    async for update in seat.watch(after_seq=after):
        return update
    return await seat.view()  # the stream ended: the match is over


async def _load(address: str, inflight: int, stop: asyncio.Event, traffic: Traffic, options: dict[str, Any]) -> None:
    async def lane(n: int) -> None:
        rng = random.Random(n)
        async with Client(address) as client:
            while not stop.is_set():
                created = await client.create_match(SB, ["A", "B"], options)
                traffic.matches.append(created)
                seats = [client.seat(created.match_id, t) for t in created.tokens]
                await asyncio.gather(*(_seat(s, random.Random(rng.random()), traffic, 0.005) for s in seats))

    await asyncio.gather(*(lane(n) for n in range(inflight)))


@dataclass
class Held:
    """The gateway's `tablehall_gateway_held_seconds`: calls it held while their partition moved."""

    count: int
    buckets: list[tuple[float, float]]
    """(upper bound in seconds, calls at most that long), ascending."""

    def quantile(self, q: float) -> float:
        """The smallest bucket bound holding `q` of the calls: the quantile is at most this."""
        return next((bound for bound, n in self.buckets if n >= q * self.count), float("inf"))

    def quantiles(self) -> str:
        if not self.count:
            return "-"
        return " / ".join(f"≤ {self.quantile(q) * 1000:.0f}" for q in (0.5, 0.99))


def held_calls(page: str) -> Held:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(page):
        if family.name == "tablehall_gateway_held_seconds":
            buckets = sorted((float(s.labels["le"]), s.value) for s in family.samples if s.name.endswith("_bucket"))
            count = next((int(s.value) for s in family.samples if s.name.endswith("_count")), 0)
            return Held(count, buckets)
    return Held(0, [])


def lost_and_voided(url: str, traffic: Traffic) -> tuple[int, int, dict[str, int]]:
    """(acknowledged commands missing from the logs, acknowledged in all, matches by status:void_reason)."""
    from sqlalchemy import select

    from workers.sql import models as m

    engine = make_engine(url)
    acked = [s for s in traffic.sent if not s.refused]
    ids = [c.match_id for c in traffic.matches]
    try:
        with engine.connect() as conn:
            logged = {
                (row.match_id, row.change, row.seat)
                for row in conn.execute(
                    select(m.events.c.match_id, m.events.c.change, m.events.c.seat).where(
                        m.events.c.kind == "command", m.events.c.match_id.in_(ids)
                    )
                )
            }
            statuses: dict[str, int] = defaultdict(int)
            for row in conn.execute(select(m.matches.c.status, m.matches.c.void_reason).where(m.matches.c.id.in_(ids))):
                statuses[f"{row.status}{':' + row.void_reason if row.void_reason else ''}"] += 1
    finally:
        engine.dispose()
    missing = sum(1 for s in acked if (s.match_id, s.seq, s.seat) not in logged)
    return missing, len(acked), dict(statuses)


def _database(url: str | None, folder: Path) -> str:
    if url:
        return url
    return f"sqlite:///{folder / 'bench.db'}"


def _prepare(url: str) -> None:
    from workers.sql.migrate import migrate

    migrate(url)


async def _roll(url: str, workers: int, inflight: int, console: Console, folder: Path) -> int:
    fleet = await Fleet(url, folder, UNLIMITED).start(workers)
    traffic, stop = Traffic(), asyncio.Event()
    try:
        load = asyncio.create_task(_load(fleet.address, inflight, stop, traffic, {}))
        while len([s for s in traffic.sent if not s.refused]) < inflight * 10:
            await asyncio.sleep(0.1)
        started = time.monotonic()
        starts = await fleet.roll()
        took = time.monotonic() - started
        stop.set()
        await asyncio.wait_for(load, 300)
        held = held_calls(fleet.gateway_metrics_text())
    finally:
        fleet.stop()
        await fleet.close()
    missing, acked, statuses = lost_and_voided(url, traffic)
    lat = [s.ended - s.started for s in traffic.sent]
    table = Table(title=f"bench roll: {workers} workers replaced one at a time under {inflight} matches in flight")
    table.add_column("what")
    table.add_column("figure", justify="right")
    table.add_row("roll took (s)", f"{took:.1f}")
    table.add_row("worker start to serving (s), each new worker", ", ".join(f"{s:.2f}" for s in starts))
    table.add_row("matches by status", ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    voids = sum(count for status, count in statuses.items() if status.startswith("voided"))
    table.add_row("voided", str(voids))
    table.add_row("acknowledged commands missing from the log", f"{missing} of {acked}")
    table.add_row("commands refused as unavailable", str(sum(traffic.unavailable.values())))
    for message, count in traffic.unavailable.most_common(3):
        table.add_row(f"  {message}", str(count))
    table.add_row("calls the gateway held while their partition moved", str(held.count))
    table.add_row("client-visible pause of a held call p50 / p99 (ms)", held.quantiles())
    table.add_row("every command: p50 / p99 / max (ms)", _ms(lat))
    console.print(table)
    return 0 if voids == 0 and missing == 0 else 1


async def _failover(url: str, matches: int, console: Console, folder: Path) -> int:
    fleet = await Fleet(url, folder, UNLIMITED).start(3)
    try:
        async with Client(fleet.address) as client:
            created = await _running(client, matches)
            table = await fleet.table()
            victim = max(fleet.workers, key=lambda r: owners_of(table).get(r.pid, 0))
            theirs = [c for c in created if str(victim.pid) in (table.lease(partition_of(c.match_id)) or _NO).owner]
            moves = {c.match_id: await _next_move(client, c) for c in theirs}
            await fleet.kill9(victim)
            killed = time.monotonic()
            served = await asyncio.gather(*(_until_served(client, c, moves[c.match_id], killed) for c in theirs))
            traffic = Traffic(sent=[s for s in served if s is not None], matches=theirs)
    finally:
        fleet.stop()
        await fleet.close()
    missing, acked, statuses = lost_and_voided(url, traffic)
    voided = statuses.get("voided:worker_down", 0)
    first = [s.ended - killed for s in traffic.sent if not s.refused]
    out = Table(title=f"bench failover: kill -9 of one worker of three, {matches} matches with running clocks")
    out.add_column("what")
    out.add_column("figure", justify="right")
    out.add_row("matches of the killed worker", str(len(theirs)))
    out.add_row("of them going on (not voided worker_down)", f"{len(theirs) - voided} ({_share(theirs, voided)})")
    out.add_row("kill to first served command p50 / p99 / max (ms)", _ms(first))
    out.add_row("acknowledged commands missing from the log", f"{missing} of {acked}")
    out.add_row("matches by status", ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    console.print(out)
    return 0 if missing == 0 else 1


class _NoLease:
    owner = ""


_NO = _NoLease()


async def _running(client: Client, count: int) -> list[CreatedMatch]:
    """`count` matches whose first decision's clock runs (both seats pressed Continue)."""
    gate = asyncio.Semaphore(32)

    async def one(n: int) -> CreatedMatch:
        async with gate:
            created = await client.create_match(SB, [f"a{n}", f"b{n}"], {"bank_s": 600, "delay_s": 0})
            for token in created.tokens:
                await client.seat(created.match_id, token).act({"do": "ready"})
            return created

    return list(await asyncio.gather(*(one(n) for n in range(count))))


async def _next_move(client: Client, created: CreatedMatch) -> tuple[SeatClient, dict[str, Any]]:
    for token in created.tokens:
        seat = client.seat(created.match_id, token)
        _, view = await seat.view()
        action = choose(view, random.Random(1), greedy=False)
        if action is not None:
            return seat, action
    raise RuntimeError(f"nobody can move in {created.match_id}")


async def _until_served(
    client: Client, created: CreatedMatch, move: tuple[SeatClient, dict[str, Any]], since: float
) -> Sent | None:
    """Send the move until it is served (UNAVAILABLE while the partition is taken over); None if voided."""
    seat, action = move
    while time.monotonic() - since < 60:
        try:
            seq, view = await seat.act(action)
            return Sent(created.match_id, since, time.monotonic(), seq, action, view["seat"])
        except TablehallError as error:
            if error.status is not grpc.StatusCode.UNAVAILABLE:
                return None  # the match ended (voided worker_down): the move is refused as illegal
        await asyncio.sleep(0.01)
    return None


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    return " / ".join(f"{q * 1000:.0f}" for q in (quantile(values, 0.5), quantile(values, 0.99), max(values)))


def _share(matches: list[Any], voided: int) -> str:
    return f"{100 * (len(matches) - voided) / max(1, len(matches)):.1f}%"


def bench_roll(workers: int, inflight: int, database_url: str | None) -> int:
    console = Console()
    folder = Path(tempfile.mkdtemp(prefix="tablehall-roll-"))
    url = _database(database_url, folder)
    _prepare(url)
    console.print(f"database {url}; each process's log in {folder}")
    return asyncio.run(_roll(url, workers, inflight, console, folder))


def bench_failover(matches: int, database_url: str | None) -> int:
    console = Console()
    folder = Path(tempfile.mkdtemp(prefix="tablehall-failover-"))
    url = _database(database_url, folder)
    _prepare(url)
    console.print(f"database {url}; each process's log in {folder}")
    return asyncio.run(_failover(url, matches, console, folder))
