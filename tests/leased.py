"""Helpers for the lease suites: the fleet of real `tablehall worker` processes on leases and a gateway
(tablehall/fleet.py, as the benches run it), a bot load that keeps matches in flight and keeps every
acknowledgement, what the database says afterwards, and a TCP proxy that can cut a process off.

Every wait is bounded and waits for a condition (a line, an exit, the lease table settling).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablehall.bots import run_bot
from tablehall.client import Client, CreatedMatch
from tablehall.fleet import Fleet
from tests.durability import Db, normal
from tests.relay import pump
from workers.games.records import replay


@contextlib.asynccontextmanager
async def fleet(url: str, log_dir: Path, workers: int, **env: str) -> AsyncIterator[Fleet]:
    f = Fleet(url, log_dir, env)
    try:
        yield await f.start(workers)
    finally:
        f.stop()
        await f.close()


# --- a load of bot matches ----------------------------------------------------------------------------


class Dropped(logging.Handler):
    """Counts the times a bot's stream or command failed as unavailable (what a player would notice)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "dropped" in record.getMessage():
            self.count += 1
            self.lines.append(record.getMessage())


@dataclass
class Played:
    created: CreatedMatch
    acked: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    """(seq, seat, action) of every acknowledged command."""
    finals: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Load:
    """Keeps `inflight` Spectacular Bid matches played by bots until `stop()`, then lets them finish."""

    address: str
    inflight: int = 12
    options: dict[str, Any] = field(default_factory=lambda: {"start_points": 40})
    think_s: float = 0.01
    played: list[Played] = field(default_factory=list)
    dropped: Dropped = field(default_factory=Dropped)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._acks = asyncio.Event()

    async def __aenter__(self) -> Load:
        logging.getLogger("tablehall.bots").addHandler(self.dropped)
        logging.getLogger("tablehall.bots").setLevel(logging.INFO)
        self._tasks = [asyncio.create_task(self._lane(n)) for n in range(self.inflight)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        logging.getLogger("tablehall.bots").removeHandler(self.dropped)

    @property
    def acks(self) -> int:
        return sum(len(p.acked) for p in self.played)

    async def until_acks(self, count: int, within_s: float = 60.0) -> None:
        give_up = time.monotonic() + within_s
        while self.acks < count:
            assert not self.errors, self.errors
            assert time.monotonic() < give_up, f"only {self.acks} commands acknowledged"
            self._acks.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._acks.wait(), 1.0)

    async def finish(self, within_s: float = 120.0) -> None:
        """No new matches; wait for the ones in flight to end."""
        self._stop.set()
        done, pending = await asyncio.wait(self._tasks, timeout=within_s)
        stuck = [(p.created.match_id, len(p.acked)) for p in self.played if not p.finals]
        assert not pending, f"{len(pending)} lanes still playing after {within_s} s: {stuck}"
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    async def _lane(self, lane: int) -> None:
        """One player pair after another, on a connection of their own (as players are)."""
        async with Client(self.address) as client:
            await self._play(lane, client)

    async def _play(self, lane: int, client: Client) -> None:
        rng = random.Random(lane)
        while not self._stop.is_set():
            created = await client.create_match("spectacular-bid", ["Ana", "Bia"], self.options)
            played = Played(created)
            self.played.append(played)

            def report(seq: int, action: dict[str, Any], after: dict[str, Any], played: Played = played) -> None:
                played.acked.append((seq, after["seat"], action))
                self._acks.set()

            finals = await asyncio.gather(*(
                run_bot(self.address, created.match_id, token, greedy=False, seed=rng.randrange(1 << 30),
                        think_s=self.think_s, report=report, client=client, max_reconnects=60)
                for token in created.tokens
            ))  # fmt: skip
            played.finals = list(finals)


# --- what the database says afterwards --------------------------------------------------------------


def check_played(url: str, played: list[Played], records: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Every acknowledged command is in its match's log at its change, logs are numbered without gaps, and
    each record replays to the outcome the players saw. Returns the count of matches by final status."""
    db = Db(url)
    statuses: dict[str, int] = defaultdict(int)
    try:
        for p in played:
            match_id = p.created.match_id
            log = db.log(match_id)
            assert [e.seq for e in log] == list(range(1, len(log) + 1)), f"{match_id}: gaps in the log"
            by_change = {e.change: e for e in log if e.kind == "command"}
            for seq, seat, action in p.acked:
                entry = by_change.get(seq)
                assert entry is not None, f"{match_id}: acknowledged change {seq} ({action}) is not in the log"
                assert entry.seat == seat
                assert normal("spectacular-bid", entry.action) == normal("spectacular-bid", action)
            row = db.match_row(match_id)
            statuses[f"{row.status}:{row.void_reason or ''}"] += 1
            record = records.get(match_id)
            if record is not None:
                outcome = replay(record)
                assert outcome.error is None, outcome.to_json()
                final = p.finals[0] if p.finals else None
                if final is not None:
                    assert outcome.outcome["status"] == final["status"]
                    assert outcome.outcome.get("winner") == final.get("winner")
                    assert outcome.outcome.get("void_reason") == final.get("void_reason")
    finally:
        db.close()
    return dict(statuses)


async def records_of(address: str, played: list[Played]) -> dict[str, dict[str, Any]]:
    async with Client(address) as client:
        return {p.created.match_id: await client.record(p.created.match_id) for p in played if p.finals}


# --- a TCP proxy that can cut a connection off --------------------------------------------------------


class Cut:
    """A TCP proxy to `target` (host, port) that forwards until `cut()`: from then on it forwards nothing
    either way and accepts new connections without connecting them (packets are still acknowledged by
    the kernel, as a silent network path would: the client waits, it is not told). `heal()` resumes."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.server: asyncio.Server | None = None
        self.port = 0
        self.pumps: set[asyncio.Task[None]] = set()

    async def start(self) -> Cut:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    def cut(self) -> None:
        self.flowing.clear()

    def heal(self) -> None:
        self.flowing.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.flowing.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(pump(source, sink, self.flowing))
            self.pumps.add(task)
            task.add_done_callback(self.pumps.discard)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self.pumps):
            task.cancel()
