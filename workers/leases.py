"""Partition leases as the database holds them, and the plan every worker derives from them (pure).

A worker holds a partition while the partition's row names it and its own heartbeat (the `workers` row)
is younger than the lease; every write of the partition's matches carries the row's epoch (fencing), so
a worker whose lease ran out can no longer change anything. A partition row with an empty owner was
released in a hand-off. Every live worker derives the same target owner for each partition from the
same table (`targets`): current owners keep what they hold up to an even share, the rest goes to the
least loaded live worker, ties broken by rendezvous hashing. So a worker joining takes an even share from
the others, a worker leaving spreads only its own partitions, and nothing else moves.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from workers.errors import NotOwner, ServiceError
from workers.partitions import PARTITIONS


class MemberState(StrEnum):
    ACTIVE = "active"
    DRAINING = "draining"
    """Handing its partitions over before it stops: holds what it has, takes nothing more."""
    GONE = "gone"
    """Left after handing everything over."""
    DOWN = "down"
    """Marked by a gateway that could not reach it: it stops serving at its next heartbeat."""


class LeaseLost(ServiceError):
    """This worker's heartbeat was refused: it was marked down (or gone), so it may hold nothing."""

    code = NotOwner.code  # the same refusal as NotOwner's
    status = NotOwner.status


@dataclass(frozen=True, slots=True)
class Member:
    owner: str
    address: str
    state: MemberState
    heartbeat_unix_ms: int

    def fresh(self, now_unix_ms: int, lease_ms: int) -> bool:
        """Its leases still hold: it renewed them within the lease."""
        return now_unix_ms - self.heartbeat_unix_ms <= lease_ms

    def live(self, now_unix_ms: int, lease_ms: int) -> bool:
        """It takes partitions: active and fresh."""
        return self.state is MemberState.ACTIVE and self.fresh(now_unix_ms, lease_ms)


@dataclass(frozen=True, slots=True)
class PartitionLease:
    partition: int
    owner: str
    """Empty: released."""
    epoch: int
    since_unix_ms: int
    """When it was last claimed, or released."""


@dataclass(frozen=True, slots=True)
class Taken:
    """A partition just claimed: the epoch its writes carry, and when it was last served before
    (released at, or its previous owner's last heartbeat; None if nobody ever held it)."""

    epoch: int
    last_alive_unix_ms: int | None


@dataclass(frozen=True, slots=True)
class LeaseTable:
    """The `workers` and `partitions` rows, read in one transaction (by owner, by partition)."""

    members: Mapping[str, Member]
    partitions: Mapping[int, PartitionLease]

    @staticmethod
    def of(members: Iterable[Member], partitions: Iterable[PartitionLease]) -> LeaseTable:
        return LeaseTable({m.owner: m for m in members}, {p.partition: p for p in partitions})

    def member(self, owner: str) -> Member | None:
        return self.members.get(owner)

    def lease(self, partition: int) -> PartitionLease | None:
        return self.partitions.get(partition)

    def live(self, now_unix_ms: int, lease_ms: int) -> list[Member]:
        return sorted((m for m in self.members.values() if m.live(now_unix_ms, lease_ms)), key=lambda m: m.owner)

    def holder(self, partition: int, now_unix_ms: int, lease_ms: int) -> Member | None:
        """Who serves this partition now (a fresh owner), or None: released, expired, never claimed."""
        lease = self.lease(partition)
        owner = self.member(lease.owner) if lease is not None and lease.owner else None
        return owner if owner is not None and owner.fresh(now_unix_ms, lease_ms) else None

    def claimable(self, partition: int, now_unix_ms: int, lease_ms: int) -> bool:
        return self.holder(partition, now_unix_ms, lease_ms) is None

    def held_by(self, owner: str) -> list[int]:
        return sorted(p.partition for p in self.partitions.values() if p.owner == owner)

    def standing(self, now_unix_ms: int, lease_ms: int) -> tuple[tuple[str, bool, bool], ...]:
        """Each member's owner, whether it is live and whether it is fresh: with the partitions, all that
        `plan` and `holder` read of the table at `now_unix_ms`."""
        members = self.members.values()
        return tuple(sorted((m.owner, m.live(now_unix_ms, lease_ms), m.fresh(now_unix_ms, lease_ms)) for m in members))


@functools.lru_cache(maxsize=1 << 16)
def rank(partition: int, owner: str) -> int:
    """Rendezvous hashing: how much `owner` is preferred for `partition` (stable across processes)."""
    digest = hashlib.blake2b(f"{partition}:{owner}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def targets(table: LeaseTable, now_unix_ms: int, lease_ms: int, partitions: int = PARTITIONS) -> dict[int, str]:
    """The owner every live worker agrees each partition should have (empty: no live worker). Shares
    differ by one at most; the larger shares go to the workers holding the most already (fewer moves)."""
    live = [m.owner for m in table.live(now_unix_ms, lease_ms)]
    if not live:
        return {}
    held: dict[str, list[int]] = defaultdict(list)
    for lease in table.partitions.values():
        if lease.owner in live and lease.partition < partitions:
            held[lease.owner].append(lease.partition)
    base, extra = divmod(partitions, len(live))
    by_holding = sorted(live, key=lambda o: (-len(held[o]), o))
    share = {owner: base + (1 if i < extra else 0) for i, owner in enumerate(by_holding)}
    load = dict.fromkeys(live, 0)
    target: dict[int, str] = {}
    for owner, mine in held.items():
        for _, partition in sorted((-rank(p, owner), p) for p in mine)[: share[owner]]:
            target[partition] = owner
            load[owner] += 1
    for partition in range(partitions):
        if partition not in target:
            room = [o for o in live if load[o] < share[o]]
            owner = min((load[o] - share[o], -rank(partition, o), o) for o in room)[2]
            target[partition] = owner
            load[owner] += 1
    return target


@dataclass(frozen=True, slots=True)
class Plan:
    take: tuple[int, ...]
    """Free partitions (released, expired, never claimed) whose target is this worker."""
    give: tuple[tuple[int, str], ...]
    """Partitions this worker holds whose target is another worker: (partition, to whom)."""


_PLANS: dict[tuple[int, str, int, tuple[tuple[str, bool, bool], ...]], tuple[Mapping[int, PartitionLease], Plan]] = {}
"""Plans made, by the partitions they were made from (the very mapping: a storage hands out the same one
while its partitions have not changed), the worker, and the members' standing. Every worker plans every
beat, and an idle cluster's table stays as it was: a plan made once serves until something changes."""
_KEPT_PLANS = 16


def plan(table: LeaseTable, me: str, now_unix_ms: int, lease_ms: int, partitions: int = PARTITIONS) -> Plan:
    """What `me` should do next. A draining worker is not live, so everything it holds is to give."""
    key = (id(table.partitions), me, partitions, table.standing(now_unix_ms, lease_ms))
    made = _PLANS.get(key)
    if made is not None and made[0] is table.partitions:  # the mapping is kept with it: its id is not reused
        return made[1]
    target = targets(table, now_unix_ms, lease_ms, partitions)
    take = tuple(p for p, o in sorted(target.items()) if o == me and table.claimable(p, now_unix_ms, lease_ms))
    give = tuple((p, target[p]) for p in table.held_by(me) if p in target and target[p] != me)
    made_now = Plan(take, give)
    if len(_PLANS) >= _KEPT_PLANS:
        _PLANS.clear()
    _PLANS[key] = (table.partitions, made_now)
    return made_now
