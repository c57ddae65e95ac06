"""The lease plan (workers/leases.py, pure): every live worker derives the same target for each partition;
shares are even; a worker joining takes an even share and nothing else moves; a worker leaving or
crashing spreads only its own partitions; draining and stale workers get nothing."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from workers.leases import LeaseTable, Member, MemberState, PartitionLease, plan, targets

P = 256
LEASE = 500
NOW = 1_000_000


def member(owner: str, state: MemberState = MemberState.ACTIVE, age: int = 0) -> Member:
    return Member(owner, f"{owner}:1", state, NOW - age)


def table(members: list[Member], owners: dict[int, str]) -> LeaseTable:
    return LeaseTable.of(members, [PartitionLease(p, o, 1, NOW) for p, o in owners.items()])


def settled(names: list[str]) -> dict[int, str]:
    """Where partitions end up when `names` start together on an empty table."""
    return targets(table([member(n) for n in names], {}), NOW, LEASE, P)


names = st.lists(st.text("abcdefgh", min_size=1, max_size=6), min_size=1, max_size=8, unique=True)


@given(names)
@settings(max_examples=200, deadline=None)
def test_shares_are_even(owners: list[str]) -> None:
    loads = Counter(settled(owners).values())
    assert set(loads) == set(owners)
    assert max(loads.values()) - min(loads.values()) <= 1
    assert sum(loads.values()) == P


@given(names, st.text("xyz", min_size=1, max_size=4))
@settings(max_examples=200, deadline=None)
def test_a_worker_joining_takes_an_even_share_and_nothing_else_moves(owners: list[str], newcomer: str) -> None:
    if newcomer in owners:
        return
    before = settled(owners)
    after = targets(table([member(n) for n in [*owners, newcomer]], before), NOW, LEASE, P)
    moved = {p for p in range(P) if before[p] != after[p]}
    assert all(after[p] == newcomer for p in moved)  # only moves to the newcomer
    loads = Counter(after.values())
    assert max(loads.values()) - min(loads.values()) <= 1


@given(names.filter(lambda n: len(n) >= 2), st.data())
@settings(max_examples=200, deadline=None)
def test_a_worker_leaving_spreads_only_its_own_partitions(owners: list[str], data: st.DataObject) -> None:
    before = settled(owners)
    leaving = data.draw(st.sampled_from(owners))
    state = data.draw(st.sampled_from([MemberState.DRAINING, MemberState.GONE, MemberState.ACTIVE]))
    age = LEASE + 1 if state is MemberState.ACTIVE else 0  # crashed: its heartbeat is too old
    members = [member(n) for n in owners if n != leaving] + [member(leaving, state, age)]
    after = targets(table(members, before), NOW, LEASE, P)
    assert leaving not in after.values()
    assert all(after[p] == before[p] for p in range(P) if before[p] != leaving)
    loads = Counter(after.values())
    assert max(loads.values()) - min(loads.values()) <= 1


def test_every_worker_derives_the_same_plan_and_takes_only_free_partitions() -> None:
    members = [member("a"), member("b"), member("c", age=LEASE + 1)]
    owners = {p: "a" for p in range(0, 100)} | {p: "c" for p in range(100, 200)}  # c crashed
    lease_table = table(members, owners)
    a, b = plan(lease_table, "a", NOW, LEASE, P), plan(lease_table, "b", NOW, LEASE, P)
    target = targets(lease_table, NOW, LEASE, P)
    assert set(a.take) | set(b.take) == {p for p in range(100, P)}  # c's and the never-claimed ones
    assert not set(a.take) & set(b.take)
    assert all(target[p] == "b" for p, _ in a.give)  # a holds more than its share: gives to b
    assert b.give == ()


def test_a_draining_worker_gives_everything_and_takes_nothing() -> None:
    members = [member("a", MemberState.DRAINING), member("b")]
    owners = {p: "a" for p in range(10)} | {p: "" for p in range(10, 20)}
    todo = plan(table(members, owners), "a", NOW, LEASE, P)
    assert todo.take == () and {p for p, _ in todo.give} == set(range(10))
    assert {to for _, to in todo.give} == {"b"}


def test_nobody_live_means_no_target() -> None:
    assert targets(table([member("a", age=LEASE + 1)], {}), NOW, LEASE, P) == {}


@given(names, st.integers(0, 3 * LEASE), st.sampled_from(list(MemberState)))
@settings(max_examples=200, deadline=None)
def test_a_plan_kept_for_the_same_partitions_is_the_plan_made_afresh(owners: list[str], later: int,
                                                                   state: MemberState) -> None:  # fmt: skip
    """`plan` keeps what it made for a partitions mapping it saw (a SQL board hands out the same one while
    nothing changed): read again with the members' heartbeats older, or one member's state changed, it
    answers what a plan of an equal table made afresh answers."""
    held = {p: owners[p % len(owners)] for p in range(0, P, 3)}
    first = table([member(n) for n in owners], held)
    for me in owners:
        assert plan(first, me, NOW + 1, LEASE, P) is plan(first, me, NOW, LEASE, P)  # kept, not made again
    aged = [member(n, state if i == 0 else MemberState.ACTIVE, age=later if i % 2 else 0) for i, n in enumerate(owners)]
    same_partitions = LeaseTable({m.owner: m for m in aged}, first.partitions)
    fresh = table(aged, held)
    for me in owners:
        assert plan(same_partitions, me, NOW, LEASE, P) == plan(fresh, me, NOW, LEASE, P)
