"""A graceful release (a hand-off) closes a partition's matches only once none of them is changing: a change
that one match's deadline timer starts while another match of the partition is still settling is let
finish, not cut off mid-commit (its caller would hear "stopped serving during the change")."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time

from protos.tablehall.v1 import host_pb2
from workers.host import MatchHost
from workers.partitions import partition_of


def _two_ids_in_one_partition() -> tuple[str, str, int]:
    seen: dict[int, str] = {}
    for n in itertools.count(1):
        match_id = f"{n:016x}"
        partition = partition_of(match_id)
        if partition in seen:
            return seen[partition], match_id, partition
        seen[partition] = match_id
    raise AssertionError("unreachable")


async def _create(host: MatchHost, match_id: str) -> None:
    tokens = [hashlib.sha256(f"{match_id}{seat}".encode()).digest() for seat in range(2)]
    await host.create(
        host_pb2.HostCreateRequest(
            match_id=match_id, game="spectacular-bid", players=["Ana", "Bia"], options_json="{}",
            token_sha256=tokens, created_unix_ms=time.time_ns() // 1_000_000,
        )
    )  # fmt: skip


def test_release_waits_for_a_change_begun_while_another_match_settled() -> None:
    async def scenario() -> None:
        first_id, second_id, partition = _two_ids_in_one_partition()
        host = MatchHost()
        await host.start()
        await _create(host, first_id)
        await _create(host, second_id)
        first, second = host.actors[first_id], host.actors[second_id]
        second_goes, first_goes = asyncio.Event(), asyncio.Event()

        async def waits_for(event: asyncio.Event) -> str:
            await event.wait()
            return "done"

        busy_second = asyncio.create_task(second.mailbox.run(lambda: waits_for(second_goes)))
        await asyncio.sleep(0)  # the second match's change is running
        releasing = asyncio.create_task(host.release(partition))
        await asyncio.sleep(0)  # the release waits for it; the first match was idle, so it counts as settled
        begun_late = asyncio.create_task(first.mailbox.run(lambda: waits_for(first_goes)))  # a timer's change
        await asyncio.sleep(0)
        second_goes.set()
        assert await busy_second == "done"
        for _ in range(50):  # let the release go as far as it can while the first match's change runs
            await asyncio.sleep(0)
        assert not releasing.done(), "released while a change of the partition was still running"
        assert not first.closed
        first_goes.set()
        assert await begun_late == "done"
        await releasing
        assert first.closed and second.closed
        host.close()

    asyncio.run(scenario())
