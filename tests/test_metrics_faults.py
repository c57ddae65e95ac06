"""Faults in process, read from the process's registry: a late deadline timer (timer lateness observed,
voided `timer_late`, fault counted), a worker restarting after a long outage (`worker_down`), a failing
log append (`storage_error`), and a timer on time (lateness observed, no fault)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from prometheus_client import REGISTRY

from tests.test_durability_timer import Clock, fire_at, running
from workers.actor import unix_ms
from workers.errors import Unavailable
from workers.host import MatchHost
from workers.storage import LogEntry, MemoryStorage, Progress

SB = "spectacular-bid"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_late_timer_observes_its_lateness_and_counts_a_timer_late_fault_and_void() -> None:
    below, above = (sample("tablehall_timer_lateness_seconds_bucket", game=SB, le=le) for le in ("2.5", "5.0"))
    before = (
        sample("tablehall_timer_lateness_seconds_count", game=SB),
        sample("tablehall_timer_lateness_seconds_sum", game=SB),
        sample("tablehall_service_faults_total", kind="timer_late"),
        sample("tablehall_matches_voided_total", reason="timer_late"),
    )

    async def body() -> None:
        storage = MemoryStorage()
        clock = Clock()
        actor, deadline = await running(storage, clock)
        await fire_at(actor, clock, deadline + 3000)
        assert actor.match.void_reason == "timer_late"
        actor.close()

    asyncio.run(asyncio.wait_for(body(), 20))
    count, total, faults, voids = (
        sample("tablehall_timer_lateness_seconds_count", game=SB),
        sample("tablehall_timer_lateness_seconds_sum", game=SB),
        sample("tablehall_service_faults_total", kind="timer_late"),
        sample("tablehall_matches_voided_total", reason="timer_late"),
    )
    assert count == before[0] + 1
    assert total - before[1] == pytest.approx(3.0)
    assert (faults, voids) == (before[2] + 1, before[3] + 1)
    assert sample("tablehall_timer_lateness_seconds_bucket", game=SB, le="2.5") == below  # 3 s late
    assert sample("tablehall_timer_lateness_seconds_bucket", game=SB, le="5.0") == above + 1


def test_a_timer_on_time_is_observed_without_a_fault() -> None:
    before = sample("tablehall_timer_lateness_seconds_count", game=SB)
    faults = sample("tablehall_service_faults_total", kind="timer_late")
    within = sample("tablehall_timer_lateness_seconds_bucket", game=SB, le="0.25")

    async def body() -> None:
        storage = MemoryStorage()
        clock = Clock()
        actor, deadline = await running(storage, clock)
        await fire_at(actor, clock, deadline + 200)
        assert actor.match.void_reason is None
        actor.close()

    asyncio.run(asyncio.wait_for(body(), 20))
    assert sample("tablehall_timer_lateness_seconds_count", game=SB) == before + 1
    assert sample("tablehall_timer_lateness_seconds_bucket", game=SB, le="0.25") == within + 1
    assert sample("tablehall_service_faults_total", kind="timer_late") == faults


def test_recovery_after_a_long_outage_counts_worker_down() -> None:
    faults = sample("tablehall_service_faults_total", kind="worker_down")
    voids = sample("tablehall_matches_voided_total", reason="worker_down")

    async def body() -> None:
        storage = MemoryStorage()
        first = MatchHost(storage, tolerance_ms=50)
        await first.start()
        clock = Clock()
        actor, _ = await running(storage, clock)  # a clock running on partition 3, owned by `first`
        assert actor.match_id
        await first.stop()

        def later() -> int:  # no heartbeat for longer than the tolerance: time injected, not slept
            return unix_ms() + 200

        second = MatchHost(storage, tolerance_ms=50, clock=later)
        await second.start()
        assert second.actors["m-late"].match.void_reason == "worker_down"
        await second.stop()

    asyncio.run(asyncio.wait_for(body(), 20))
    assert sample("tablehall_service_faults_total", kind="worker_down") == faults + 1
    assert sample("tablehall_matches_voided_total", reason="worker_down") == voids + 1


class FailingStorage(MemoryStorage):
    durable = True  # a disk that fills up: its commits are timed

    async def append_all(
        self, match_id: str, partition: int, epoch: int, entries: Sequence[LogEntry], progress: Progress
    ) -> None:
        if any(entry.kind == "command" for entry in entries):
            raise OSError("disk full")
        await super().append_all(match_id, partition, epoch, entries, progress)


def test_a_failed_append_counts_a_storage_error() -> None:
    faults = sample("tablehall_service_faults_total", kind="storage_error")
    commits = sample("tablehall_event_log_commit_seconds_count")

    async def body() -> None:
        with pytest.raises(Unavailable, match="could not be stored; send it again"):
            await running(FailingStorage(), Clock())

    asyncio.run(asyncio.wait_for(body(), 20))
    assert sample("tablehall_service_faults_total", kind="storage_error") == faults + 1
    assert sample("tablehall_event_log_commit_seconds_count") > commits  # the create's deal was committed
