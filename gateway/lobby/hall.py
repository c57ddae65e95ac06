"""The Lobby's loop in a gateway: pair the queue (when this process holds the lease), have the tables
made through the Router (the normal create path: the match's worker), and push each seat to the
`Seated` streams of this process.

One beat: take or extend the lease; as the holder, read the queue, pair each queue (pure, at the
injected `now`), claim each table (queue rows out, table in, one transaction) and create it; then
create any table still `creating` (a crash between claim and create, a worker that was away); then
deliver the seats of the players listening here, read from the database, so a seat made by another
gateway's loop reaches them too (within a beat), and a reconnecting player gets the seat still pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine

from gateway.lobby import bot_seats, challenges, leader, queue
from gateway.lobby import metrics as lm
from gateway.lobby.bot_seats import BotSeats
from gateway.lobby.pairing import Widening, pair
from gateway.lobby.queue import LobbyTable, PlacedSeat
from gateway.workers import Router
from protos.tablehall.v1 import host_pb2

log = logging.getLogger("tablehall.lobby")


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


CHALLENGE_S = 600.0
"""How long an open challenge waits for takers (`TABLEHALL_LOBBY_CHALLENGE_S`) before it expires."""
CHALLENGE_RANGE_S = (60.0, 86_400.0)
"""The lifetimes a challenge may be given: a minute to a day (a setting outside is brought to the nearer end)."""


def challenge_ms(seconds: float) -> int:
    """A challenge lifetime in ms, within CHALLENGE_RANGE_S (a value outside is logged and brought inside)."""
    low, high = CHALLENGE_RANGE_S
    if not low <= seconds <= high:
        log.warning("TABLEHALL_LOBBY_CHALLENGE_S=%s is outside %s-%s s: using %s", seconds, low, high,
                    min(max(seconds, low), high))  # fmt: skip
    return int(min(max(seconds, low), high) * 1000)


@dataclass(frozen=True, slots=True)
class LobbySettings:
    """`TABLEHALL_LOBBY_GAP` (3.0 ordinal points at once), `TABLEHALL_LOBBY_WIDEN_PER_S` (0.5 more per
    second waited), `TABLEHALL_LOBBY_BEAT_S` (0.25 s between beats), `TABLEHALL_LOBBY_LEASE_S` (2 s),
    `TABLEHALL_LOBBY_PRESENCE_S` (15: a player whose Seated stream has been closed this long is not
    paired; 20 times as long and their place is dropped), `TABLEHALL_LOBBY_CHALLENGE_S` (CHALLENGE_S, 600:
    an open challenge's lifetime, 60 s to a day)."""

    widening: Widening = Widening()
    beat_s: float = 0.25
    lease_ms: int = 2000
    presence_ms: int = 15_000
    challenge_ms: int = int(CHALLENGE_S * 1000)

    @staticmethod
    def from_env() -> LobbySettings:
        env = os.environ.get
        widening = Widening(float(env("TABLEHALL_LOBBY_GAP", "3.0")), float(env("TABLEHALL_LOBBY_WIDEN_PER_S", "0.5")))
        return LobbySettings(
            widening,
            float(env("TABLEHALL_LOBBY_BEAT_S", "0.25")),
            int(float(env("TABLEHALL_LOBBY_LEASE_S", "2")) * 1000),
            int(float(env("TABLEHALL_LOBBY_PRESENCE_S", "15")) * 1000),
            challenge_ms(float(env("TABLEHALL_LOBBY_CHALLENGE_S", str(CHALLENGE_S)))),
        )


@dataclass(eq=False)
class Listener:
    """One Seated stream: its player and the seats it was already given."""

    player_id: int
    seats: asyncio.Queue[PlacedSeat] = field(default_factory=asyncio.Queue)
    given: set[str] = field(default_factory=set)

    def give(self, seat: PlacedSeat) -> None:
        if seat.match_id not in self.given:
            self.given.add(seat.match_id)
            self.seats.put_nowait(seat)


class LobbyHall:
    def __init__(
        self,
        engine: Engine,
        router: Router,
        settings: LobbySettings | None = None,
        clock: Callable[[], int] = wall_ms,
    ) -> None:
        self.engine = engine
        self.router = router
        self.settings = settings or LobbySettings.from_env()
        self.clock = clock
        self.owner = leader.owner_name()
        self.leading = False
        self.lease_until = 0
        """Unix ms until which this loop holds the pairing lease (0: it does not)."""
        self.listeners: set[Listener] = set()
        self.wake = asyncio.Event()
        self.bots = BotSeats(router)
        """The practice bots' seats, played while this hall leads (gateway/lobby/bot_seats.py)."""

    # --- the beat ----------------------------------------------------------------------------------

    async def tick(self) -> list[str]:
        """One beat; the match ids of the tables made (by this loop) in it."""
        now = self.clock()
        lease_ms = self.settings.lease_ms
        if leader.renewal_due(self.lease_until, now, lease_ms):
            self.lease_until = await asyncio.to_thread(leader.hold, self.engine, self.owner, now, lease_ms)
        self.leading = self.lease_until > now
        if self.listeners:
            present = sorted({listener.player_id for listener in self.listeners})
            await asyncio.to_thread(queue.seen, self.engine, present, now)
        made: list[str] = []
        if self.leading:
            made = await self._lead(now)
        else:
            lm.clear()
            await self.bots.stop()
        await self.deliver()
        return made

    async def _lead(self, now: int) -> list[str]:
        """The leader's steps, each only where the beat's one read (`queue.activity`) says it can find anything."""
        found = await asyncio.to_thread(queue.activity, self.engine)
        made: list[str] = []
        if found.queued:
            await asyncio.to_thread(queue.drop_absent, self.engine, now - 20 * self.settings.presence_ms)
        if found.challenges:
            await asyncio.to_thread(challenges.expire, self.engine, now - self.settings.challenge_ms)
        if found.queued:
            made = await asyncio.to_thread(self._pair, now)
        if found.creating or made:
            await self.create(await asyncio.to_thread(queue.creating, self.engine))
        lm.queue_state(await asyncio.to_thread(queue.queued, self.engine) if found.queued else [], now)
        if found.playing or made:
            self.bots.keep(await asyncio.to_thread(bot_seats.bot_seats, self.engine))
        return made

    def _pair(self, now: int) -> list[str]:
        made = []
        for q, entries in queue.waiting(self.engine, now - self.settings.presence_ms).items():
            tickets = {w.player_id: ticket for w, ticket in entries}
            for table in pair([w for w, _ in entries], queue.table_sizes(q.game), now, self.settings.widening):
                match_id = queue.claim(self.engine, q, table, tickets, now)
                if match_id is None:
                    continue
                made.append(match_id)
                lm.PAIRINGS[(q.game, "queue")].inc()
                lm.GAP[q.game].observe(table.gap)
                for w in table.players:
                    lm.WAIT[q.game].observe(max(0, now - w.joined_ms) / 1000)
        return made

    async def create(self, tables: list[LobbyTable]) -> None:
        """Have each table's match made by its worker (idempotent per match id), then mark it ready."""
        for table in tables:
            request = host_pb2.HostCreateRequest(
                match_id=table.match_id,
                game=table.queue.game,
                players=list(table.names),
                options_json=table.queue.options,
                token_sha256=list(table.key_hashes),
                created_unix_ms=time.time_ns() // 1_000_000,
            )
            try:
                await self.router.owner(table.match_id).create(request)
            except Exception:
                log.warning("lobby: table %s not created yet; the next beat tries again", table.match_id, exc_info=True)
                continue
            await asyncio.to_thread(queue.mark_ready, self.engine, table.match_id)

    async def deliver(self) -> None:
        """Push the ready seats of the players listening here (each stream gets each seat once)."""
        if not self.listeners:
            return
        by_player: dict[int, list[Listener]] = {}
        for listener in self.listeners:
            by_player.setdefault(listener.player_id, []).append(listener)
        ids = sorted(by_player)
        for start in range(0, len(ids), 500):
            found = await asyncio.to_thread(queue.seats_of, self.engine, ids[start : start + 500])
            for player_id, seat in found:
                for listener in by_player.get(player_id, ()):
                    listener.give(seat)

    async def run(self) -> None:
        """Beat until cancelled; a join or a full challenge wakes it early."""
        try:
            while True:
                try:
                    await self.tick()
                except Exception:
                    log.exception("lobby: a beat failed; the next one retries")
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), self.settings.beat_s)
        finally:
            lm.clear()
            await self.bots.stop()
            self.leading, self.lease_until = False, 0
            with contextlib.suppress(Exception):
                await asyncio.to_thread(leader.release, self.engine, self.owner)

    # --- listeners ---------------------------------------------------------------------------------

    def listen(self, player_id: int) -> Listener:
        listener = Listener(player_id)
        self.listeners.add(listener)
        return listener

    def forget(self, listener: Listener) -> None:
        self.listeners.discard(listener)
