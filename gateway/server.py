"""Assembles the gateway's gRPC server: the Matches and Tournaments services, standard health, server
reflection.

The public services' method handlers are made here from their descriptors rather than by the generated
`add_*Servicer_to_server`: grpc deserializes a unary request before any servicer code runs, and a request
it cannot parse would end as UNKNOWN with a traceback in the log. These handlers read requests through
`gateway.bounds` and answer what they cannot read as INVALID_ARGUMENT `malformed_input`: a unary request
before the servicer sees it; a message of a request stream where the servicer reads it (grpc reads a
stream's messages in the servicer's own `async for`, so the error raised there is the servicer's to end
the call with, and no layer stands between each message and the servicer).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message_factory import GetMessageClass
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from gateway.bounds import TRANSPORT_MAX_BYTES, Unreadable, limit_of, read
from gateway.guard import Guard
from gateway.limits import Budgets, LimitSettings
from gateway.lobby.service import LobbyService
from gateway.service import MatchesService
from gateway.spectators import Spectators, live
from gateway.tls import ServerTls
from gateway.tournaments.delays import TournamentDelays
from gateway.tournaments.service import TournamentsService
from gateway.workers import Router
from protos.tablehall.v1 import lobby_pb2, matches_pb2, tournaments_pb2
from workers.actor import unix_ms
from workers.edge import abort, quiet_dropped_clients
from workers.wire import passing

log = logging.getLogger("tablehall.gateway")

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

MATCHES = matches_pb2.DESCRIPTOR.services_by_name["Matches"].full_name
TOURNAMENTS = tournaments_pb2.DESCRIPTOR.services_by_name["Tournaments"].full_name
LOBBY = lobby_pb2.DESCRIPTOR.services_by_name["Lobby"].full_name
PUBLIC = (MATCHES, TOURNAMENTS, LOBBY)


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


def public_servicers(
    router: Router,
    budgets: Budgets | None = None,
    lobby: LobbyService | None = None,
    clock: Callable[[], int] = unix_ms,
    spectators: Spectators | None = None,
) -> dict[str, Any]:
    """The public services by full name, one servicer each: the gRPC server and the HTTP door for browsers
    (gateway/web.py) serve the same instances, behind the same per-client limits (gateway/guard.py;
    `budgets` None: the settings of the environment). `lobby`: a Lobby servicer made elsewhere (tests).
    `clock`: the service's (tests inject one). `spectators`: how late spectators see each match
    (`tournament_spectators()`: as late as its tournament says, read from the database; None: every match
    live, and no database is opened for it)."""
    guard = Guard(budgets if budgets is not None else Budgets(LimitSettings.from_env()))
    lobby = lobby or LobbyService(router)
    spectators = spectators if spectators is not None else Spectators(clock, live)
    return {
        MATCHES: guard.guarded(MatchesService(router, lobby.consent, spectators), MATCHES),
        TOURNAMENTS: guard.guarded(TournamentsService(router, clock=clock), TOURNAMENTS),
        LOBBY: guard.guarded(lobby, LOBBY),
    }


def tournament_spectators(clock: Callable[[], int] = unix_ms) -> Spectators:
    """Spectators of tournament tables delayed as their tournament says (the service's database)."""
    return Spectators(clock, TournamentDelays())


async def start_gateway(
    router: Router,
    host: str = "127.0.0.1",
    port: int = 0,
    servicers: Mapping[str, Any] | None = None,
    tls: ServerTls | None = None,
) -> Gateway:
    """The public gRPC server on `host:port` (0: a free port): plaintext, or TLS with `tls`."""
    quiet_dropped_clients()
    options = [("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", TRANSPORT_MAX_BYTES)]
    server = grpc.aio.server(options=options)
    servicers = servicers or public_servicers(router)
    for name in (name for name in PUBLIC if name in servicers):
        handlers = method_handlers(name, servicers[name])
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
        server.add_registered_method_handlers(name, handlers)
    checker = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    names = (*PUBLIC, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    address = f"{host}:{port}"
    bound = server.add_secure_port(address, tls.credentials()) if tls else server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    probes = await _health_only(checker, host, tls.health_port) if tls and tls.health_port is not None else None
    await server.start()
    for name in ("", *PUBLIC):
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


def method_handlers(service: str, servicer: object) -> dict[str, grpc.RpcMethodHandler]:
    """A handler for every method of `service` (full name) that calls the servicer's method of that name."""
    found = descriptor_pool.Default().FindServiceByName(service)
    return {method.name: _handler(method, getattr(servicer, method.name)) for method in found.methods}


def _handler(method: MethodDescriptor, behavior: Callable[..., Any]) -> grpc.RpcMethodHandler:
    request = GetMessageClass(method.input_type)
    limit = limit_of(method.full_name)

    def deserialize_streamed(data: bytes) -> Any:
        """A stream's message: what cannot be read raises `Unreadable` where the servicer reads it."""
        return read(request, data, limit)

    def deserialize(data: bytes) -> Any:
        """Never raises (grpc would answer UNKNOWN): what cannot be read is handed on as `Unreadable`."""
        try:
            return read(request, data, limit)
        except Unreadable as unreadable:
            return unreadable

    serialize = passing(GetMessageClass(method.output_type))  # a stream's events may come serialized already
    if method.client_streaming:
        if method.server_streaming:
            return grpc.stream_stream_rpc_method_handler(behavior, deserialize_streamed, serialize)
        return grpc.stream_unary_rpc_method_handler(behavior, deserialize_streamed, serialize)
    handle = _refusing(behavior, method.full_name)
    if method.server_streaming:
        return grpc.unary_stream_rpc_method_handler(handle, deserialize, serialize)
    return grpc.unary_unary_rpc_method_handler(handle, deserialize, serialize)


def _refusing(behavior: Callable[..., Any], method: str) -> Callable[..., Any]:
    """A unary request: an unreadable one is refused before the servicer sees it."""
    if inspect.isasyncgenfunction(behavior):

        async def stream(request: Any, context: Context) -> AsyncIterator[Any]:
            if isinstance(request, Unreadable):
                await _refuse(context, request, method)
            async for reply in behavior(request, context):
                yield reply

        return stream

    async def unary(request: Any, context: Context) -> Any:
        if isinstance(request, Unreadable):
            await _refuse(context, request, method)
        return await behavior(request, context)

    return unary


async def _refuse(context: Context, unreadable: Unreadable, method: str) -> None:
    log.debug("%s: %s", method, unreadable)
    await abort(context, unreadable)
