"""The grpc.aio servicers as Connect services: one implementation behind both front doors.

connect-python's generated `*ASGIApplication` calls snake_case methods with a Connect `RequestContext`.
`ConnectBridge` gives it, for every RPC of a service descriptor, a method that calls the grpcio servicer's
own method with `GrpcContext`, the small part of `grpc.aio.ServicerContext` the servicers use: the
caller's metadata (HTTP headers here) and `abort`. So authentication, arrival stamps, routing and the
error edge (workers/edge.py) run unchanged, and a refusal reaches a browser with the Connect code of the
same gRPC status, the same message, and the stable error code in the `tablehall-error` trailer.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, NoReturn

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message_factory import GetMessageClass

from gateway.web_bounds import Refused


def connect_code(status: grpc.StatusCode) -> Code:
    """The Connect code of a gRPC status: the same names (Connect spells CANCELLED with one L)."""
    if status is grpc.StatusCode.OK:
        raise ValueError("OK is not an error")
    return Code.CANCELED if status is grpc.StatusCode.CANCELLED else Code[status.name]


class Aborted(ConnectError):
    """A call the servicer ended with `context.abort`: carries the gRPC status it chose."""

    def __init__(self, status: grpc.StatusCode, message: str) -> None:
        super().__init__(connect_code(status), message)
        self.status = status


class GrpcContext:
    """What a grpc.aio servicer sees of a Connect call: request headers as invocation metadata,
    `abort` as a ConnectError, trailing metadata as response trailers."""

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self.ctx = ctx

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple((key.lower(), value) for key, value in self.ctx.request_headers().allitems())

    def set_trailing_metadata(self, metadata: Sequence[tuple[str, str | bytes]]) -> None:
        for key, value in metadata:
            self.ctx.response_trailers()[key] = value.decode() if isinstance(value, bytes) else value

    async def abort(
        self, code: grpc.StatusCode, details: str = "", trailing_metadata: Sequence[tuple[str, str | bytes]] = ()
    ) -> NoReturn:
        self.set_trailing_metadata(trailing_metadata)
        raise Aborted(code, details)

    def peer(self) -> str:
        return self.ctx.client_address() or ""

    def time_remaining(self) -> float | None:
        remaining = self.ctx.timeout_ms()
        return None if remaining is None else remaining / 1000

    def cancelled(self) -> bool:
        return False


def snake_case(name: str) -> str:
    """`GetRatingHistory` -> `get_rating_history`, as connect-python names a service's methods."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class ConnectBridge:
    """A Connect service object whose every RPC calls the method of the same name on a grpc.aio servicer."""

    def __init__(self, servicer: object, service: ServiceDescriptor) -> None:
        self.servicer = servicer
        self.service = service
        for method in service.methods:
            setattr(self, snake_case(method.name), _bridged(getattr(servicer, method.name), method))


def _bridged(call: Callable[[Any, Any], Any], method: MethodDescriptor) -> Callable[..., Any]:
    if method.server_streaming:

        reply = GetMessageClass(method.output_type)

        async def stream(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
            requests = _readable(request) if method.client_streaming else request
            replies = call(requests, GrpcContext(ctx))
            try:
                async for item in replies:  # Connect's codecs take messages, not bytes
                    yield reply.FromString(item) if isinstance(item, bytes) else item
            finally:
                await replies.aclose()  # a vanished browser ends the servicer's stream at once

        return stream

    async def unary(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await call(_readable(request) if method.client_streaming else request, GrpcContext(ctx))

    return unary


async def _readable(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """A request stream whose unreadable message raises `Unreadable` where the servicer reads it, so the
    servicer's edge answers it like any refusal (as the gRPC door does, gateway/server.py)."""
    try:
        async for request in requests:
            yield request
    except Refused as refused:
        raise refused.unreadable from None
