"""Where a worker keeps what it accepted: one interface, in memory or durable (SQL, see `workers/sql/`).

Every method is a coroutine; `append` returns only once the entry is committed, so a command is
acknowledged only after its event is durable. Writes are fenced: a worker claims its partitions with a
new epoch, and a write for a partition whose epoch has moved on is refused with `FencedOut`, so two
processes that both believe they own a partition never both write one match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol

from workers.errors import NotOwner, ServiceError
from workers.games.engine import JSON
from workers.games.values import built_fast
from workers.leases import LeaseLost, LeaseTable, Member, MemberState, PartitionLease, Taken


class FencedOut(ServiceError):
    """Another worker claimed this partition after us: our writes are refused, we stop serving it."""

    code = NotOwner.code  # the same refusal as NotOwner's
    status = NotOwner.status


@dataclass(frozen=True, slots=True)
class MatchEntry:
    match_id: str
    game: str
    players: tuple[str, ...]
    options: dict[str, JSON]
    token_sha256: tuple[bytes, ...]
    created_unix_ms: int
    lot: int
    partition: int = 0


@built_fast  # one for every step
@dataclass(frozen=True, slots=True)
class LogEntry:
    """One accepted step of a match, replayed in order by recovery.

    `kind` is "command" (a seat's action, as its record event), "deal" (`action` holds the deal as the
    record writes it and its commitment salt in hex) or "deadline" (the deadline timer settled what was
    due at `t_ms`). `seq` numbers the log (unique per match); `change` is the watch sequence number of
    the published change the step belongs to (a deal is a change of its own, after the one that called for
    it, so that every watcher sees how a round ended before the next deal; the two are committed together).
    """

    seq: int
    change: int
    kind: str
    seat: int | None
    action: dict[str, JSON]
    t_ms: int


SNAPSHOT_FORMAT = b"tablehall-snapshot/3\n"
"""Leads every snapshot's bytes. Raise the number whenever a value a snapshot pickles changes its fields or
its pickling (2: the engine's fast-built values; 3: the command log as plain tuples): a worker of the new
code then reads such a match's whole log instead of a snapshot it cannot thaw, so a rolling upgrade loses
no running match."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The pickled `Match` value after change `seq` (recovery loads it, then the entries after it)."""

    seq: int
    blob: bytes

    @property
    def current(self) -> bool:
        """Written in this code's snapshot format (else the match is replayed from its whole log)."""
        return self.blob.startswith(SNAPSHOT_FORMAT)


@built_fast  # one for every change
@dataclass(frozen=True, slots=True)
class Progress:
    """What the match table says about a match besides its log (for sweeps, recovery and metrics)."""

    status: str = "in_progress"
    """in_progress, finished or voided."""
    void_reason: str | None = None
    deadline_unix_ms: int | None = None
    """When the match's next deadline falls, if a clock runs: the sweeps' index."""
    clock_running: bool = False


@dataclass(frozen=True, slots=True)
class Stored:
    """A match as its log holds it (recovery reads the unfinished ones; an ended one is read on demand)."""

    entry: MatchEntry
    snapshot: Snapshot | None
    entries: tuple[LogEntry, ...]
    """The log after the snapshot (all of it without one), in order."""
    progress: Progress


class Storage(Protocol):
    async def claim(self, owner: str, partitions: list[int]) -> dict[int, int]:
        """Take these partitions for `owner`, each with a new epoch (fencing out any previous owner)."""
        ...

    async def heartbeat(self, owner: str, at_unix_ms: int) -> None:
        """`owner` is alive at this instant (recovery measures an outage from the last one)."""
        ...

    async def last_heartbeat(self, partitions: list[int]) -> int | None:
        """The newest heartbeat of whoever owned these partitions before (None: never owned)."""
        ...

    # -- leases (workers.leases): each call is one transaction of its own, never queued behind writes --

    async def join(self, owner: str, address: str, now_unix_ms: int) -> None:
        """Register a worker (active, listening at `address`), heartbeat now."""
        ...

    def beat(self, owner: str, now_unix_ms: int) -> None:
        """Heartbeat: every lease `owner` holds now lasts another lease from `now`; `LeaseLost` if `owner`
        was marked down or gone. Blocking: the worker's heartbeat thread calls it, so that a busy event
        loop never lets a lease run out."""
        ...

    async def leases(self) -> LeaseTable:
        """The lease table, read only (gateways, sweeps)."""
        ...

    async def take(self, owner: str, expected: dict[int, int], now_unix_ms: int, lease_ms: int) -> dict[int, Taken]:
        """Claim each partition still at its `expected` epoch (0: no row yet) and free (released, or its
        owner's heartbeat older than `lease_ms`, or `owner` itself), with a new epoch; the ones not
        claimed are left out."""
        ...

    async def release(self, owner: str, epochs: dict[int, int], now_unix_ms: int, to: str = "") -> None:
        """Give up these partitions (still `owner`'s at these epochs): the epoch moves on, and the owner is
        empty (for whoever takes them) or worker `to` (a hand-off: it serves them without a claim of its own)."""
        ...

    async def set_state(self, owner: str, state: MemberState) -> None: ...

    async def create(self, entry: MatchEntry, epoch: int) -> None: ...

    async def create_many(self, entries: list[MatchEntry], epochs: dict[int, int]) -> None:
        """Create all of these matches in one transaction, or none (`epochs`: per partition)."""
        ...

    async def reschedule(self, match_id: str, partition: int, epoch: int, origin_unix_ms: int) -> None:
        """Move a match's time origin (`created_unix_ms`: its start); only while nothing is logged."""
        ...

    async def append(self, match_id: str, partition: int, epoch: int, entry: LogEntry, progress: Progress) -> None:
        """Commit one change and the match's new progress; raises `FencedOut` if the epoch moved on."""
        ...

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        """Commit these entries, in order, and the match's progress after them, in one transaction: all of
        them or none (a command and the deal it calls for); raises `FencedOut` if the epoch moved on."""
        ...

    @property
    def durable(self) -> bool:
        """Whether a commit outlives the process (the commit's time is a figure worth keeping)."""

    takes_snapshots: bool
    """Whether the actor snapshots its match every `SNAPSHOT_EVERY` changes: a snapshot spares a restore
    reading and replaying the whole log, which is worth it only where the log is far away."""

    async def snapshot(self, match_id: str, partition: int, epoch: int, snapshot: Snapshot) -> None: ...

    async def unfinished(self, partitions: list[int]) -> list[Stored]: ...

    async def load(self, match_id: str) -> Stored | None:
        """One match, whatever its status (None: no such match): an ended match read on demand."""
        ...

    async def log(self, match_id: str) -> list[LogEntry]:
        """The whole log of one match, in order (to rebuild the history a resuming watcher asks for)."""
        ...

    async def close(self) -> None: ...


@dataclass
class MemoryStorage:
    """The in-memory storage: nothing survives the process; fencing works the same way."""

    matches: dict[str, MatchEntry] = field(default_factory=dict)
    logs: dict[str, list[LogEntry]] = field(default_factory=dict)
    progress: dict[str, Progress] = field(default_factory=dict)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    epochs: dict[int, int] = field(default_factory=dict)
    owners: dict[int, str] = field(default_factory=dict)
    since: dict[int, int] = field(default_factory=dict)
    beats: dict[str, int] = field(default_factory=dict)
    members: dict[str, tuple[str, MemberState]] = field(default_factory=dict)
    """Per worker: where it listens and its state (its heartbeat is in `beats`)."""
    durable: ClassVar[bool] = False
    """Nothing outlives the process (`tablehall_event_log_commit_seconds` is not observed)."""
    takes_snapshots: bool = False
    """The log is in this process's memory: a restore replays it for a little CPU and no reading, so the
    ~0.5 ms of pickling a snapshot every 64 changes would buy nothing (it can still be given one)."""

    async def claim(self, owner: str, partitions: list[int]) -> dict[int, int]:
        for p in partitions:
            self.epochs[p] = self.epochs.get(p, 0) + 1
            self.owners[p] = owner
        return {p: self.epochs[p] for p in partitions}

    async def heartbeat(self, owner: str, at_unix_ms: int) -> None:
        self.beats[owner] = at_unix_ms

    async def join(self, owner: str, address: str, now_unix_ms: int) -> None:
        self.members[owner] = (address, MemberState.ACTIVE)
        self.beats[owner] = now_unix_ms

    def beat(self, owner: str, now_unix_ms: int) -> None:
        _, state = self.members.get(owner, ("", MemberState.GONE))
        if state not in (MemberState.ACTIVE, MemberState.DRAINING):
            raise LeaseLost(f"{owner} is {state}: it holds no lease")
        self.beats[owner] = now_unix_ms

    async def leases(self) -> LeaseTable:
        return self._table()

    def _table(self) -> LeaseTable:
        members = [Member(o, a, st, self.beats.get(o, 0)) for o, (a, st) in self.members.items()]
        rows = [PartitionLease(p, o, self.epochs.get(p, 0), self.since.get(p, 0)) for p, o in self.owners.items()]
        return LeaseTable.of(members, rows)

    async def take(self, owner: str, expected: dict[int, int], now_unix_ms: int, lease_ms: int) -> dict[int, Taken]:
        table = self._table()
        taken = {}
        for p, epoch in sorted(expected.items()):
            holder = table.holder(p, now_unix_ms, lease_ms)
            if self.epochs.get(p, 0) != epoch or (holder is not None and holder.owner != owner):
                continue
            previous = self.owners.get(p)
            alive = self.since.get(p) if not previous else self.beats.get(previous)
            self.epochs[p], self.owners[p], self.since[p] = epoch + 1, owner, now_unix_ms
            taken[p] = Taken(epoch + 1, alive if previous is not None else None)
        return taken

    async def release(self, owner: str, epochs: dict[int, int], now_unix_ms: int, to: str = "") -> None:
        for p, epoch in epochs.items():
            if self.owners.get(p) == owner and self.epochs.get(p) == epoch:
                self.epochs[p], self.owners[p], self.since[p] = epoch + 1, to, now_unix_ms

    async def set_state(self, owner: str, state: MemberState) -> None:
        address, _ = self.members.get(owner, ("", state))
        self.members[owner] = (address, state)

    async def last_heartbeat(self, partitions: list[int]) -> int | None:
        beats = [self.beats[self.owners[p]] for p in partitions if self.owners.get(p) in self.beats]
        return max(beats, default=None)

    def _fence(self, partition: int, epoch: int) -> None:
        if self.epochs.get(partition, 0) != epoch:
            raise FencedOut(f"partition {partition} was claimed by {self.owners.get(partition)} (epoch moved on)")

    async def create(self, entry: MatchEntry, epoch: int) -> None:
        self._fence(entry.partition, epoch)
        if entry.match_id in self.matches:  # as the SQL log refuses it: a second create would wipe the first's log
            raise ValueError(f"match {entry.match_id} exists already")
        self.matches[entry.match_id] = entry
        self.logs[entry.match_id] = []
        self.progress[entry.match_id] = Progress()

    async def create_many(self, entries: list[MatchEntry], epochs: dict[int, int]) -> None:
        for entry in entries:
            self._fence(entry.partition, epochs.get(entry.partition, 0))
            if entry.match_id in self.matches:
                raise ValueError(f"match {entry.match_id} exists already")
        for entry in entries:
            await self.create(entry, epochs.get(entry.partition, 0))

    async def reschedule(self, match_id: str, partition: int, epoch: int, origin_unix_ms: int) -> None:
        self._fence(partition, epoch)
        if self.logs[match_id]:
            raise ValueError(f"match {match_id} has started: its origin stays")
        self.matches[match_id] = replace(self.matches[match_id], created_unix_ms=origin_unix_ms)

    async def append(self, match_id: str, partition: int, epoch: int, entry: LogEntry, progress: Progress) -> None:
        await self.append_all(match_id, partition, epoch, (entry,), progress)

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        self._fence(partition, epoch)
        log = self.logs[match_id]
        last = log[-1].seq if log else None
        for entry in entries:
            if last is not None and last >= entry.seq:
                raise ValueError(f"match {match_id}: seq {entry.seq} after {last}")
            last = entry.seq
        log.extend(entries)
        self.progress[match_id] = progress

    async def snapshot(self, match_id: str, partition: int, epoch: int, snapshot: Snapshot) -> None:
        self._fence(partition, epoch)
        self.snapshots[match_id] = snapshot

    async def unfinished(self, partitions: list[int]) -> list[Stored]:
        wanted = set(partitions)
        return [
            self._stored(match_id)
            for match_id, entry in self.matches.items()
            if entry.partition in wanted and self.progress[match_id].status == "in_progress"
        ]

    async def load(self, match_id: str) -> Stored | None:
        return self._stored(match_id) if match_id in self.matches else None

    def _stored(self, match_id: str) -> Stored:
        entry = self.matches[match_id]
        snap = self.snapshots.get(match_id)
        if snap is not None and not snap.current:
            snap = None  # an older code's snapshot: the whole log instead, as the SQL storage reads it
        after = tuple(e for e in self.logs[match_id] if snap is None or e.seq > snap.seq)
        return Stored(entry, snap, after, self.progress[match_id])

    async def log(self, match_id: str) -> list[LogEntry]:
        return list(self.logs.get(match_id, []))

    async def close(self) -> None:
        return None
