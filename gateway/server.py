"""Assembles the gateway's gRPC server: the Matches and Tournaments services, standard health, server
reflection."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from gateway.guard import Guard
from gateway.limits import Budgets, LimitSettings
from gateway.service import MatchesService
from gateway.tls import ServerTls
from gateway.tournaments.service import TournamentsService
from gateway.workers import Router
from protos.tablehall.v1 import matches_pb2, matches_pb2_grpc, tournaments_pb2, tournaments_pb2_grpc

MATCHES = matches_pb2.DESCRIPTOR.services_by_name["Matches"].full_name
TOURNAMENTS = tournaments_pb2.DESCRIPTOR.services_by_name["Tournaments"].full_name


@dataclass
class Gateway:
    server: grpc.aio.Server
    health: health.HealthServicer
    port: int
    tls: bool = False
    health_server: grpc.aio.Server | None = None
    """With TLS: the plaintext server of the health service alone, for probes (gateway/tls.py)."""
    health_port: int | None = None

    async def stop(self, grace: float = 5.0) -> None:
        """Graceful shutdown: report NOT_SERVING, then let calls in flight finish within `grace`."""
        self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        if self.health_server is not None:
            await self.health_server.stop(0)


def public_servicers(router: Router, budgets: Budgets | None = None) -> dict[str, Any]:
    """The public services by full name, one servicer each: the gRPC server and the HTTP door for browsers
    (gateway/web.py) serve the same instances, behind the same per-client limits (gateway/guard.py;
    `budgets` None: the settings of the environment)."""
    guard = Guard(budgets if budgets is not None else Budgets(LimitSettings.from_env()))
    return {
        MATCHES: guard.guarded(MatchesService(router), MATCHES),
        TOURNAMENTS: guard.guarded(TournamentsService(router), TOURNAMENTS),
    }


async def start_gateway(
    router: Router,
    host: str = "127.0.0.1",
    port: int = 0,
    servicers: Mapping[str, Any] | None = None,
    tls: ServerTls | None = None,
) -> Gateway:
    """The public gRPC server on `host:port` (0: a free port): plaintext, or TLS with `tls`."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    servicers = servicers or public_servicers(router)
    matches_pb2_grpc.add_MatchesServicer_to_server(servicers[MATCHES], server)
    tournaments_pb2_grpc.add_TournamentsServicer_to_server(servicers[TOURNAMENTS], server)
    checker = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    names = (MATCHES, TOURNAMENTS, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    address = f"{host}:{port}"
    bound = server.add_secure_port(address, tls.credentials()) if tls else server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    probes = await _health_only(checker, host, tls.health_port) if tls and tls.health_port is not None else None
    await server.start()
    for name in ("", MATCHES, TOURNAMENTS):
        checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    return Gateway(server, checker, bound, tls is not None, *(probes or (None, None)))


async def _health_only(checker: health.HealthServicer, host: str, port: int) -> tuple[grpc.aio.Server, int]:
    """A plaintext server of the health service alone (the same statuses): kubelet probes speak no TLS."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port} (TABLEHALL_HEALTH_PORT)")
    await server.start()
    return server, bound
