"""The one place where error codes become gRPC statuses, with a message a player can read.

Servicer methods are wrapped by `edge` (unary) or `edge_stream` (server streaming). An unexpected
exception is logged with its traceback on the server and reaches the caller as INTERNAL, never as a trace.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import grpc

from workers import metrics
from workers.errors import ServiceError
from workers.games.errors import RulesError

log = logging.getLogger("tablehall")

ERROR_CODE_KEY = "tablehall-error"
MOVED_TO_KEY = "tablehall-moved-to"
"""Internal calls: with `wrong_owner`, where the match's partition went (the router sends it there)."""

INTERNAL = "internal error: the service logged it"
"""What a caller reads when something unexpected failed (the traceback stays in the service's log)."""

STATUS: dict[str, grpc.StatusCode] = {
    "malformed_input": grpc.StatusCode.INVALID_ARGUMENT,
    "illegal_action": grpc.StatusCode.FAILED_PRECONDITION,
    "not_finished": grpc.StatusCode.FAILED_PRECONDITION,
    "not_started": grpc.StatusCode.FAILED_PRECONDITION,
    "batch_rejected": grpc.StatusCode.INVALID_ARGUMENT,
    "no_database": grpc.StatusCode.FAILED_PRECONDITION,
    "round_not_over": grpc.StatusCode.FAILED_PRECONDITION,
    "tournament_over": grpc.StatusCode.FAILED_PRECONDITION,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "permission_denied": grpc.StatusCode.PERMISSION_DENIED,
    "rate_limited": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "wrong_owner": grpc.StatusCode.UNAVAILABLE,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "internal": grpc.StatusCode.INTERNAL,
}

Known = (ServiceError, RulesError)

COMMANDS = frozenset({"Act"})
"""The gateway's command calls whose refusals count in `tablehall_commands_rejected_total` (Play counts
each refused command of its stream itself)."""

R = TypeVar("R")


async def abort(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> NoReturn:
    code = getattr(error, "code", "internal")
    metadata: tuple[tuple[str, str], ...] = ((ERROR_CODE_KEY, code),)
    if moved_to := getattr(error, "moved_to", ""):
        metadata += ((MOVED_TO_KEY, moved_to),)
    await context.abort(STATUS.get(code, grpc.StatusCode.INTERNAL), str(error), metadata)
    raise AssertionError("unreachable")  # context.abort raises


async def settle(error: Exception, context: grpc.aio.ServicerContext[Any, Any], where: str) -> NoReturn:
    """End a call that raised: a known error with its status; anything else logged, INTERNAL to the caller."""
    if isinstance(error, grpc.aio.AbortError):
        raise error
    if where in COMMANDS:
        metrics.REJECTED.labels(getattr(error, "code", "internal") if isinstance(error, Known) else "internal").inc()
    if isinstance(error, Known):
        await abort(context, error)
    log.exception("unexpected error in %s", where, exc_info=error)
    await context.abort(grpc.StatusCode.INTERNAL, INTERNAL)
    raise AssertionError("unreachable")  # context.abort raises


def edge(
    method: Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[R]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[R]]:
    @functools.wraps(method)
    async def wrapped(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> R:
        try:
            return await method(self, request, context)
        except Exception as error:
            await settle(error, context, method.__name__)

    return wrapped


def edge_stream(
    method: Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[R]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[R]]:
    @functools.wraps(method)
    async def wrapped(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[R]:
        try:
            async for item in method(self, request, context):
                yield item
        except Exception as error:
            await settle(error, context, method.__name__)

    return wrapped
