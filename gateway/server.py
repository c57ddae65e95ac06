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

    async def stop(self, grace: float = 5.0) -> None:
        """Graceful shutdown: report NOT_SERVING, then let calls in flight finish within `grace`."""
        self.health.enter_graceful_shutdown()
        await self.server.stop(grace)


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
    router: Router, host: str = "127.0.0.1", port: int = 0, servicers: Mapping[str, Any] | None = None
) -> Gateway:
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    servicers = servicers or public_servicers(router)
    matches_pb2_grpc.add_MatchesServicer_to_server(servicers[MATCHES], server)
    tournaments_pb2_grpc.add_TournamentsServicer_to_server(servicers[TOURNAMENTS], server)
    checker = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    names = (MATCHES, TOURNAMENTS, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    await server.start()
    for name in ("", MATCHES, TOURNAMENTS):
        checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    return Gateway(server, checker, bound)
