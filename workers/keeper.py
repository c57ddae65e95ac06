"""A worker's leases, kept: it heartbeats, takes the free partitions the plan gives it, hands over the
ones the plan gives another worker (one at a time), drains on SIGTERM, and stops serving everything the
moment its leases may have run out (before any other worker may take them over).

Timing (`LeaseSettings`): a heartbeat every `beat_ms`, from a thread of its own (a busy event loop never
lets a lease run out; a loop stuck for `STUCK_S` stops the heartbeats, so its partitions go to others); a
lease lasts `lease_ms` from the heartbeat that renewed it, as other workers read the heartbeat; this
worker stops serving `beat_ms` earlier by its own clock (wall clocks may differ by less than that), so it
has stopped before anyone else may start.
A hand-off: the old owner refuses the partition's new commands (saying where it went), lets the ones in
its matches' mailboxes finish, releases the lease (the epoch moves on: nothing more of it can be written
by the old owner) and tells the new owner to take it, which loads only that partition's matches.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from protos.tablehall.v1 import host_pb2, host_pb2_grpc
from workers import metrics
from workers.dial import dial
from workers.host import MatchHost
from workers.leases import LeaseLost, LeaseTable, MemberState, plan, targets
from workers.loop_first import HEARTBEAT_THREAD

log = logging.getLogger("tablehall.leases")

STUCK_S = 5.0
"""An event loop that has not turned for this long is stuck: the heartbeat thread stops renewing."""


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    lease_ms: int
    """How long a lease holds after the heartbeat that renewed it."""

    @property
    def beat_ms(self) -> int:
        return max(20, self.lease_ms // 5)


class LeaseKeeper:
    def __init__(
        self,
        host: MatchHost,
        address: str,
        settings: LeaseSettings,
        *,
        on_down: Callable[[], None] | None = None,
    ) -> None:
        self.host = host
        self.storage = host.storage
        self.owner = host.owner
        self.address = address
        self.settings = settings
        self.on_down = on_down
        """Called once a gateway marked this worker down (its process should end: it cannot be reached)."""
        self.table: LeaseTable | None = None
        self.draining = False
        self.taking = asyncio.Lock()
        self.giving: asyncio.Task[None] | None = None
        self.leaving: set[int] = set()
        """Partitions in the middle of a hand-off (the heartbeat leaves them alone)."""
        self.unreleased: dict[int, int] = {}
        """Partitions closed here whose release could not be written yet (epoch at release)."""
        self.down = False
        self.taken_at: dict[int, float] = {}
        """When each partition's take was committed (monotonic): tables read before that do not know it."""
        self.lost_at: int | None = None
        """When this worker stopped serving because its leases ran out (the outage of what it takes back)."""
        self._expiry: asyncio.TimerHandle | None = None
        self._rescuing: asyncio.Future[None] | None = None
        self._renewed_until = 0.0
        """Until when a heartbeat sent after the leases had run out would extend them: the rescue extends
        them only once the table shows nobody took a partition meanwhile."""
        self._acting: asyncio.Task[None] | None = None
        self._peers: dict[str, grpc.aio.Channel] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._turned = time.monotonic()
        """When the event loop last turned (the heartbeat thread renews only while it does)."""
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def lease_ms(self) -> int:
        return self.settings.lease_ms

    async def start(self) -> None:
        """Join (serving nothing yet), take what the plan gives this worker, then keep the leases."""
        self.host.held.clear()  # not the static share: under leases a worker serves only what it took
        self._loop = asyncio.get_running_loop()
        sent = time.monotonic()
        await self.storage.join(self.owner, self.address, self.host.clock())  # the first heartbeat
        self.host.valid_until = sent + (self.lease_ms - self.settings.beat_ms) / 1000
        await self.tick()
        self._loop.call_soon(self._turn)
        self._thread = threading.Thread(target=self._beat, name=HEARTBEAT_THREAD, daemon=True)
        self._thread.start()
        self._acting = asyncio.create_task(self._run())

    def _turn(self) -> None:
        """The event loop turns: noted for the heartbeat thread, every beat."""
        self._turned = time.monotonic()
        if not self._stop.is_set() and self._loop is not None:
            self._loop.call_later(self.settings.beat_ms / 1000, self._turn)

    def _beat(self) -> None:
        """The heartbeat thread: renew every beat while the event loop turns. A heartbeat that got through
        extends this worker's leases at once (`host.valid_until`), whatever the loop is doing — unless they
        had run out before it was sent (the process was stopped, or starved): a peer may have taken them
        meanwhile, so the loop's `_rescue` reads the table before it extends them."""
        assert self._loop is not None
        due = time.monotonic()
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            late = time.monotonic() - due
            if late * 1000 > self.settings.beat_ms:
                log.warning("%s: a heartbeat started %.0f ms late (the process did not get the CPU)", self.owner,
                            late * 1e3)  # fmt: skip
            due = max(due + self.settings.beat_ms / 1000, time.monotonic())  # a steady cadence, late or not
            if time.monotonic() - self._turned > STUCK_S:
                continue  # a stuck loop serves nobody: let the leases run out
            try:
                self._renew()
            except LeaseLost as error:
                with contextlib.suppress(RuntimeError):  # the loop is closed: the process is ending
                    self._loop.call_soon_threadsafe(self._down, str(error))
                return
            except Exception as error:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._failed, error)

    def _renew(self) -> None:
        sent = time.monotonic()
        lapsed = bool(self.host.held) and sent >= self._until()  # ran out before this beat: taken meanwhile?
        self.storage.beat(self.owner, self.host.clock())
        until = sent + (self.lease_ms - self.settings.beat_ms) / 1000
        if lapsed:
            self._renewed_until = until
            assert self._loop is not None
            with contextlib.suppress(RuntimeError):  # the loop is closed: the process is ending
                self._loop.call_soon_threadsafe(self._expired)
        else:
            self.host.valid_until = until
        took = time.monotonic() - sent
        if took * 1000 > self.settings.beat_ms:
            log.warning("%s: a heartbeat took %.0f ms (a lease lasts %d ms)", self.owner, took * 1e3, self.lease_ms)

    def _failed(self, error: Exception) -> None:
        log.warning("%s: heartbeat failed (%s); leases hold until %.3f", self.owner, error, self._until())

    async def _run(self) -> None:
        """Every beat: read the lease table and act on it (the heartbeats themselves go on in their thread)."""
        while not self.down:
            await asyncio.sleep(self.settings.beat_ms / 1000)  # the table's cadence
            self._arm_expiry()
            read_at = time.monotonic()
            try:
                table = await self.storage.leases()
            except Exception as error:
                log.warning("%s: reading the lease table failed (%s)", self.owner, error)
                continue
            self.table = table
            await self._act(table, read_at)

    async def tick(self) -> None:
        """One round on a fresh table, from the loop (at the start, and in a drain; the heartbeats are the
        heartbeat thread's alone)."""
        read_at = time.monotonic()
        self.table = await self.storage.leases()
        self._arm_expiry()
        await self._act(self.table, read_at)

    async def _act(self, table: LeaseTable, read_at: float) -> None:
        """Drop what is no longer ours, then take and give as the plan says (`read_at`: when the table
        was read, monotonic)."""
        try:
            await self._plan(table, read_at)
        except Exception:
            log.exception("%s: acting on the lease table failed; the next round tries again", self.owner)

    async def _plan(self, table: LeaseTable, read_at: float) -> None:
        now = self.host.clock()
        self._forget(table, read_at)
        if self.unreleased:
            await self._release(dict(self.unreleased))
        if self.draining:
            return
        mine = {p: lease.epoch for p in table.held_by(self.owner) if (lease := table.lease(p)) is not None}
        busy = set(self.host.held) | self.leaving | set(self.unreleased)
        back = {p: e for p, e in mine.items() if p not in busy}
        todo = plan(table, self.owner, now, self.lease_ms)
        wanted = {p: lease.epoch if (lease := table.lease(p)) is not None else 0 for p in todo.take}
        if back or wanted:
            await self.take({**wanted, **back}, table)
        if todo.give and (self.giving is None or self.giving.done()):
            self.giving = asyncio.create_task(self._rebalance())

    async def _rebalance(self) -> None:
        """Give away, one at a time, what the newest table says belongs to another worker now."""
        while not self.draining and self.table is not None:
            todo = plan(self.table, self.owner, self.host.clock(), self.lease_ms)
            give = [(p, to) for p, to in todo.give if p in self.host.held and p not in self.leaving]
            if not give:
                return
            await self.hand_off(*give[0], "rebalance")

    def _forget(self, table: LeaseTable, read_at: float) -> None:
        """Partitions served here that the table no longer leases to this worker at their epoch (a table
        read before this worker took a partition says nothing of it)."""
        for partition, held in list(self.host.held.items()):
            if self.taken_at.get(partition, 0.0) > read_at:
                continue
            lease = table.lease(partition)
            if lease is None or lease.owner != self.owner or lease.epoch != held.epoch:
                self.host.lose(partition, "is no longer leased to this worker")
                metrics.LEASE_LOSSES.labels("fenced").inc()

    async def take(self, expected: dict[int, int], table: LeaseTable | None = None) -> list[int]:
        """Claim these partitions (at their expected epochs) and serve them; returns those now served."""
        async with self.taking:
            expected = {p: e for p, e in expected.items() if p not in self.host.held}
            if not expected:
                return []
            now = self.host.clock()
            taken = await self.storage.take(self.owner, expected, now, self.lease_ms)
            committed = time.monotonic()
            for partition in taken:
                self.taken_at[partition] = committed
            if not taken:
                return []
            last_alive = {p: t.last_alive_unix_ms for p, t in taken.items()}
            crashed = []
            for p in taken:
                lease = table.lease(p) if table is not None else None
                if lease is not None and lease.owner == self.owner and self.lost_at is not None:
                    last_alive[p] = self.lost_at  # taken back after this worker's own leases ran out
                elif lease is not None and lease.owner and lease.owner != self.owner:
                    crashed.append(p)
            started = asyncio.get_running_loop().time()
            await self.host.acquire({p: t.epoch for p, t in taken.items()}, last_alive)
            if crashed:
                worst = max((now - a for p in crashed if (a := last_alive[p]) is not None), default=0)
                metrics.HANDOFFS.labels("crash").inc(len(crashed))
                metrics.HANDOFF_SECONDS.labels("crash").observe(
                    worst / 1000 + asyncio.get_running_loop().time() - started
                )
                log.warning("%s took over %d partitions of a worker that stopped (unserved %d ms)",
                            self.owner, len(crashed), worst)  # fmt: skip
            return sorted(taken)

    async def hand_off(self, partition: int, to: str, kind: str) -> None:
        """Give one partition to worker `to`: refuse, settle, close, release, tell it to take it."""
        held = self.host.held.get(partition)
        member = self.table.member(to) if self.table is not None else None
        if held is None or member is None:
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        self.leaving.add(partition)
        steps = [loop.time()]
        try:
            await self._tell(member.address, partition, held.epoch, expect=True)
            steps.append(loop.time())
            refusing = self.host.clock()
            await self.host.release(partition, moved_to=member.address)
            steps.append(loop.time())
            await self._release({partition: held.epoch}, to=to)
            steps.append(loop.time())
        finally:
            self.leaving.discard(partition)
        served = False
        if partition not in self.unreleased:
            served = await self._tell(member.address, partition, held.epoch + 1, since=refusing, kind=kind)
        steps.append(loop.time())
        took = loop.time() - started
        if served:
            spent = "/".join(f"{(b - a) * 1000:.0f}" for a, b in itertools.pairwise(steps))
            # a hand-off that used a good part of the tolerance is worth an operator's look, with where it went
            level = logging.WARNING if took * 1000 > self.host.tolerance_ms / 4 else logging.DEBUG
            log.log(level, "%s handed partition %d to %s (%s) in %.1f ms (expect/settle/write/take %s ms)",
                    self.owner, partition, to, kind, took * 1000, spent)  # fmt: skip
        else:
            log.warning("%s released partition %d for %s (%s), which did not confirm: whoever the table gives it "
                        "to takes it", self.owner, partition, to, kind)  # fmt: skip

    async def _release(self, epochs: dict[int, int], to: str = "") -> None:
        """Give these partitions up in the lease table (to worker `to`, or to whoever takes them)."""
        try:
            await self.storage.release(self.owner, epochs, self.host.clock(), to)
        except Exception as error:
            log.warning("%s: releasing partitions %s failed (%s); trying again", self.owner, sorted(epochs), error)
            self.unreleased.update(epochs)
            return
        for partition in epochs:
            self.unreleased.pop(partition, None)

    async def _tell(
        self, address: str, partition: int, epoch: int, expect: bool = False, since: int = 0, kind: str = ""
    ) -> bool:
        """Tell the new owner to serve the partition, which the table gives it at `epoch` (`expect`: to
        hold its requests, it is coming)."""
        channel = self._peers.get(address)
        if channel is None:
            channel = self._peers[address] = dial(address)
        try:
            reply = await host_pb2_grpc.MatchHostStub(channel).Take(
                host_pb2.TakeRequest(partition=partition, epoch=epoch, expect=expect, since_unix_ms=since, kind=kind),
                timeout=self.lease_ms / 1000 * 4,
            )
        except grpc.aio.AioRpcError as error:
            log.warning("%s: %s did not take partition %d (%s)", self.owner, address, partition, error.code().name)
            if error.code() is grpc.StatusCode.UNAVAILABLE:
                stale = self._peers.pop(address, None)  # dial afresh next time: a peer may start again there
                if stale is not None:
                    await stale.close()
            return False
        return bool(reply.serving)

    async def accept(self, partition: int, epoch: int, expect: bool = False, since: int = 0, kind: str = "") -> bool:
        """A peer handed this partition to this worker (the table names it at `epoch`): serve it now, and
        count the hand-off (`kind`; since `since`, when the giver stopped taking its commands). `expect`: it
        is about to; hold the partition's requests until then."""
        if self.draining:
            return False
        if expect:
            self.host.expect(partition)
            return True
        async with self.taking:
            if partition not in self.host.held:
                self.taken_at[partition] = time.monotonic()
                await self.host.acquire({partition: epoch}, {partition: since or self.host.clock()})
                if kind in metrics.HANDOFF_KINDS:
                    metrics.HANDOFFS.labels(kind).inc()
                    metrics.HANDOFF_SECONDS.labels(kind).observe(max(0, self.host.clock() - since) / 1000)
        return partition in self.host.held

    async def drain(self) -> int:
        """Hand every partition to live peers, one at a time, then leave. Returns how many were handed."""
        self.draining = True
        began = asyncio.get_running_loop().time()
        if self.giving is not None:
            with contextlib.suppress(Exception):
                await self.giving
        await self.storage.set_state(self.owner, MemberState.DRAINING)
        handed = 0
        while self.host.held:
            await self.tick()  # a fresh table: peers that joined or died meanwhile
            if not self.host.held:  # its leases ran out meanwhile: nothing left to hand over
                break
            table, now = self.table, self.host.clock()
            target = targets(table, now, self.lease_ms) if table is not None else {}
            partition = min(self.host.held)
            if partition not in target:  # no live peer: let everything go at once, for whoever comes next
                epochs = {p: h.epoch for p, h in self.host.held.items()}
                for p in list(epochs):
                    await self.host.release(p)
                await self._release(epochs)
                break
            await self.hand_off(partition, target[partition], "drain")
            handed += 1
        self._stop.set()  # it holds nothing: no more heartbeats (a "gone" worker's would be refused)
        with contextlib.suppress(Exception):
            await self.storage.set_state(self.owner, MemberState.GONE)
        log.info("%s drained: %d partitions handed to live peers in %.1f s", self.owner, handed,
                 asyncio.get_running_loop().time() - began)  # fmt: skip
        return handed

    def _arm_expiry(self) -> None:
        """The moment this worker must stop serving, unless a heartbeat gets through before it."""
        until = self._until()
        if self._expiry is not None:
            self._expiry.cancel()
        if self._loop is not None and until:
            self._expiry = self._loop.call_at(until, self._expired)

    def _until(self) -> float:
        return self.host.valid_until or 0.0

    def _expired(self) -> None:
        """The leases ran out by this worker's clock: it stops answering (`host.valid_until` has passed, so
        every request is refused and sent elsewhere or again); whether it lost its partitions is settled
        by `_rescue`."""
        if time.monotonic() < self._until():  # renewed meanwhile by the heartbeat thread
            self._arm_expiry()
            return
        if self.host.held and (self._rescuing is None or self._rescuing.done()):
            self._rescuing = asyncio.ensure_future(self._rescue())

    async def _rescue(self) -> None:
        """A late heartbeat is not a lost lease: if the next one gets through and the table still gives every
        partition to this worker at the epoch it holds, nobody took any (a take moves the epoch on, and the
        fresh heartbeat stops anyone from taking now): it answers again with nothing lost. Otherwise it
        lets its partitions go (any write it still had under way is fenced). Until then it answers nobody."""
        give_up = time.monotonic() + self.lease_ms / 1000
        while time.monotonic() >= self._renewed_until and time.monotonic() < give_up:
            await asyncio.sleep(self.settings.beat_ms / 5000)  # the heartbeat thread's next try
        table = None
        if time.monotonic() < self._renewed_until:
            with contextlib.suppress(Exception):
                table = await asyncio.wait_for(self.storage.leases(), self.lease_ms / 1000)
        held = {p: h.epoch for p, h in self.host.held.items() if p not in self.leaving}  # a hand-off moves its own
        intact = table is not None and all(
            (lease := table.lease(p)) is not None and lease.owner == self.owner and lease.epoch == epoch
            for p, epoch in held.items()
        )
        if intact:
            log.warning("%s: a heartbeat was late, but nobody took its partitions: it answers again", self.owner)
            self.host.valid_until = max(self._until(), self._renewed_until)
            self._arm_expiry()
            return
        log.error("%s: no heartbeat got through for a lease; stops serving its %d partitions",
                  self.owner, len(self.host.held))  # fmt: skip
        metrics.LEASE_LOSSES.labels("expired").inc()
        self.lost_at = self.host.clock()
        for partition in list(self.host.held):
            self.host.lose(partition, "lease ran out")

    def _down(self, why: str) -> None:
        if self.down or (self.draining and not self.host.held):  # it left on purpose
            return
        self.down = True
        self._stop.set()
        log.error("%s: %s; stops serving", self.owner, why)
        if self.host.held:
            metrics.LEASE_LOSSES.labels("down").inc()
        for partition in list(self.host.held):
            self.host.lose(partition, f"cannot be held: {why}")
        if self.on_down is not None:
            self.on_down()

    async def stop(self) -> None:
        self.down = True
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        if self._acting is not None:
            self._acting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._acting
        if self._expiry is not None:
            self._expiry.cancel()
        for channel in self._peers.values():
            await channel.close()
