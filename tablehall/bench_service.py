"""`tablehall bench service`: bot-vs-bot matches through the gateway, with the ping baseline in the same run.

Unless `--address` is given it starts `tablehall serve` as a separate process, so that the service and
the load generator each have their own core. Every seat is a bot that watches its own stream and acts
when its view offers legal actions, as a real client does, reading the typed views (`tablehall.typed_bots`).
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tablehall.bench_commits import Waits
from tablehall.bench_connections import Spread, channels
from tablehall.bench_database import NAME as DATABASE
from tablehall.bench_database import DatabaseServer, uncounted
from tablehall.bench_loop import LoopCounters, LoopShare
from tablehall.bench_served import ServiceDidNotStart, cpu_seconds, service
from tablehall.client import Client, Result, SeatClient, ServiceUnreachable, TablehallError
from tablehall.typed_bots import IN_PROGRESS, choose_typed
from workers import event_loop
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, fewest_seats, names
from workers.settings import MEMORY

PLAYERS = {game: list("ABCD")[: fewest_seats(game)] for game in names()}
"""The seats' letters; each match is between players of its own (`players_of`)."""


def players_of(game: str, number: int, run: str, same: bool) -> list[str]:
    """The players of the bench's match `number`: their own, as a service's players are in one match at a time
    (a player's rating waits for their previous match's: ratings/holds.py `behind`), or with `same` the same
    players for every match, so that each rating waits for the one before it (the backlog's worst case)."""
    return PLAYERS[game] if same else [f"{seat}{run}-{number}" for seat in PLAYERS[game]]


DECISION_LIMIT_S = 30.0
"""501♠ has no resignation: the bench's 501♠ matches carry this decision limit, so a match it leaves (Ctrl-C,
an error) ends on time within it instead of staying in progress; its bots answer in milliseconds."""
OPTIONS: dict[str, dict[str, Any]] = {SPECTACULAR_BID: {}, FIVE_OH_ONE: {"decision_limit_s": DECISION_LIMIT_S}}
RETRIES = 3
"""A bot gives its match up after this many refusals in a row on one view, or this many dropped streams (one
refused for the connection's rate aside: it waits, `RATE_PAUSE_S`)."""
RATE_PAUSE_S = 0.5
"""A bot whose stream was refused for the connection's rate resumes after this at least, even if told sooner:
the retry-after is when the budget holds one request again, and a stream resumed then was refused again at
its next command (with a match asking more than the rate, 12,179 refusals in 130 s)."""
DROPPED = (TablehallError, grpc.aio.AioRpcError, asyncio.InvalidStateError)
"""What a broken or cancelled `Play` stream raises on reading or writing."""


@dataclass
class Tally:
    command_s: list[float] = field(default_factory=list)
    ping_s: list[float] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    """Refused commands by error code (`illegal_action`: the match had moved on — a deadline, another seat)."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Streams that broke or were cancelled, by why (each resumed after the last update seen)."""
    same_players: bool = False
    """Every match between the same players (`--same-players`)."""
    finished: int = 0
    resigned: int = 0
    """Matches the bench ended by resigning a seat (interrupted, or a bot gave up)."""
    left_to_limit: int = 0
    """501♠ matches left unfinished: they end on time within `DECISION_LIMIT_S`."""
    wall_s: float = 0.0
    idle_ping_s: list[float] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds spent during the load, per process of the service and by the load generator."""
    loop: LoopShare | None = None
    """The serving process's event-loop thread during the load (only for a service started here, on Linux)."""
    waits: Waits | None = None
    """Where the durable writes' waits went during the load (a durable service started here)."""

    def service_cpu_ms(self) -> float:
        """The service's CPU per command (every process but the load generator), in ms."""
        spent = sum(s for name, s in self.cpu_s.items() if name != "load generator")
        return spent * 1000 / len(self.command_s) if self.command_s else float("nan")


@dataclass(frozen=True, slots=True)
class Peer:
    """Figures of another service's harness (boardgame.io's), printed beside ours as ratios; None: not given."""

    moves_per_s: float | None = None
    p99_ms: float | None = None
    cpu_ms: float | None = None


