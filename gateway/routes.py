"""Where each partition is served: the gateway's map, from static arithmetic or from the lease table.

`LeasedRoutes` reads the lease table (workers/leases.py) every `poll_s` and on demand, keeps one client
per worker address, takes hints from refusals ("it moved to …") ahead of the next read, and probes every
live worker's health: a worker this gateway cannot reach for `DOWN_AFTER` probes in a row, while it can
reach another, is marked down in the table, which makes that worker stop serving at its next heartbeat
and lets a reachable worker take its partitions once its lease ran out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from workers.dial import OWN_CONNECTION, dial
from workers.leases import LeaseTable, MemberState
from workers.partitions import PARTITIONS

log = logging.getLogger("tablehall.gateway")

DOWN_AFTER = 3
"""Consecutive failed health probes before a worker is marked down (if another worker answers)."""
HINT_S = 2.0
"""How long a refusal's "moved to" is trusted over the table (which may be read just before the move)."""


class Client(Protocol):
    address: str

    async def close(self) -> None: ...


class Board(Protocol):
    """The lease table, as the gateway reads and marks it (workers.sql.leases.Board, MemoryStorage)."""

    async def leases(self) -> LeaseTable: ...

    async def set_state(self, owner: str, state: MemberState) -> None: ...


class Routes(Protocol):
    moving: bool
    """Partitions may move between workers (a refusal as `wrong_owner` is then worth sending again)."""

    def client(self, partition: int) -> object | None:
        """The worker client that serves the partition now, or None (in hand-off, or nobody reachable)."""
        ...

    def moved(self, partition: int, address: str) -> None:
        """A worker said the partition went to `address`."""
        ...

    async def changed(self, timeout: float) -> None:
        """Wait for the map to be read again (at most `timeout` seconds)."""
        ...


class StaticRoutes:
    """Partition p is served by worker p mod N (the embedded service, the static mode)."""

    moving = False

    def __init__(self, clients: Sequence[object]) -> None:
        self.clients = list(clients)

    def client(self, partition: int) -> object | None:
        return self.clients[partition % len(self.clients)]

    def moved(self, partition: int, address: str) -> None:
        return None

    async def changed(self, timeout: float) -> None:
        await asyncio.sleep(timeout)  # nothing moves here: a short pause before the same worker is asked again


class LeasedRoutes:
    moving = True

    def __init__(
        self,
        board: Board,
        lease_ms: int,
        connect: Callable[[str], Client],
        *,
        poll_s: float = 0.1,
        probe: bool = True,
    ) -> None:
        self.board = board
        self.lease_ms = lease_ms
        self.connect = connect
        self.poll_s = poll_s
        self.probe = probe
        self.owners: list[str | None] = [None] * PARTITIONS
        """The address serving each partition, as last read."""
        self.hints: dict[int, tuple[str, float]] = {}
        self.clients: dict[str, Client] = {}
        self.failures: dict[str, int] = {}
        """Failed probes in a row, per worker (by owner: a worker started again at the same address is new)."""
        self.table: LeaseTable | None = None
        self._read = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._probes: dict[str, grpc.aio.Channel] = {}

    async def start(self) -> LeasedRoutes:
        await self.poll()
        self._tasks.append(asyncio.create_task(self._run()))
        if self.probe:
            self._tasks.append(asyncio.create_task(self._prober()))
        return self

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)  # the map's refresh cadence
            try:
                await self.poll()
            except Exception as error:
                log.warning("reading the lease table failed (%s); routes stay as they were", error)

    async def _prober(self) -> None:
        while True:
            await asyncio.sleep(self.lease_ms / 2000)  # the probes' cadence
            try:
                await self.probe_all()
            except Exception as error:
                log.warning("probing the workers failed (%s)", error)

    async def poll(self) -> None:
        table = await self.board.leases()
        now = time.time_ns() // 1_000_000
        owners: list[str | None] = []
        for partition in range(PARTITIONS):
            holder = table.holder(partition, now, self.lease_ms)
            owners.append(holder.address if holder is not None and holder.address else None)
        self.table, self.owners = table, owners
        self._read.set()
        self._read = asyncio.Event()

    def client(self, partition: int) -> object | None:
        address = self.owners[partition]
        hint = self.hints.get(partition)
        if hint is not None:
            if time.monotonic() - hint[1] < HINT_S and hint[0] != address:
                address = hint[0]
            else:
                del self.hints[partition]
        if address is None:
            return None
        client = self.clients.get(address)
        if client is None:
            client = self.clients[address] = self.connect(address)
        return client

    def moved(self, partition: int, address: str) -> None:
        self.hints[partition] = (address, time.monotonic())

    async def changed(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._read.wait(), timeout)

    async def probe_all(self) -> None:
        """One round of health probes of every worker the table shows fresh (the prober's cadence: a
        quarter lease); marks down one that failed `DOWN_AFTER` in a row while another answered."""
        table = self.table
        if table is None:
            return
        now = time.time_ns() // 1_000_000
        live = [m for m in table.members.values() if m.fresh(now, self.lease_ms) and m.address]
        answers = await asyncio.gather(*(self._probe(m.address) for m in live))
        reached = {m.owner for m, ok in zip(live, answers, strict=True) if ok}
        probed = {m.owner for m in live}
        self.failures = {owner: n for owner, n in self.failures.items() if owner in probed}
        for member, ok in zip(live, answers, strict=True):
            if ok:
                self.failures.pop(member.owner, None)
                continue
            failed = self.failures[member.owner] = self.failures.get(member.owner, 0) + 1
            if failed >= DOWN_AFTER and reached - {member.owner} and member.state is not MemberState.DOWN:
                log.error("worker %s at %s did not answer %d probes: marking it down", member.owner,
                          member.address, failed)  # fmt: skip
                await self.board.set_state(member.owner, MemberState.DOWN)

    async def _probe(self, address: str) -> bool:
        """One health check; after a failure the next probe dials afresh, on a connection of its own
        (`OWN_CONNECTION`): a channel that saw a worker die would otherwise fail the one started again at its
        address until its reconnect backoff ends."""
        channel = self._probes.get(address) or self._probes.setdefault(address, dial(address, OWN_CONNECTION))
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=self.lease_ms / 1000
            )
        except grpc.aio.AioRpcError:
            stale = self._probes.pop(address, None)
            if stale is not None:
                await stale.close()
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for client in self.clients.values():
            await client.close()
        for channel in self._probes.values():
            await channel.close()
