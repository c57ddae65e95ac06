"""One match, one actor: its commands run one at a time, its deadline timer fires through the engine,
and every change is written to the log before anyone hears of it, then published as a numbered
snapshot that each watcher turns into its own view.

Every change runs in the actor's mailbox (`workers.mailbox`), never in its caller's task, so a caller
that goes away mid-commit cannot leave the log ahead of memory. Should they disagree anyway (a commit
whose answer was lost), the actor catches up from its log before its next change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from workers import metrics
from workers.commitments import Commitment
from workers.errors import NotOwner, NotStarted, NotYourSeat, Unavailable
from workers.games.engine import JSON, Game, Millis, Seat
from workers.games.records import Match
from workers.mailbox import Mailbox
from workers.published import Published
from workers.replay_log import Position, changes, fresh, restored
from workers.shuffle import shuffled
from workers.storage import FencedOut, LogEntry, MatchEntry, Progress, Snapshot, Storage, Stored
from workers.voids import VoidReason

log = logging.getLogger("tablehall.worker")
T = TypeVar("T")

Pending = tuple[str, Seat | None, dict[str, JSON], Millis]
"""A step to log: kind, seat, action, time."""
Change = tuple[Match, list[Pending], list[Commitment]]
"""A change to log: the match after it, its steps, and the commitments of the deals it makes."""
SNAPSHOT_EVERY = 64
"""Changes between snapshots: recovery replays at most this many steps per match."""
RETRY_S = 0.2
"""A deadline the storage could not settle is tried again after this long."""


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Hosting:
    """What a match's host gives its actor: the clock, the tolerance, and the hooks the actor calls. The
    defaults host a match alone (no hooks, the wall clock, 1 s)."""

    clock: Callable[[], int] = unix_ms
    """The wall clock in unix ms (tests inject one): starts of scheduled matches, deadlines."""
    tolerance_ms: int = 1000
    """A timer fired, or a start found, later than this voids a running clock's match (SB-11)."""
    on_fenced: Callable[[MatchActor, FencedOut], None] | None = None
    """Called (soon after) when another worker claimed the match's partition: the host stops serving it."""
    on_finished: Callable[[str], None] | None = None
    """Called with the match id once a result is logged (not a void): enqueues its rating."""
    on_ended: Callable[[str], None] | None = None
    """Called with the match id once the match is over, result or void (tournament rounds)."""