class GaveUp(Exception):
    """A seat's bot cannot go on: refused again and again on one view, or its stream kept dropping."""


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def bot(seat: SeatClient, rng: random.Random, tally: Tally) -> None:
    """One seat on a `Play` session, choosing as `tablehall.bots` does from the view alone (a 501♠ bid is an
    amount in the legal range). A refused command is counted and the bot waits for a newer view; a dropped
    stream is counted and resumed after the last update seen. A stream refused for the connection's rate (a
    match alone at full speed can pass it) is not a failure: the bot resumes once the refusal's retry-after (and
    `RATE_PAUSE_S`) has passed, however often (resumed at once and counted as a failure, it was refused again
    until the bot gave up and left its match unfinished). Returns when the match is over."""
    seen, failures = 0, 0
    while True:
        try:
            seen = await _session(seat, rng, tally, seen)
            return
        except DROPPED as error:
            tally.dropped[_why(error)] += 1
            told = error.retry_after_s if isinstance(error, TablehallError) else None
            if told is not None:
                await asyncio.sleep(max(told, RATE_PAUSE_S))  # the connection's budget holds requests again by then
                continue
            failures += 1
            if failures > RETRIES:
                raise GaveUp(f"the stream of match {seat.match_id} kept dropping") from None


def _why(error: Exception) -> str:
    """A dropped stream's reason as the figures name it: the service's error code, else the gRPC status."""
    if isinstance(error, TablehallError):
        return error.code or error.status.name.lower()
    if isinstance(error, grpc.aio.AioRpcError):
        return str(error.code().name).lower()
    return type(error).__name__


async def _session(seat: SeatClient, rng: random.Random, tally: Tally, after: int) -> int:
    """Play on one stream from `after` until the match ends; the last seq seen."""
    session = await seat.session(after_seq=after)
    seen, acted, refusals = after, 0, 0
    view: Any = None
    sent_at: float | None = None
    try:
        async for event in session.events(typed=True):
            if isinstance(event, Result):
                if event.error is None:
                    tally.command_s.append(time.perf_counter() - (sent_at or 0.0))
                    acted, refusals = event.seq, 0
                else:
                    tally.refused[event.error.code or event.error.status.name] += 1
                    refusals += 1
                    if refusals > RETRIES:
                        raise GaveUp(f"match {seat.match_id}: refused {refusals} times ({event.error.line()})")
                sent_at = None
            elif event[0] > seen:
                (seen, view), refusals = event, 0
            action = choose_typed(view, rng) if sent_at is None and seen >= acted and view is not None else None
            if action is not None:
                sent_at = time.perf_counter()
                await session.send(action)
            elif sent_at is None and view is not None and view.status != IN_PROGRESS:
                return seen  # over, nothing unanswered: close our side (the server ends the stream at once)
        return seen
    finally:
        with contextlib.suppress(*DROPPED):
            await session.close()


async def one_match(client: Client, game: str, players: list[str], rng: random.Random, tally: Tally) -> None:
    """Bots play every seat; whatever stops them (Ctrl-C, a bot giving up), the match does not stay running."""
    creating = asyncio.ensure_future(client.create_match(game, players, OPTIONS[game]))
    try:
        created = await asyncio.shield(creating)
    except TablehallError as error:  # refused, cancelled, unavailable under load: counted, the bench goes on
        tally.refused[f"create: {error.code or error.status.name}"] += 1
        return
    except asyncio.CancelledError:  # Ctrl-C while the match was being made: it is made, so it is ended too
        with contextlib.suppress(TablehallError, TimeoutError):
            made = await asyncio.wait_for(creating, RESIGN_S)
            await _end(client.seat(made.match_id, made.tokens[0]), game, tally)
        raise
    seats = [client.seat(created.match_id, token) for token in created.tokens]
    ended = False
    try:
        await asyncio.gather(*(bot(seat, random.Random(rng.random()), tally) for seat in seats))
        ended = True
        tally.finished += 1
    except GaveUp:
        pass
    finally:
        if not ended:
            await _end(seats[0], game, tally)


