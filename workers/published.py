"""What a match actor shows: each published change as a numbered snapshot, each seat's view of it (the
newest cached, shared by a command's reply and the stream), the watchers woken by every change, and the
record once the match is over. Built from the match as the log holds it; the actor (workers/actor.py)
changes it, through its mailbox, and publishes each change here."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from protos.tablehall.v1 import matches_pb2
from workers.commitments import Commitment
from workers.errors import NotFinished, Unauthenticated, Unavailable
from workers.games.engine import JSON, Game, Seat
from workers.games.errors import MalformedAction
from workers.games.records import Match
from workers.replay_log import Position
from workers.storage import MatchEntry


class Published:
    def __init__(self, entry: MatchEntry, game: Game[Any, Any, Any], position: Position) -> None:
        self.entry = entry
        self.game = game
        self.position = position
        self.snapshots: list[Match] = [position.match] if position.change else []
        self.first_seq = max(1, position.change)
        """The first change in `snapshots` (a match restored from a snapshot starts there)."""
        self.views: dict[tuple[int, Seat | None], str] = {}
        self.watchers: set[asyncio.Event] = set()
        self.closed = False

    @property
    def match(self) -> Match:
        return self.position.match

    @property
    def seq(self) -> int:
        return self.position.change

    @property
    def match_id(self) -> str:
        return self.entry.match_id

    @property
    def commitments(self) -> list[Commitment]:
        return self.position.commitments

    def seat_of(self, token_sha256: bytes) -> Seat:
        if not token_sha256:
            raise Unauthenticated("this needs a seat token: send it as 'authorization: Bearer <token>'")
        for seat, known in enumerate(self.entry.token_sha256):
            if secrets.compare_digest(known, token_sha256):
                return Seat(seat)
        raise Unauthenticated(f"that token is not a seat of match {self.match_id}")

    def view_json(self, seat: Seat | None, seq: int) -> str:
        """A seat's view at `seq` as sent on the wire; the newest are cached (the reply and the stream share)."""
        key = (seq, seat)
        cached = self.views.get(key)
        if cached is None:
            view = self.game.view(self.at(seq).state, seat)
            cached = json.dumps(view.to_json(), separators=(",", ":"))
            if seq >= self.seq - 1:
                self.views[key] = cached
        return cached

    def at(self, seq: int) -> Match:
        """The match as published at change `seq` (0: as created, before its start)."""
        return self.position.match if seq == 0 == self.seq else self.snapshots[seq - self.first_seq]

    def update(self, seat: Seat | None, seq: int) -> matches_pb2.Update:
        snapshot = self.at(seq)
        published = self.commitments[: len(snapshot.deals)]
        update = matches_pb2.Update(
            match_id=self.match_id,
            seq=seq,
            seat=seat,
            view_json=self.view_json(seat, seq),
            commitments=[matches_pb2.Commitment(deal=i, sha256=c.sha256) for i, c in enumerate(published)],
            over=snapshot.over,
        )
        if seq == 0:
            update.starts_unix_ms = self.entry.created_unix_ms
        # the service's clock reading (matches.proto Update.match_time_ms): match time as the actor times
        # moves (never behind the match's own time), negative while a scheduled match waits for its start;
        # none once the match is over (no clock runs: every read of an ended match is the same bytes)
        if not self.match.over:
            elapsed = self.wall_ms() - self.entry.created_unix_ms
            update.match_time_ms = elapsed if seq == 0 == self.seq else max(self.match.now, elapsed)
        return update

    def wall_ms(self) -> int:
        """Unix ms from the clock that times the match's moves (its host's: MatchActor.hosting), else the wall's."""
        hosting = getattr(self, "hosting", None)
        return int(hosting.clock()) if hosting is not None else time.time_ns() // 1_000_000

    async def watch(self, token_sha256: bytes, after_seq: int) -> AsyncIterator[matches_pb2.Update]:
        """The caller's view after every change past `after_seq`; ends after the match ends."""
        seat = self.seat_of(token_sha256) if token_sha256 else None
        if after_seq > self.seq:
            raise MalformedAction(f"after_seq {after_seq} is ahead of the match, which is at {self.seq}")
        if after_seq + 1 < self.first_seq:
            await self.history()
        wake = asyncio.Event()
        self.watchers.add(wake)
        try:
            next_seq = after_seq + 1
            while not self.closed:
                while next_seq <= self.seq:
                    yield self.update(seat, next_seq)
                    next_seq += 1
                if self.snapshots and self.snapshots[-1].over:
                    return
                wake.clear()
                if next_seq > self.seq:
                    await wake.wait()
        finally:
            self.watchers.discard(wake)
        # closed before the match ended (shutdown, or fenced out): a retryable error, not the stream's end
        raise Unavailable(f"this worker no longer serves match {self.match_id}; resume after seq {next_seq - 1}")

    def record(self) -> dict[str, JSON]:
        if not self.match.over:
            raise NotFinished(f"match {self.match_id} is still being played: its record is shown when it ends")
        return self.position.record(self.match_id)

    async def history(self) -> None:
        """Make every change from the first one available (a watcher resumes from before `first_seq`)."""
        raise NotImplementedError

    def _publish(self) -> None:
        for key in [k for k in self.views if k[0] < self.seq - 1]:
            del self.views[key]
        self.snapshots.append(self.match)
        for wake in self.watchers:
            wake.set()

