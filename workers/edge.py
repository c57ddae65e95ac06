"""The error edge of every servicer, the gateway's and the workers': a call that raised ends with its
error's gRPC status and stable code (both carried by the error's class, `workers.errors`), and a message a
player can read.

Servicer methods are wrapped by `edge` (unary) or `edge_stream` (server streaming); the gateway's `Play`,
whose every event would pass one more async generator, ends itself through `settle`. An unexpected
exception is logged with its traceback on the server and reaches the caller as INTERNAL, never as a trace.
A client that goes away is no error of the service: grpc's traceback for it becomes one debug line
(`quiet_dropped_clients`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import grpc

from workers import metrics
from workers.errors import ERROR_CODE_KEY, MOVED_TO_KEY, RETRY_AFTER_KEY, ServiceError, status_of
from workers.games.errors import RulesError

log = logging.getLogger("tablehall")

INTERNAL = "internal error: the service logged it"
"""What a caller reads when something unexpected failed (the traceback stays in the service's log)."""

Known = (ServiceError, RulesError)

COMMANDS = frozenset({"Act"})
"""The gateway's command calls whose refusals count in `tablehall_commands_rejected_total` (Play counts
each refused command of its stream itself)."""

R = TypeVar("R")


MAX_MESSAGE = 400
"""The longest refusal message a caller gets. Messages quote client input through `quote`
(workers/games/errors.py), so they are short anyway; this bounds what a library's text could add."""


def shown(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def refusal(error: Exception, where: str) -> tuple[str, str]:
    """The (code, message) a caller gets for `error`: a known refusal as itself; anything else is logged
    here, once, with its traceback, and reads as `internal` with the generic message."""
    if isinstance(error, Known):
        return error.code, shown(str(error))
    log.error("unexpected error in %s", where, exc_info=error)
    return "internal", INTERNAL


def trailers(error: Exception) -> tuple[tuple[str, str], ...]:
    """What a refusal carries besides its status and message: its code, and when to try again."""
    metadata: tuple[tuple[str, str], ...] = ((ERROR_CODE_KEY, getattr(error, "code", "internal")),)
    if retry_after_ms := getattr(error, "retry_after_ms", 0):
        metadata += ((RETRY_AFTER_KEY, str(retry_after_ms)),)
    return metadata


async def abort(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> NoReturn:
    metadata = trailers(error)
    if moved_to := getattr(error, "moved_to", ""):
        metadata += ((MOVED_TO_KEY, moved_to),)
    await context.abort(status_of(type(error)), shown(str(error)), metadata)
    raise AssertionError("unreachable")  # context.abort raises


async def settle(error: Exception, context: grpc.aio.ServicerContext[Any, Any], where: str) -> NoReturn:
    """End a call that raised: a known error with its status and code; anything else logged, INTERNAL
    with the generic message to the caller."""
    if isinstance(error, grpc.aio.AbortError):
        raise error
    code, message = refusal(error, where)
    if where in COMMANDS:
        metrics.rejected(code).inc()
    await context.abort(status_of(type(error)), message, trailers(error) if isinstance(error, Known) else ())
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


_DROPPED = re.compile(r"ExecuteBatchError raised in core by servicer method \[(?P<method>[^\]]*)\]")


class _DroppedClient(logging.Filter):
    """grpc.aio stays silent when a write fails because the client has gone, but only if it noticed the
    closed call before the failed write; the other way round it logs the same thing as an error with a
    traceback. This filter makes that case what grpc makes the first: one debug line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        dropped = _DROPPED.fullmatch(record.getMessage()) if isinstance(error, grpc.aio.InternalError) else None
        if dropped is None:
            return True
        log.debug("the client of %s went away while the server was writing to it", dropped["method"])
        return False


def quiet_dropped_clients() -> None:
    """Install `_DroppedClient` on grpc's server logger (once per process)."""
    grpc_log = logging.getLogger("grpc._cython.cygrpc")
    if not any(isinstance(f, _DroppedClient) for f in grpc_log.filters):
        grpc_log.addFilter(_DroppedClient())
