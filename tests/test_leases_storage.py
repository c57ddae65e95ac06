"""The lease operations of every store (memory, SQLite, PostgreSQL): join, heartbeat, take as a
compare-and-set on the epoch (only a free partition: released, expired, never claimed), release,
marking down; and fencing: once a partition was taken or released, its old owner can write nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.storage_backends import BACKENDS, Backend, backend_for, run
from workers.leases import LeaseLost, MemberState, PartitionLease, Taken
from workers.storage import FencedOut, LogEntry, MatchEntry, Progress

LEASE = 500
T0 = 1_700_000_000_000


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


def test_take_is_a_compare_and_set_on_free_partitions(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        try:
            await store.join("a", "10.0.0.1:1", T0)
            await store.join("b", "10.0.0.2:1", T0)
            assert await store.take("a", {3: 0, 4: 0}, T0, LEASE) == {3: Taken(1, None), 4: Taken(1, None)}
            assert await store.take("b", {3: 0}, T0, LEASE) == {}  # expected epoch 0: moved on
            assert await store.take("b", {3: 1}, T0 + 100, LEASE) == {}  # a's lease holds
            await asyncio.to_thread(store.beat, "b", T0 + LEASE + 1)  # b is alive, a's heartbeat is old
            taken = await store.take("b", {3: 1}, T0 + LEASE + 1, LEASE)
            assert taken == {3: Taken(2, T0)}  # a crashed: unserved since its last heartbeat
            table = await store.leases()
            assert (table.lease(3).owner, table.lease(3).epoch) == ("b", 2)  # type: ignore[union-attr]
            assert table.member("a").address == "10.0.0.1:1"  # type: ignore[union-attr]
        finally:
            await store.close()

    run(body)


def test_release_frees_a_partition_and_fences_its_old_owner(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        try:
            await store.join("a", "a:1", T0)
            await store.join("b", "b:1", T0)
            epoch = (await store.take("a", {7: 0}, T0, LEASE))[7].epoch
            entry = MatchEntry("m1", "spectacular-bid", ("Ana", "Bia"), {}, (b"x" * 32, b"y" * 32), T0, 0, 7)
            await store.create(entry, epoch)
            await store.release("a", {7: epoch}, T0 + 10)
            with pytest.raises(FencedOut):  # nothing of it can be written by its old owner any more
                await store.append("m1", 7, epoch, LogEntry(1, 1, "deadline", None, {}, 0), Progress())
            assert await store.take("b", {7: epoch + 1}, T0 + 20, LEASE) == {7: Taken(epoch + 2, T0 + 10)}
            assert await store.take("a", {7: epoch + 1}, T0 + 30, LEASE) == {}  # b won
        finally:
            await store.close()

    run(body)


def test_a_worker_marked_down_loses_its_heartbeat(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        try:
            await store.join("a", "a:1", T0)
            await asyncio.to_thread(store.beat, "a", T0 + 1)
            assert (await store.leases()).member("a").state is MemberState.ACTIVE  # type: ignore[union-attr]
            await store.set_state("a", MemberState.DRAINING)
            await asyncio.to_thread(store.beat, "a", T0 + 2)  # a draining worker still holds its leases
            await store.set_state("a", MemberState.DOWN)
            with pytest.raises(LeaseLost):
                await asyncio.to_thread(store.beat, "a", T0 + 3)
            member = (await store.leases()).member("a")
            assert member is not None and member.heartbeat_unix_ms == T0 + 2  # the heartbeat stopped there
        finally:
            await store.close()

    run(body)


def test_a_worker_takes_back_what_it_still_holds_on_paper(backend: Backend) -> None:
    """After its leases ran out (its heartbeats did not get through) nobody took its partitions: it may."""

    async def body() -> None:
        store = await backend.open()
        try:
            await store.join("a", "a:1", T0)
            epoch = (await store.take("a", {9: 0}, T0, LEASE))[9].epoch
            await asyncio.to_thread(store.beat, "a", T0 + 100)
            assert (await store.take("a", {9: epoch}, T0 + 200, LEASE))[9].epoch == epoch + 1
        finally:
            await store.close()

    run(body)


def test_a_read_sees_every_change_another_process_makes_and_reuses_the_partitions_otherwise(backend: Backend) -> None:
    """A SQL store reads its partitions again only once their signature (count, sum of epochs) moved:
    every take, release and claim by another connection shows at the next read; a heartbeat shows too,
    and leaves the partitions as they were read (the same mapping, not read again)."""

    async def body() -> None:
        reader, writer = await backend.open(), await backend.open()
        try:
            await writer.join("a", "a:1", T0)
            await writer.join("b", "b:1", T0)
            assert dict((await reader.leases()).partitions) == {}
            await writer.take("a", {1: 0, 2: 0}, T0, LEASE)
            taken = await reader.leases()
            assert dict(taken.partitions) == {1: PartitionLease(1, "a", 1, T0), 2: PartitionLease(2, "a", 1, T0)}
            await asyncio.to_thread(writer.beat, "b", T0 + 5)
            beaten = await reader.leases()
            assert beaten.member("b").heartbeat_unix_ms == T0 + 5  # type: ignore[union-attr]
            if backend.url is not None:
                assert beaten.partitions is taken.partitions  # unchanged: not read again
            await writer.release("a", {1: 1}, T0 + 10)
            assert (await reader.leases()).lease(1) == PartitionLease(1, "", 2, T0 + 10)
            await writer.claim("b", [2, 3])
            claimed = await reader.leases()
            assert [(p.partition, p.owner, p.epoch) for p in sorted(claimed.partitions.values(),
                                                                     key=lambda p: p.partition)] == [
                (1, "", 2), (2, "b", 2), (3, "b", 1)]  # fmt: skip
        finally:
            await reader.close()
            if writer is not reader:
                await writer.close()

    run(body)
