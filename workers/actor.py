"""One match, one actor: its commands run one at a time, its deadline timer fires through the engine,
and every change is published as a numbered snapshot that each watcher turns into its own view."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from protos.tablehall.v1 import matches_pb2
from workers.commitments import Commitment
from workers.errors import NotFinished, NotYourSeat, Unauthenticated
from workers.games.engine import JSON, Game, Millis, Seat
from workers.games.errors import MalformedAction
from workers.games.records import Match
from workers.storage import LogEntry, MatchEntry, Storage

_CSPRNG = secrets.SystemRandom()


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


class MatchActor:
    def __init__(
        self, entry: MatchEntry, game: Game[Any, Any, Any], storage: Storage, clock: Callable[[], int] = unix_ms
    ) -> None:
        self.entry = entry
        self.game = game
        self.storage = storage
        self.clock = clock
        self.match = Match.start(game, entry.players, entry.options, Seat(entry.lot))
        self.snapshots: list[Match] = []
        self.views: dict[tuple[int, Seat | None], str] = {}
        self.commitments: list[Commitment] = []
        self.lock = asyncio.Lock()
        self.watchers: set[asyncio.Event] = set()
        self.timer: asyncio.TimerHandle | None = None
        self.firing: set[asyncio.Task[None]] = set()
        self._deal(Millis(0))
        self._publish()

    @property
    def seq(self) -> int:
        return len(self.snapshots)

    @property
    def match_id(self) -> str:
        return self.entry.match_id

    def seat_of(self, token_sha256: bytes) -> Seat:
        if not token_sha256:
            raise Unauthenticated("this needs a seat token: send it as 'authorization: Bearer <token>'")
        for seat, known in enumerate(self.entry.token_sha256):
            if secrets.compare_digest(known, token_sha256):
                return Seat(seat)
        raise Unauthenticated(f"that token is not a seat of match {self.match_id}")

    async def command(
        self, token_sha256: bytes, claimed: int | None, action: dict[str, JSON], arrival_unix_ms: int
    ) -> tuple[int, str]:
        """Apply one seat's command at its stamped arrival; nothing changes unless it is legal."""
        seat = self.seat_of(token_sha256)
        if claimed is not None and claimed != seat:
            raise NotYourSeat(f"this token acts for seat {seat}, not seat {claimed}")
        parsed = self.game.parse_action(action)
        async with self.lock:
            # a command stamped before the last change is counted at that change (one actor, in order)
            now = Millis(max(self.match.now, arrival_unix_ms - self.entry.created_unix_ms))
            self.match, _ = self.match.apply(seat, parsed, now)
            self.storage.append(self.match_id, LogEntry(self.seq + 1, seat, action, now))
            self._deal(now)
            self._publish()
            self.arm()
            return self.seq, self.view_json(seat, self.seq)

    def view_json(self, seat: Seat | None, seq: int) -> str:
        """A seat's view at `seq` as sent on the wire; the newest are cached (the reply and the stream share)."""
        key = (seq, seat)
        cached = self.views.get(key)
        if cached is None:
            view = self.game.view(self.snapshots[seq - 1].state, seat)
            cached = json.dumps(view.to_json(), separators=(",", ":"))
            if seq == self.seq:
                self.views[key] = cached
        return cached

    def update(self, seat: Seat | None, seq: int) -> matches_pb2.Update:
        snapshot = self.snapshots[seq - 1]
        published = self.commitments[: len(snapshot.deals)]
        return matches_pb2.Update(
            match_id=self.match_id,
            seq=seq,
            seat=seat,
            view_json=self.view_json(seat, seq),
            commitments=[matches_pb2.Commitment(deal=i, sha256=c.sha256) for i, c in enumerate(published)],
            over=snapshot.over,
        )

    async def watch(self, token_sha256: bytes, after_seq: int) -> AsyncIterator[matches_pb2.Update]:
        """The caller's view after every change past `after_seq`; ends after the match ends."""
        seat = self.seat_of(token_sha256) if token_sha256 else None
        if after_seq > self.seq:
            raise MalformedAction(f"after_seq {after_seq} is ahead of the match, which is at {self.seq}")
        wake = asyncio.Event()
        self.watchers.add(wake)
        try:
            next_seq = after_seq + 1
            while True:
                while next_seq <= self.seq:
                    yield self.update(seat, next_seq)
                    next_seq += 1
                if self.snapshots[-1].over:
                    return
                wake.clear()
                if next_seq > self.seq:
                    await wake.wait()
        finally:
            self.watchers.discard(wake)

    def record(self) -> dict[str, JSON]:
        if not self.match.over:
            raise NotFinished(f"match {self.match_id} is still being played: its record is shown when it ends")
        record = self.match.record()
        record["match_id"] = self.match_id
        record["commitments"] = [
            {"deal": i, "salt": c.salt.hex(), "sha256": c.sha256} for i, c in enumerate(self.commitments)
        ]
        return record

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        for wake in self.watchers:
            wake.set()

    # --- inside the actor ------------------------------------------------------------------------

    def _deal(self, now: Millis) -> None:
        """Chance's turn: shuffle with the CSPRNG, commit to the deal, apply it."""
        while self.game.needs_deal(self.match.state):
            order = list(range(self.game.deck_size(self.match.state)))
            _CSPRNG.shuffle(order)
            deal = self.game.deal_from(self.match.state, order)
            dealt = self.game.deal_json(deal)
            commitment = Commitment.of(dealt)
            self.match, _ = self.match.deal(deal, now)
            self.commitments.append(commitment)
            self.storage.append(
                self.match_id,
                LogEntry(self.seq + 1, None, {"deal": dealt, "salt": commitment.salt.hex()}, now),
            )

    def _publish(self) -> None:
        self.views.clear()
        self.snapshots.append(self.match)
        for wake in self.watchers:
            wake.set()

    def arm(self) -> None:
        """The deadline timer follows `next_deadline` after every change."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        deadline = self.game.next_deadline(self.match.state)
        if deadline is None or self.match.over:
            return
        delay = (self.entry.created_unix_ms + deadline - self.clock() + 1) / 1000
        self.timer = asyncio.get_running_loop().call_later(max(0.0, delay), self._on_timer)

    def _on_timer(self) -> None:
        task = asyncio.ensure_future(self._fire())
        self.firing.add(task)
        task.add_done_callback(self.firing.discard)

    async def _fire(self) -> None:
        async with self.lock:
            now = Millis(max(self.match.now, self.clock() - self.entry.created_unix_ms))
            match, events = self.match.advance(now)
            if events:
                self.match = match
                self._deal(now)
                self._publish()
            self.arm()