async def _end(seat: SeatClient, game: str, tally: Tally) -> None:
    """End a match the bench leaves: Spectacular Bid resigns; 501♠ (no resignation) ends on its limit."""
    if game != SPECTACULAR_BID:
        tally.left_to_limit += 1
        return
    try:
        await asyncio.wait_for(seat.act({"do": "resign"}), RESIGN_S)
        tally.resigned += 1
    except (TablehallError, TimeoutError) as error:
        if not isinstance(error, TablehallError) or error.code != "illegal_action":  # illegal: already over
            tally.refused[getattr(error, "code", "") or "resign_failed"] += 1


async def pinger(client: Client, samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        try:
            await client.ping()
        except grpc.aio.AioRpcError:
            return  # the service is going away: the commands say what happened
        samples.append(time.perf_counter() - started)
        await asyncio.sleep(PING_EVERY_S)


PING_EVERY_S = 0.02
"""How often the probe pings during the load: 50 samples a second are plenty for a p99. A unary Ping costs the
service about 0.5 ms of CPU (1,341 pings took 0.64 s of an idle serve's CPU), so a probe every 5 ms took
several percent of a core from the commands it measures."""
RESIGN_S = 5.0
"""How long a resignation on the way out may take (the service may be the thing that failed)."""
async def run(
    tally: Tally,
    address: str | None,
    matches: int,
    concurrency: int,
    game: str,
    seed: int,
    workers: int,
    database_url: str,
    same_players: bool = False,
) -> None:
    """Play `matches` matches, `concurrency` at a time, counting into `tally`. The matches run in one task
    group: an error stops the others, and each ends its match on the way out (`one_match`)."""
    rng = random.Random(seed)
    tally.same_players = same_players
    run_tag = f"{time.time_ns() % 36**4:x}"  # this run's players are its own (a kept database has earlier runs')
    async with service(address, workers, database_url) as served, contextlib.AsyncExitStack() as stack:
        where, pid = served.address, served.pid
        pool = [await stack.enter_async_context(Client(where)) for _ in range(channels(concurrency))]
        client = pool[0]
        await client.reachable()
        database = await asyncio.to_thread(DatabaseServer.of, database_url)
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

            spread = Spread(len(pool))

            async def gated(number: int) -> None:
                players = players_of(game, number, run_tag, same_players)
                async with gate:
                    connection = spread.take()
                    try:
                        await one_match(pool[connection], game, players, rng, tally)
                    finally:
                        spread.give_back(connection)
                progress.advance(task)

            pings = asyncio.create_task(pinger(client, tally.ping_s, stop))
            durable = database_url != MEMORY and served.metrics
            waits = await asyncio.to_thread(Waits.read, served.metrics) if durable else None
            started, cpu, loop = time.perf_counter(), cpu_seconds(pid), LoopCounters.read(pid)
            database_s = database.cpu_s() if database else 0.0
            try:
                async with asyncio.TaskGroup() as playing:
                    for number in range(matches):
                        playing.create_task(gated(number))
            finally:
                stop.set()
                await pings
            tally.wall_s = time.perf_counter() - started
            tally.cpu_s = {name: spent - cpu.get(name, 0.0) for name, spent in cpu_seconds(pid).items()}
            if database is not None:
                tally.cpu_s[DATABASE] = database.cpu_s() - database_s
            tally.loop = LoopShare.over(loop, LoopCounters.read(pid), tally.wall_s, len(tally.command_s))
            after = await asyncio.to_thread(Waits.read, served.metrics) if waits is not None else None
            tally.waits = after.since(waits) if after is not None and waits is not None else None


def bench_service(
    address: str | None, matches: int, concurrency: int, game: str, seed: int, workers: int, database_url: str,
    peer: Peer | None = None, same_players: bool = False,
) -> int:  # fmt: skip
    """Exit 0 with the figures; 130 on Ctrl-C, 1 when the service failed, 2 when it could not start — each
    with one line saying how the bench's unfinished matches were ended."""
    tally = Tally()
    try:
        event_loop.run(run(tally, address, matches, concurrency, game, seed, workers, database_url, same_players))
    except KeyboardInterrupt:
        print(f"tablehall bench service: interrupted; {ended(tally)}", file=sys.stderr)
        return 130
    except Exception as error:
        cause = _first(error)
        if isinstance(cause, ServiceDidNotStart | ServiceUnreachable):
            print(f"tablehall bench service: the service did not start: {cause}", file=sys.stderr)
            return 2
        said = cause.line() if isinstance(cause, TablehallError) else f"{type(cause).__name__}: {cause}"
        print(f"tablehall bench service: stopped: {said}; {ended(tally)}", file=sys.stderr)
        return 1
    report(tally, address, matches, concurrency, game, workers, database_url)
    if peer is not None:
        compare(tally, peer)
    return 0


def _first(error: BaseException) -> BaseException:
    """The first error inside exception groups (the matches run in a task group)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def ended(tally: Tally) -> str:
    """How the matches ended, in words."""
    words = f"{tally.finished} matches played to the end, {tally.resigned} ended by resigning"
    if tally.left_to_limit:
        words += f", {tally.left_to_limit} 501♠ matches left to end on their {DECISION_LIMIT_S:g} s decision limit"
    return words


def report(
    tally: Tally, address: str | None, matches: int, concurrency: int, game: str, workers: int, database_url: str
) -> None:
    out = Console() if sys.stdout.isatty() else Console(width=200)  # piped, the figures keep their width
    wall = tally.wall_s
    where = address or f"{workers or 'no'} worker processes, storage {database_url}"
    where += "; every match between the same players" if tally.same_players else "; each match's players its own"
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
    out.print(table)
    idle50, idle99 = quantile(tally.idle_ping_s, 0.5), quantile(tally.idle_ping_s, 0.99)
    refused = ", ".join(f"{count} {code}" for code, count in tally.refused.most_common()) or "none"
    dropped = ", ".join(f"{count} {why}" for why, count in tally.dropped.most_common()) or "none"
    out.print(
        f"wall {wall:.1f} s; {ended(tally)}; calls refused: {refused} (illegal_action: the match had moved on; "
        "create: a match not created, counted and left out); "
        f"streams dropped and resumed: {dropped}; "
        f"ping before the load: p50 {idle50 * 1000:.2f} ms, p99 {idle99 * 1000:.2f} ms; "
        f"Python {platform.python_version()} at {sys.executable} (its build matters: README, \"Which Python\")"
    )
    if tally.command_s:
        per = {name: spent * 1000 / len(tally.command_s) for name, spent in sorted(tally.cpu_s.items())}
        out.print(
            "CPU per command during the load: "
            + ", ".join(f"{name} {ms:.2f} ms" for name, ms in per.items())
            + f"; in all {sum(per.values()):.2f} ms{uncounted(database_url, tally.cpu_s)}"
        )
    if tally.loop is not None:
        out.print(tally.loop.words())
    said = tally.waits.words() if tally.waits is not None else None
    if said is not None:
        out.print(said, soft_wrap=True)  # one line, however long: for grep


def compare(tally: Tally, peer: Peer) -> None:
    """Our figures beside the peer's, as ratios (ours ÷ theirs)."""
    wall = tally.wall_s
    ours = {
        "moves/s": (len(tally.command_s) / wall if wall else float("nan"), peer.moves_per_s),
        "command p99 ms": (quantile(tally.command_s, 0.99) * 1000, peer.p99_ms),
        "server CPU ms per move": (tally.service_cpu_ms(), peer.cpu_ms),
    }
    table = Table(title="against the peer harness (boardgame.io's figures as given)")
    for column in ("figure", "tablehall", "peer", "ratio"):
        table.add_column(column, justify="right")
    for name, (mine, theirs) in ours.items():
        if theirs is not None:
            ratio = f"{mine / theirs:.2f}×" if theirs else "—"
            table.add_row(name, f"{mine:,.2f}", f"{theirs:,.2f}", ratio)
    (Console() if sys.stdout.isatty() else Console(width=200)).print(table)
