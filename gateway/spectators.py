"""Delayed spectators: a spectator of a tournament table with a delay sees each change only once it is that
old (the end of the match included); seats are never delayed.

The delay lives here, in the gateway: one follower per watched table reads the table's spectator updates
from its worker (one watch, whatever the number of spectators) and keeps them in a time-ordered buffer, each
stamped with the gateway's clock when it arrived. A spectator's Watch gets each buffered update once
`arrival + delay` has passed; a spectator's GetView gets the newest update that old. The arrival is the age
reference, never earlier than the change itself, so nothing is ever shown early: a gateway that starts to
follow a table in the middle takes everything up to then as just arrived (spectators then wait one whole
delay for their first view). Followers stop when nobody has used them for the delay plus LINGER_MS.

A delayed table's record (GetRecord) is the public's once the match's end is as old as the delay: the end
is the match's origin plus the record's `end_t`, both on its worker's clock. The table's seats and the
tournament's organizer have it at once.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from protos.tablehall.v1 import matches_pb2
from workers.errors import SpectatorDelay

LINGER_MS = 60_000
"""How long an unused follower is kept beyond its delay (a GetView soon after sees the same buffer)."""

Source = Callable[[], AsyncIterator[matches_pb2.Update]]
"""The table's spectator updates from its worker, from the first change on."""


@dataclass(frozen=True, slots=True)
class Arrived:
    at_ms: int
    update: matches_pb2.Update


class DelayedTable:
    """One table's spectator updates in arrival order, each with the gateway clock's reading on arrival."""

    def __init__(self, delay_ms: int, clock: Callable[[], int], source: Source) -> None:
        self.delay_ms = delay_ms
        self.clock = clock
        self.arrived: list[Arrived] = []
        self.ended = False
        self.error: Exception | None = None
        self.grew = asyncio.Event()
        self.retimed = asyncio.Event()
        self.watchers = 0
        self.used_ms = clock()
        self.task = asyncio.create_task(self._follow(source))

    async def _follow(self, source: Source) -> None:
        try:
            async for update in source():
                self.arrived.append(Arrived(self.clock(), update))
                self.grew.set()
            self.ended = True
        except Exception as error:  # handed to every spectator (UNAVAILABLE: they watch again, after_seq)
            self.error = error
        self.grew.set()

    def shown(self, now_ms: int) -> list[Arrived]:
        """What is old enough to show at `now_ms` (arrivals are in clock order)."""
        cut = bisect.bisect_right([a.at_ms for a in self.arrived], now_ms - self.delay_ms)
        return self.arrived[:cut]

    def view(self) -> matches_pb2.Update:
        """The newest change old enough to show."""
        self.used_ms = self.clock()
        shown = self.shown(self.used_ms)
        if not shown:
            if self.error is not None:
                raise self.error
            raise SpectatorDelay(
                f"spectators see this table {self.delay_ms // 1000} s late and nothing of it is that old yet: "
                "Watch it to get each change when it is"
            )
        return shown[-1].update

    async def updates(self, after_seq: int) -> AsyncIterator[matches_pb2.Update]:
        """Each change after `after_seq`, once it is old enough; ends after the match's last one."""
        index = 0
        self.watchers += 1
        try:
            while True:
                while index < len(self.arrived) and self.arrived[index].update.seq <= after_seq:
                    index += 1
                if index < len(self.arrived):
                    entry = self.arrived[index]
                    await self._until(entry.at_ms + self.delay_ms)
                    self.used_ms = self.clock()
                    yield entry.update
                    if entry.update.over:
                        return
                    after_seq = entry.update.seq
                    continue
                if self.error is not None:
                    raise self.error
                if self.ended:
                    return
                self.grew.clear()
                await self.grew.wait()
        finally:
            self.watchers -= 1
            self.used_ms = self.clock()

    async def _until(self, due_ms: int) -> None:
        """Wait until the clock reads `due_ms`: a real clock's wait ends on time; an injected one is read
        again whenever it is moved (`Spectators.retime`)."""
        while (left := due_ms - self.clock()) > 0:
            self.retimed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.retimed.wait(), left / 1000)

    def idle(self, now_ms: int) -> bool:
        return self.watchers == 0 and now_ms - self.used_ms > self.delay_ms + LINGER_MS


class Delays(Protocol):
    """Where a gateway learns how late spectators see a match (gateway/tournaments/delays.py)."""

    async def __call__(self, match_id: str) -> int:
        """The match's delay in ms (0: live, the spectator's call goes straight to the worker)."""
        ...

    async def origin_ms(self, match_id: str) -> int:
        """The match's time origin (its start) on its worker's clock."""
        ...

    async def insider(self, match_id: str, token_sha256: bytes) -> bool:
        """Whether the bearer (its hash) is a seat of the match or its tournament's organizer."""
        ...


class Spectators:
    """The delayed tables this gateway follows, and the records they hold back."""

    def __init__(self, clock: Callable[[], int], delay_ms: Delays) -> None:
        self.clock = clock
        self.delay_ms = delay_ms
        self.tables: dict[str, DelayedTable] = {}

    async def table(self, match_id: str, source: Source) -> DelayedTable | None:
        """The delayed table followed for `match_id`, started now if needed; None for a live match."""
        self._forget_idle()
        found = self.tables.get(match_id)
        if found is not None and found.error is None:
            return found
        delay = await self.delay_ms(match_id)
        if delay <= 0:
            return None
        found = self.tables.get(match_id)  # another call may have started it meanwhile
        if found is None or found.error is not None:
            found = self.tables[match_id] = DelayedTable(delay, self.clock, source)
        return found

    async def record(self, match_id: str, token_sha256: bytes, record: matches_pb2.Record) -> matches_pb2.Record:
        """The ended match's record, if the caller may have it now: at once for a live match, a seat or the
        organizer; for anyone else once the end is as old as the delay (else FAILED_PRECONDITION)."""
        delay = await self.delay_ms(match_id)
        if delay <= 0:
            return record
        end_t = json.loads(record.record_json).get("end_t", 0)
        public_ms = await self.delay_ms.origin_ms(match_id) + round(float(end_t) * 1000) + delay
        if self.clock() >= public_ms or (token_sha256 and await self.delay_ms.insider(match_id, token_sha256)):
            return record
        at = datetime.fromtimestamp(public_ms / 1000, UTC).isoformat(timespec="seconds")
        raise SpectatorDelay(
            f"spectators see this table {delay // 1000} s late: its record is public from {at} (its seats and "
            "organizer have it now)"
        )

    def retime(self) -> None:
        """The clock was moved (tests inject one): every wait reads it again."""
        for table in self.tables.values():
            table.retimed.set()

    def _forget_idle(self) -> None:
        now = self.clock()
        for match_id in [m for m, t in self.tables.items() if t.idle(now)]:
            self.tables.pop(match_id).task.cancel()

    def close(self) -> None:
        for table in self.tables.values():
            table.task.cancel()
        self.tables.clear()


class Live:
    """No delay for any match (a gateway without tournaments)."""

    async def __call__(self, match_id: str) -> int:
        return 0

    async def origin_ms(self, match_id: str) -> int:
        return 0

    async def insider(self, match_id: str, token_sha256: bytes) -> bool:
        return False


live = Live()
