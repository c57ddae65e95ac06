"""How a sweep reaches a match's owner: over gRPC to the worker holding its partition's lease (or, in the
static mode, worker p mod N), or in process (`tablehall serve`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Sequence

import grpc

from protos.tablehall.v1 import host_pb2, host_pb2_grpc
from ratings.sweep import Due, Settle
from workers.dial import dial
from workers.host import MatchHost
from workers.partitions import owner_of
from workers.settings import Topology, lease_ms
from workers.sql.leases import Board

SETTLE_TIMEOUT_S = 3.0


def _request(item: Due) -> host_pb2.HostSettleRequest:
    return host_pb2.HostSettleRequest(
        match_id=item.match_id,
        abandon_reason="abandoned" if item.abandon else "",
        only_if_untouched=item.abandon == "never_started",
    )


class _Settler:
    """Asks a worker at an address to settle a match (one channel per address); False if it cannot be reached."""

    def __init__(self) -> None:
        self.channels: dict[str, grpc.aio.Channel] = {}

    async def at(self, address: str, item: Due) -> bool:
        channel = self.channels.get(address)
        if channel is None:
            channel = self.channels[address] = dial(address)
        try:
            await host_pb2_grpc.MatchSweepsStub(channel).Settle(_request(item), timeout=SETTLE_TIMEOUT_S)
        except grpc.aio.AioRpcError:
            return False
        return True

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()


@contextlib.asynccontextmanager
async def over_grpc(topology: Topology) -> AsyncIterator[Settle]:
    """Settle through worker k = owner_of(match) at `topology.worker_address(k)` (the static mode)."""
    settler = _Settler()

    async def settle(item: Due) -> bool:
        return await settler.at(topology.worker_address(owner_of(item.match_id, topology.workers)), item)

    try:
        yield settle
    finally:
        await settler.close()


@contextlib.asynccontextmanager
async def over_leases(url: str) -> AsyncIterator[Settle]:
    """Settle through the worker whose lease holds the match's partition now; none (its worker is down,
    the partition between workers): unreachable. A holder without an address is an in-process worker
    (`tablehall serve`), which sweeps its own matches: left to it."""
    board, settler = Board(url), _Settler()

    async def settle(item: Due) -> bool:
        table = await board.leases()
        holder = table.holder(item.partition, time.time_ns() // 1_000_000, lease_ms())
        if holder is None:
            return False
        return await settler.at(holder.address, item) if holder.address else True

    try:
        yield settle
    finally:
        await settler.close()
        await board.close()


def in_process(hosts: Sequence[MatchHost]) -> Settle:
    async def settle(item: Due) -> bool:
        host = hosts[owner_of(item.match_id, len(hosts))]
        await host.settle(_request(item))  # NotOwner / NotFound: the sweep voids it
        return True

    return settle
