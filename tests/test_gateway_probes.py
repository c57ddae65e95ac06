"""The gateway's health probes of the workers in the lease table (gateway/routes.py), against real gRPC
health servers: a worker started again at the address of one that died is a new worker, reached at once,
and never marked down for its predecessor's failed probes (seen in the dev-cluster, whose workers keep
their ports: a restarted worker was marked down within a second, again and again)."""

from __future__ import annotations

import asyncio

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from gateway.routes import DOWN_AFTER, LeasedRoutes
from tablehall.ports import free_port
from workers.actor import unix_ms
from workers.leases import MemberState
from workers.storage import MemoryStorage

LEASE_MS = 600_000
"""Long: the members stay fresh without heartbeats while the test runs."""


async def healthy(port: int) -> grpc.aio.Server:
    server = grpc.aio.server()
    checker = health.HealthServicer(experimental_non_blocking=True)
    checker.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server


class NoClient:
    def __init__(self, address: str) -> None:
        self.address = address

    async def close(self) -> None:
        pass


def test_a_worker_started_again_at_a_dead_ones_address_is_probed_afresh() -> None:
    async def body() -> None:
        port, peer_port = free_port(), free_port()
        first, peer = await healthy(port), await healthy(peer_port)
        storage = MemoryStorage()
        await storage.join("first", f"127.0.0.1:{port}", unix_ms())
        await storage.join("peer", f"127.0.0.1:{peer_port}", unix_ms())
        routes = LeasedRoutes(storage, LEASE_MS, NoClient, probe=False)
        await routes.poll()
        await routes.probe_all()
        assert routes.failures == {}

        await first.stop(None)  # it dies; its next probes fail, short of marking it down
        for _ in range(DOWN_AFTER - 1):
            await routes.probe_all()
        assert routes.failures == {"first": DOWN_AFTER - 1}

        storage.beats["first"] = 0  # its lease ran out; another worker starts at its address and joins
        again = await healthy(port)
        await storage.join("again", f"127.0.0.1:{port}", unix_ms())
        await routes.poll()
        for _ in range(DOWN_AFTER):
            await routes.probe_all()
            assert "again" not in routes.failures, routes.failures  # reached on its first probe
        table = await storage.leases()
        assert table.members["again"].state is MemberState.ACTIVE
        assert "first" not in routes.failures  # no longer probed (its lease ran out): forgotten
        await routes.close()
        await again.stop(None)
        await peer.stop(None)

    asyncio.run(body())
