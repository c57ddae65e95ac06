"""What a match actor shows: each published change as a numbered snapshot, each seat's view of it (the
newest cached, shared by a command's reply and every watcher of that seat: the typed message built once,
the JSON only when someone asks for it), the watchers woken by every change, and the record once the match
is over. Built from the match as the log holds it; the actor (workers/actor.py)
changes it, through its mailbox, and publishes each change here."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from google.protobuf.message import Message

from protos.tablehall.v1 import matches_pb2
from workers.commitments import Commitment
from workers.errors import NotFinished, Unauthenticated, Unavailable
from workers.following import Following, Sink
from workers.games.engine import JSON, Game, Seat
from workers.games.errors import MalformedAction
from workers.games.records import Match
from workers.replay_log import Position
from workers.storage import MatchEntry
from workers.typed_views import FIELDS, typed_view, typed_wire
from workers.wire import Posted, field, tag, varint, varint_key

TYPED, JSON_ONLY = matches_pb2.VIEW_FORMAT_TYPED, matches_pb2.VIEW_FORMAT_JSON
VIEW_KEYS = {game: tag(matches_pb2.Update.DESCRIPTOR.fields_by_name[name].number) for game, name in FIELDS.items()}
"""The key of each game's typed view field in an Update."""
_SEQ = varint_key(matches_pb2.Update.DESCRIPTOR.fields_by_name["seq"].number)
_SEATS: dict[Seat | None, bytes] = {None: b""}


def _seat(seat: Seat | None) -> bytes:
    """An Update's seat field, serialized (none for a spectator)."""
    known = _SEATS.get(seat)
    if known is None:
        known = _SEATS[seat] = matches_pb2.Update(seat=seat).SerializeToString()
    return known



def wall() -> int:
    """The wall clock in unix ms (a match published alone: no host to hand its clock over)."""
    return time.time_ns() // 1_000_000

class Shown:
    """One seat's view of one change, in the forms asked so far: each built at most once, then shared."""

    __slots__ = ("_json", "_typed", "_wire", "game", "view")

    def __init__(self, game: str, view: Any) -> None:
        self.game = game
        self.view = view
        self._typed: Message | None = None
        self._wire: bytes | None = None
        self._json: str | None = None

    def typed(self) -> Message:
        if self._typed is None:
            self._typed = typed_view(self.game, self.view)
        return self._typed

    def wire(self) -> bytes:
        """The typed view serialized (parsed straight into the message that carries it)."""
        if self._wire is None:
            self._wire = typed_wire(self.game, self.view)
        return self._wire

    def json(self) -> str:
        if self._json is None:
            self._json = json.dumps(self.view.to_json(), separators=(",", ":"))
        return self._json

    def fill(self, carrier: matches_pb2.Update | matches_pb2.ActResponse, views: int) -> None:
        """Put the view in an Update or ActResponse in the form asked (matches.proto ViewFormat)."""
        if views != JSON_ONLY:
            typed, wire = getattr(carrier, FIELDS[self.game]), self.wire()
            typed.MergeFromString(wire)
            if not wire:  # every field at its default: set the oneof all the same
                typed.SetInParent()
        if views != TYPED:
            carrier.view_json = self.json()

    def build(self, views: int) -> None:
        """Build and keep the forms `views` asks for (a change's view made before its commit is awaited)."""
        if views != JSON_ONLY:
            self.wire()
        if views != TYPED:
            self.json()

    def parts(self, views: int) -> tuple[bytes, bytes]:
        """The view as an Update's serialized fields in the form asked: (view_json's, the typed view's) —
        apart, as each has its place in the Update's field order."""
        typed = b"" if views == JSON_ONLY else field(VIEW_KEYS[self.game], self.wire())
        json_part = b"" if views == TYPED else matches_pb2.Update(view_json=self.json()).SerializeToString()
        return json_part, typed


class Watcher:
    """One follower of a match: its seat, the form of its views, its sink, the last change it was given."""

    __slots__ = ("seat", "seq", "sink", "views")

    def __init__(self, seat: Seat | None, views: int, sink: Sink[Posted], seq: int) -> None:
        self.seat = seat
        self.views = views
        self.sink = sink
        self.seq = seq

    def put(self, posted: Posted) -> None:
        self.seq = posted.seq
        self.sink.put(posted)