class MatchActor(Published):
    def __init__(
        self,
        entry: MatchEntry,
        game: Game[Any, Any, Any],
        storage: Storage,
        epoch: int,
        position: Position,
        hosting: Hosting = Hosting(),
    ) -> None:
        super().__init__(entry, game, position, hosting.clock)
        self.storage = storage
        self.epoch = epoch
        self.hosting = hosting
        self.mailbox = Mailbox()
        self.stale = False
        """The log may hold changes memory lacks (a write whose outcome is unknown): catch up first."""
        self.timer: asyncio.TimerHandle | None = None
        self.firing: set[asyncio.Task[None]] = set()
        self.snapshotting: set[asyncio.Future[None]] = set()
        """Snapshots being written (held here: the loop keeps only weak references to its tasks)."""

    @classmethod
    async def create(
        cls, entry: MatchEntry, game: Game[Any, Any, Any], storage: Storage, epoch: int, hosting: Hosting = Hosting()
    ) -> MatchActor:
        await storage.create(entry, epoch)
        return await cls.opened(entry, game, storage, epoch, hosting)

    @classmethod
    async def opened(
        cls, entry: MatchEntry, game: Game[Any, Any, Any], storage: Storage, epoch: int, hosting: Hosting = Hosting()
    ) -> MatchActor:
        """A match just written to storage: dealt now, or held until its start (`created_unix_ms`)."""
        actor = cls(entry, game, storage, epoch, fresh(game, entry), hosting)
        if entry.created_unix_ms > actor.hosting.clock():
            actor.arm()  # scheduled: the timer starts it
        else:
            await actor.start()
        return actor

    @classmethod
    def restore(
        cls, stored: Stored, game: Game[Any, Any, Any], storage: Storage, epoch: int, hosting: Hosting = Hosting()
    ) -> MatchActor:
        """Rebuild from the last snapshot and the steps logged after it."""
        return cls(stored.entry, game, storage, epoch, restored(game, stored), hosting)

    @property
    def scheduled(self) -> bool:
        """Held until its start: nothing dealt, no clock running, no command taken."""
        return self.seq == 0 and not self.closed

    async def start(self, origin_unix_ms: int | None = None) -> bool:
        """Deal the first hand at match time 0. A match's time counts from its deal, so an early start
        (the organizer's "start now", `origin_unix_ms`) or one found late by more than the tolerance (the
        worker was down at the start) first moves the origin to now. False if it had started already."""
        return await self._serially(lambda: self._start(origin_unix_ms))

    async def _start(self, origin_unix_ms: int | None) -> bool:
        if self.seq > 0 or self.closed:
            return False
        now = self.hosting.clock()
        if origin_unix_ms is not None or now - self.entry.created_unix_ms > self.hosting.tolerance_ms:
            origin = now if origin_unix_ms is None else origin_unix_ms
            await self.storage.reschedule(self.match_id, self.entry.partition, self.epoch, origin)
            self.entry = dataclasses.replace(self.entry, created_unix_ms=origin)
        await self._commit(self.match, [], Millis(0))
        return True

    def not_started(self) -> str:
        starts = self.entry.created_unix_ms
        when = datetime.fromtimestamp(starts / 1000, UTC).isoformat(timespec="milliseconds")
        wait = max(0, starts - self.hosting.clock()) / 1000
        return f"match {self.match_id} is scheduled: it starts at {when} (in {wait:.1f} s); nothing is dealt yet"

    async def command(
        self, token_sha256: bytes, claimed: int | None, action: dict[str, JSON], arrival_unix_ms: int
    ) -> tuple[int, Seat]:
        """Apply one seat's command at its stamped arrival; acknowledged only once it is in the log: the
        change it made and the seat that made it (whose view `reply` shows)."""
        seat = self.seat_of(token_sha256)
        if claimed is not None and claimed != seat:
            raise NotYourSeat(f"this token acts for seat {seat}, not seat {claimed}")
        parsed = self.game.parse_action(action)
        return await self._serially(lambda: self._command(seat, parsed, action, arrival_unix_ms))

    async def _command(
        self, seat: Seat, parsed: Any, action: dict[str, JSON], arrival_unix_ms: int
    ) -> tuple[int, Seat]:
        if self.closed:  # its partition left this worker after the command was queued: nothing was done
            raise NotOwner(f"this worker no longer serves match {self.match_id}")
        if self.seq == 0:
            raise NotStarted(self.not_started())
        # a command stamped before the last change is counted at that change (one actor, in order)
        now = Millis(max(self.match.now, arrival_unix_ms - self.entry.created_unix_ms))
        match, _ = self.match.apply(seat, parsed, now)
        change = self.seq + 1
        await self._commit(match, [("command", seat, action, now)], now)
        return change, seat

    async def void(self, reason: str, at_ms: Millis) -> None:
        """SB-11: a proven service fault ends the match with no result, the reason in the log."""
        await self._serially(lambda: self._void(reason, at_ms))

    async def _void(self, reason: str, at_ms: Millis) -> None:
        if self.match.over or self.closed:
            return
        now = Millis(max(self.match.now, at_ms))
        match, _ = self.match.void(reason, now)
        await self._commit(match, [("void", None, {"reason": reason}, now)], now)
        log.warning("match %s voided: %s", self.match_id, reason)

    async def _serially(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run a change in the mailbox, after catching up with the log if memory may be behind it."""

        async def turn() -> T:
            if self.stale and not self.closed:
                await self.catch_up()
                await self._deal_due(self.match.now)  # a deal the last change called for, not yet written
            return await work()

        return await self.mailbox.run(turn)

    def progress(self, match: Match) -> Progress:
        """What the match table records besides the log: status, void reason, the next deadline."""
        deadline = None if match.over else self.game.next_deadline(match.state)
        status = "voided" if match.void_reason else "finished" if match.over else "in_progress"
        return Progress(
            status,
            match.void_reason,
            None if deadline is None else self.entry.created_unix_ms + deadline,
            deadline is not None,
        )

    def close(self) -> None:
        """Stop serving this match (shutdown, a hand-off, or its lease was lost). Whoever waits on its mailbox
        hears it now: a change not begun was not made (send it again, to the new owner); the one being
        committed may or may not be in the log (its seat's view tells)."""
        self.closed = True
        self.mailbox.abandon(
            Unavailable(f"this worker stopped serving match {self.match_id} during the change: look at the view"),
            NotOwner(f"this worker no longer serves match {self.match_id}"),
        )
        if self.timer is not None:
            self.timer.cancel()
        self._close_watchers()

    # --- inside the actor (every method below runs in the mailbox) -----------------------------

    async def _commit(self, match: Match, steps: list[Pending], now: Millis) -> None:
        """Write the steps and the deal they call for in one transaction (both or neither), then make each
        change visible in turn: a deal is a change of its own, so every watcher sees how a round ended
        before the next deal replaces it."""
        if not steps:
            await self._deal_due(now)
            return
        await self._write([(match, steps, []), *self._deals(match, now)])

    async def _deal_due(self, now: Millis) -> None:
        """Write the deal the match calls for now (a start, or one the last change left unwritten)."""
        deals = self._deals(self.match, now)
        if deals:
            await self._write(deals)

    def _deals(self, current: Match, now: Millis) -> list[Change]:
        """The deals `current` calls for, each a change of its own, dealt but not yet written."""
        deals: list[Change] = []
        while self.game.needs_deal(current.state):
            order = shuffled(self.game.deck_size(current.state))  # the OS CSPRNG, one call a deal
            deal = self.game.deal_from(current.state, order)
            dealt = self.game.deal_json(deal)
            commitment = Commitment.of(dealt)
            current, _ = current.deal(deal, now)
            deals.append((current, [("deal", None, {"deal": dealt, "salt": commitment.salt.hex()}, now)], [commitment]))
        return deals

    async def _write(self, changes: list[Change]) -> None:
        """Append these changes' steps to the log in one commit; only once they are committed is each change
        published (its watchers' views built meanwhile: `foreseen`). A write whose outcome is unknown (the
        storage failed mid-commit) is settled by reading the log."""
        change = self.seq + 1
        entries: list[LogEntry] = []
        for n, (_, steps, _) in enumerate(changes):
            for step in steps:
                entries.append(LogEntry(self.position.logged + len(entries) + 1, change + n, *step))
        progress = self.progress(changes[-1][0])
        foreseen = self.foreseen([match for match, _, _ in changes], change) if self.storage.durable else None
        try:
            started = time.perf_counter()
            await self.storage.append_all(self.match_id, self.entry.partition, self.epoch, entries, progress)
            if self.storage.durable:  # an in-memory log commits nothing: no figure to keep
                metrics.LOG_COMMIT.observe(time.perf_counter() - started)
        except FencedOut as fenced:
            log.error("match %s: %s; this worker stops serving it", self.match_id, fenced)
            if self.hosting.on_fenced is not None:  # once this change's caller has its answer (wrong_owner: not done)
                asyncio.get_running_loop().call_soon(self.hosting.on_fenced, self, fenced)
            raise
        except Exception as error:
            metrics.FAULTS.labels("storage_error").inc()
            log.warning("match %s: appending change %d failed (%s); reading the log", self.match_id, change, error)
            self.stale = True
            if await self._caught_up_with(entries):
                return  # it was committed after all: published by the catch-up
            raise Unavailable(f"match {self.match_id}: the change could not be stored; send it again") from None
        if foreseen:
            self.views.update(foreseen)
        for match, steps, commitments in changes:
            was_over = self.match.over
            self.position.match = match
            self.position.commitments.extend(commitments)
            self.position.logged += len(steps)
            self.position.change += 1
            self._published(was_over)

    def _published(self, was_over: bool) -> None:
        """A change is in the log and in memory: tell the watchers, re-arm the timer, run the hooks."""
        match = self.match
        self._publish()
        self.arm()
        if match.over and not was_over:
            if match.void_reason is not None:
                metrics.VOIDED.labels(match.void_reason).inc()
            else:
                metrics.FINISHED.labels(self.entry.game, str(match.outcome().get("reason", "other"))).inc()
        if match.over and match.void_reason is None and self.hosting.on_finished is not None:
            self.hosting.on_finished(self.match_id)
        if match.over and not was_over and self.hosting.on_ended is not None:
            self.hosting.on_ended(self.match_id)
        if self.seq % SNAPSHOT_EVERY == 0 and not match.over and self.storage.takes_snapshots:
            self._snapshot(Snapshot(self.seq, self.position.freeze()))

    def _snapshot(self, snapshot: Snapshot) -> None:
        """Write a snapshot behind the change, not in its way: it is only a shortcut for recovery (the change
        is committed already), so the command that happened to land on it is answered without waiting for a
        second commit (with the log's writer busy, one more batch: what such commands added to the p99)."""
        writing = asyncio.ensure_future(
            self.storage.snapshot(self.match_id, self.entry.partition, self.epoch, snapshot)
        )
        self.snapshotting.add(writing)
        writing.add_done_callback(lambda done: self._snapshot_written(done, snapshot.seq))

    def _snapshot_written(self, done: asyncio.Future[None], seq: int) -> None:
        self.snapshotting.discard(done)
        error = None if done.cancelled() else done.exception()
        if error is not None:
            log.warning("match %s: snapshot at change %d not written (%s)", self.match_id, seq, error)

    async def catch_up(self) -> list[LogEntry]:
        """Memory may be behind the log: replay what the log holds beyond memory, publishing each change
        (`Unavailable` while the storage cannot be read; the next change tries again). Returns the log."""
        try:
            entries = await self.storage.log(self.match_id)
        except Exception as error:
            raise Unavailable(f"match {self.match_id}: its log cannot be read now ({type(error).__name__})") from None
        ahead = [e for e in entries if e.seq > self.position.logged]
        for _ in changes(self.game, self.position, ahead):
            was_over = self.snapshots[-1].over if self.snapshots else False
            self._published(was_over)
        self.stale = False
        if ahead:
            log.warning("match %s: caught up with %d logged step(s) memory lacked", self.match_id, len(ahead))
        return entries

    async def _caught_up_with(self, entries: list[LogEntry]) -> bool:
        """After a failed append: catch up, and say whether the log now holds exactly these entries."""
        try:
            held = {e.seq: e for e in await self.catch_up()}
        except Unavailable:
            return False
        return all(held.get(e.seq) == e for e in entries)

    async def history(self) -> None:
        await self._serially(self._rebuild_history)

    async def _rebuild_history(self) -> None:
        """A watcher resumes from before this worker recovered the match: replay the whole log."""
        if self.first_seq == 1:
            return
        position = fresh(self.game, self.entry)
        history = list(changes(self.game, position, await self.storage.log(self.match_id)))
        self.snapshots = history[: self.seq]
        self.first_seq = 1

    def arm(self, retry_s: float | None = None) -> None:
        """The deadline timer follows `next_deadline` after every change; a scheduled match's is its start.
        `retry_s`: a deadline that could not be settled (storage down) is tried again after that long. A
        timer already set to fire no later is kept (a change rarely brings the deadline nearer): when it
        fires early it finds nothing due and sets the timer again."""
        deadline = Millis(0) if self.seq == 0 else self.game.next_deadline(self.match.state)
        timer = self.timer
        if deadline is None or self.match.over or self.closed:
            if timer is not None:
                timer.cancel()
                self.timer = None
            return
        delay = (self.entry.created_unix_ms + deadline - self.hosting.clock() + 1) / 1000
        if retry_s is not None:
            delay = max(delay, retry_s)
        loop = asyncio.get_running_loop()
        if timer is not None:
            if retry_s is None and timer.when() <= loop.time() + delay:
                return
            timer.cancel()
        self.timer = loop.call_later(max(0.0, delay), self._on_timer)

    def _on_timer(self) -> None:
        self.timer = None
        task = asyncio.ensure_future(self._fire())
        self.firing.add(task)
        task.add_done_callback(self.firing.discard)

    async def settle(self) -> None:
        """A sweep found this match's deadline passed without a verdict: run the timer now."""
        await self._fire()

    async def resume(self) -> None:
        """Just restored from the log: a deal the last change called for (the previous owner stopped
        between the two writes) is made now, then the timer is armed."""
        if self.seq > 0 and self.game.needs_deal(self.match.state):
            await self._serially(lambda: self._deal_due(self.match.now))
        self.arm()

    async def _fire(self) -> None:
        """The deadline timer: settle what is due (through the mailbox), trying again shortly when the
        storage fails; a fenced-out actor stops."""
        try:
            await self._serially(self._due)
        except FencedOut:
            return
        except Unavailable as error:
            log.warning("match %s: its deadline could not be settled (%s); trying again", self.match_id, error)
            self.arm(retry_s=RETRY_S)

    async def _due(self) -> None:
        """Settle what is due, or void the match if the timer came too late (SB-11). A scheduled match
        starts (a late start is no fault: no clock ran)."""
        if self.closed:
            return
        if self.seq == 0:
            if self.hosting.clock() < self.entry.created_unix_ms or not await self._start(None):
                self.arm()
            return
        deadline = self.game.next_deadline(self.match.state)
        now = Millis(max(self.match.now, self.hosting.clock() - self.entry.created_unix_ms))
        if deadline is None or deadline > now or self.match.over:
            self.arm()
            return
        metrics.timer_lateness(self.entry.game, max(0, now - deadline) / 1000)
        if now - deadline > self.hosting.tolerance_ms:
            metrics.FAULTS.labels("timer_late").inc()
            match, _ = self.match.void(VoidReason.TIMER_LATE, now)
            log.warning("match %s: deadline timer fired %d ms late: voided", self.match_id, now - deadline)
            await self._commit(match, [("void", None, {"reason": VoidReason.TIMER_LATE.value}, now)], now)
        else:
            match, _ = self.match.advance(now)
            await self._commit(match, [("deadline", None, {}, now)], now)