class Published:
    def __init__(
        self, entry: MatchEntry, game: Game[Any, Any, Any], position: Position, clock: Callable[[], int] = wall
    ) -> None:
        self.entry = entry
        self.clock = clock
        """Unix ms from the clock that times the match's moves (its host's, handed over by the actor)."""
        self.game = game
        self.position = position
        self.snapshots: list[Match] = [position.match] if position.change else []
        self.first_seq = max(1, position.change)
        """The first change in `snapshots` (a match restored from a snapshot starts there)."""
        self.views: dict[tuple[int, Seat | None], Shown] = {}
        self.updates: dict[tuple[int, Seat | None, int], tuple[int, Posted]] = {}
        """The newest Update of each seat and form, with the clock reading it carries: every watcher of a
        seat woken by one change gets the same bytes, built once."""
        self.named = matches_pb2.Update(match_id=entry.match_id).SerializeToString()
        """The match id as an Update's field (the first of every update's)."""
        self.shared: tuple[tuple[int, int], tuple[bytes, bytes]] | None = None
        """The parts of the last Update built that every viewer of its change shares, by (seq, reading)."""
        self.sealed: dict[int, bytes] = {}
        """The first N deals' commitments, serialized as an Update's field, by N: each built once."""
        self.watchers: set[Watcher] = set()
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

    def shown(self, seat: Seat | None, seq: int) -> Shown:
        """A seat's view at `seq`; the newest are cached (the reply and every watcher of the seat share)."""
        key = (seq, seat)
        cached = self.views.get(key)
        if cached is None:
            cached = Shown(self.game.name, self.game.view(self.at(seq).state, seat))
            if seq >= self.seq - 1:
                self.views[key] = cached
        return cached

    def foreseen(self, matches: Sequence[Match], first: int) -> dict[tuple[int, Seat | None], Shown]:
        """Each watched seat's view of changes `first`, `first + 1`, … not yet committed, in the forms its
        watchers take, built before their write is awaited (the commit's wait covers them, not the answers
        after it). The actor puts them among `views` only once they are committed: a failed write's are
        thrown away, as its seqs will be another change's."""
        forms = {(watcher.seat, watcher.views) for watcher in self.watchers}
        found: dict[tuple[int, Seat | None], Shown] = {}
        for seq, match in enumerate(matches, first):
            for seat, views in forms:
                shown = found.get((seq, seat))
                if shown is None:
                    shown = found[(seq, seat)] = Shown(self.game.name, self.game.view(match.state, seat))
                shown.build(views)
        return found

    def view_json(self, seat: Seat | None, seq: int) -> str:
        """A seat's view at `seq` as view_json carries it."""
        return self.shown(seat, seq).json()

    def reply(self, seat: Seat, seq: int, views: int, with_view: bool = True) -> matches_pb2.ActResponse:
        """A command's answer: the change it made and, unless not wanted, the caller's view after it."""
        reply = matches_pb2.ActResponse(seq=seq)
        if with_view:
            self.shown(seat, seq).fill(reply, views)
        return reply

    def at(self, seq: int) -> Match:
        """The match as published at change `seq` (0: as created, before its start)."""
        return self.position.match if seq == 0 == self.seq else self.snapshots[seq - self.first_seq]

    def update(self, seat: Seat | None, seq: int, views: int = matches_pb2.VIEW_FORMAT_BOTH) -> matches_pb2.Update:
        """A seat's Update at `seq` as a message (GetView; watchers get `posted`'s bytes)."""
        return self.posted(seat, seq, views).update()

    def posted(self, seat: Seat | None, seq: int, views: int = matches_pb2.VIEW_FORMAT_BOTH) -> Posted:
        """A seat's Update at `seq`, serialized, and put together from parts: what every viewer of the
        change shares (built once per change and clock reading), the seat, the view. Every watcher of a seat
        woken by one change gets the same bytes."""
        reading = self._reading(seq)
        key = (seq, seat, views)
        cached = self.updates.get(key)
        if cached is not None and cached[0] == reading:
            return cached[1]
        front, back = self._shared(seq, reading)
        json_part, typed = self.shown(seat, seq).parts(views)
        posted = Posted(seq, front + _seat(seat) + json_part + back + typed)  # the fields in their numbers' order
        if seq >= self.seq - 1:
            self.updates[key] = (reading, posted)
        return posted

    def _reading(self, seq: int) -> int:
        """The service's clock reading (matches.proto Update.match_time_ms): match time as the actor times
        moves (never behind the match's own time), negative while a scheduled match waits for its start;
        none once the match is over (no clock runs: every read of an ended match is the same bytes)."""
        if self.match.over:
            return 0
        elapsed = self.wall_ms() - self.entry.created_unix_ms
        return elapsed if seq == 0 == self.seq else max(self.match.now, elapsed)

    def _shared(self, seq: int, reading: int) -> tuple[bytes, bytes]:
        """The fields of a change's Update that every viewer shares at this clock reading, serialized: those
        before the seat (match id, seq) and those after it (the commitments, over, start, the reading)."""
        known = self.shared
        if known is not None and known[0] == (seq, reading):
            return known[1]
        snapshot = self.at(seq)
        front = self.named + (_SEQ + varint(seq) if seq else b"")
        rest = matches_pb2.Update(over=snapshot.over, match_time_ms=reading)
        if seq == 0:
            rest.starts_unix_ms = self.entry.created_unix_ms
        parts = (front, self._sealed(len(snapshot.deals)) + rest.SerializeToString())
        self.shared = ((seq, reading), parts)
        return parts

    def _sealed(self, deals: int) -> bytes:
        """The first `deals` commitments as an Update's serialized field, built once."""
        wire = self.sealed.get(deals)
        if wire is None:
            sealed = enumerate(self.commitments[:deals])
            commitments = [matches_pb2.Commitment(deal=d, sha256=c.sha256) for d, c in sealed]
            wire = self.sealed[deals] = matches_pb2.Update(commitments=commitments).SerializeToString()
        return wire

    def wall_ms(self) -> int:
        """Unix ms from the clock that times the match's moves."""
        return int(self.clock())

    async def follow(self, token_sha256: bytes, after_seq: int, views: int, sink: Sink[Posted]) -> Watcher:
        """Push the caller's view after every change past `after_seq` to `sink`, as each is published,
        then its end: None once the match is over, `Unavailable` if this worker stops serving it first."""
        seat = self.seat_of(token_sha256) if token_sha256 else None
        if after_seq > self.seq:
            raise MalformedAction(f"after_seq {after_seq} is ahead of the match, which is at {self.seq}")
        if after_seq + 1 < self.first_seq:
            await self.history()
        watcher = Watcher(seat, views, sink, after_seq)
        if self.closed:
            sink.end(self._gone(watcher))
            return watcher
        for seq in range(after_seq + 1, self.seq + 1):
            watcher.put(self.posted(seat, seq, views))
        if self.snapshots and self.snapshots[-1].over:
            sink.end(None)
        else:
            self.watchers.add(watcher)
        return watcher

    def unfollow(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)

    async def watch(
        self, token_sha256: bytes, after_seq: int, views: int = matches_pb2.VIEW_FORMAT_BOTH
    ) -> AsyncIterator[Posted]:
        """`follow` as an async iterator: the caller's view after every change past `after_seq`; ends after
        the match ends."""
        following: Following[Posted] = Following()
        watcher = await self.follow(token_sha256, after_seq, views, following)
        try:
            async for update in following:
                yield update
        finally:
            self.unfollow(watcher)

    def _gone(self, watcher: Watcher) -> Unavailable:
        """Closed before the match ended (shutdown, or fenced out): a retryable error, not the watch's end."""
        return Unavailable(f"this worker no longer serves match {self.match_id}; resume after seq {watcher.seq}")

    def record(self) -> dict[str, JSON]:
        if not self.match.over:
            raise NotFinished(f"match {self.match_id} is still being played: its record is shown when it ends")
        return self.position.record(self.match_id)

    async def history(self) -> None:
        """Make every change from the first one available (a watcher resumes from before `first_seq`)."""
        raise NotImplementedError

    def _publish(self) -> None:
        kept = self.position.change - 1  # the newest two changes' views and updates stay cached
        for key in [k for k in self.views if k[0] < kept]:
            del self.views[key]
        for old in [k for k in self.updates if k[0] < kept]:
            del self.updates[old]
        self.snapshots.append(self.match)
        over = self.match.over
        for watcher in list(self.watchers):
            watcher.put(self.posted(watcher.seat, self.seq, watcher.views))
            if over:
                self.watchers.discard(watcher)
                watcher.sink.end(None)

    def _close_watchers(self) -> None:
        """This worker stops serving the match: every watcher hears where to resume."""
        watchers, self.watchers = self.watchers, set()
        for watcher in watchers:
            watcher.sink.end(self._gone(watcher))

