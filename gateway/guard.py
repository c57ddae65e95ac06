"""The per-client limits (gateway/limits.py) in front of the public services, on both doors.

`Guard.guarded` wraps a servicer the way `ConnectBridge` does (one method per RPC of its descriptor), so
the grpcio server and the HTTP door (gateway/web.py) run the same wrapped instances. Each call spends
one request of its connection (`context.peer()`) and of its bearer token (by SHA-256); a streaming call
also holds one open-stream slot while it runs, and every command on a `Play` stream spends one request.
A refusal is RESOURCE_EXHAUSTED with the code `rate_limited` in `tablehall-error` and a hint in
`retry-after-ms`; it never reaches a worker, so it changes nothing. A `Play` stream whose command is over
budget ends with that refusal (its earlier commands stand; resume with `after_seq`).

A `Play` stream is not wrapped: every command and every event would pass one more async generator (the
service's CPU a command, README "The fifth session of 12-06"). The servicer is handed `admit` instead and
spends its stream's budget itself where it reads each command (`StreamBudget`).
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import MethodDescriptor

from gateway.limits import Budgets, Refusal
from workers import metrics
from workers.edge import trailers
from workers.errors import RateLimited

COMMANDS = frozenset({"Act"})
"""Whose refusals count in `tablehall_commands_rejected_total{code="rate_limited"}` (a `Play` stream's are
counted where they are made: `refused`)."""


def caller_keys(context: Any) -> tuple[str, ...]:
    """The budgets a call spends from: its connection, and its bearer token's SHA-256 when it sends one
    (a malformed header has no token budget: the service refuses it anyway)."""
    keys = []
    peer = context.peer()
    if peer:
        keys.append(f"peer {peer}")
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            scheme, _, token = str(value).partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                keys.append("token " + hashlib.sha256(token.strip().encode()).hexdigest())
            break
    return tuple(keys)


@dataclass(slots=True)
class StreamBudget:
    """A `Play` stream's spending, done by the servicer that reads its requests: the open-stream slot it
    holds until `close`, and one request for each command after the opening one (`spend` raises
    `RateLimited` once over: the servicer ends the stream with it, after what it has ready)."""

    budgets: Budgets | None
    keys: tuple[str, ...]
    clock: Callable[[], float]

    def spend(self) -> None:
        if self.budgets is None:
            return
        refusal = self.budgets.spend(self.keys, self.clock())
        if refusal is not None:
            raise refused(refusal)

    def close(self) -> None:
        if self.budgets is not None:
            self.budgets.close_watch(self.keys)
            self.budgets = None


Admit: TypeAlias = Callable[[Any], StreamBudget]
"""Opens a `Play` stream for the caller of `context` (`RateLimited` if it may not open one)."""


def unlimited(context: Any) -> StreamBudget:
    """A servicer called with no guard in front of it (tests of the servicer alone)."""
    return StreamBudget(None, (), time.monotonic)


def refused(refusal: Refusal) -> RateLimited:
    """A refused command of a stream, counted as the refusal of a command."""
    metrics.rejected(RateLimited.code).inc()
    return RateLimited(refusal.message, refusal.retry_after_ms)


class Guarded:
    """A servicer whose every RPC passes the guard first (attributes named as the RPCs)."""

    def __init__(self, servicer: object, full_name: str, guard: Guard) -> None:
        self.servicer = servicer
        for method in descriptor_pool.Default().FindServiceByName(full_name).methods:
            setattr(self, method.name, guard.wrap(getattr(servicer, method.name), method))


class Guard:
    def __init__(self, budgets: Budgets, clock: Callable[[], float] = time.monotonic) -> None:
        self.budgets = budgets
        self.clock = clock

    def guarded(self, servicer: object, full_name: str) -> Guarded:
        return Guarded(servicer, full_name, self)

    def wrap(self, call: Callable[..., Any], method: MethodDescriptor) -> Callable[..., Any]:
        if method.client_streaming and method.server_streaming:
            return self._duplex(call, method.name)
        if method.server_streaming:
            return self._stream(call, method.name)
        return self._unary(call, method.name)

    async def refuse(self, context: Any, refusal: Refusal, where: str) -> NoReturn:
        if where in COMMANDS:
            metrics.rejected(RateLimited.code).inc()
        error = RateLimited(refusal.message, refusal.retry_after_ms)
        await context.abort(error.status, refusal.message, trailers(error))
        raise AssertionError("unreachable")  # context.abort raises

    async def open(self, context: Any, keys: tuple[str, ...], where: str) -> None:
        """A streaming call: one open-stream slot and one request, or the refusal (nothing held)."""
        refusal = self._opened(keys)
        if refusal is not None:
            await self.refuse(context, refusal, where)

    def _opened(self, keys: tuple[str, ...]) -> Refusal | None:
        refusal = self.budgets.open_watch(keys)
        if refusal is None:
            refusal = self.budgets.spend(keys, self.clock())
            if refusal is not None:
                self.budgets.close_watch(keys)
        return refusal

    def admit(self, context: Any) -> StreamBudget:
        """A `Play` stream opens: its slot and its first request, or `RateLimited` (nothing held)."""
        keys = caller_keys(context)
        refusal = self._opened(keys)
        if refusal is not None:
            raise refused(refusal)
        return StreamBudget(self.budgets, keys, self.clock)

    def _unary(self, call: Callable[..., Any], name: str) -> Callable[..., Any]:
        async def unary(request: Any, context: Any) -> Any:
            refusal = self.budgets.spend(caller_keys(context), self.clock())
            if refusal is not None:
                await self.refuse(context, refusal, name)
            return await call(request, context)

        return unary

    def _stream(self, call: Callable[..., Any], name: str) -> Callable[..., Any]:
        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            keys = caller_keys(context)
            await self.open(context, keys, name)
            try:
                async for item in call(request, context):
                    yield item
            finally:
                self.budgets.close_watch(keys)

        return stream

    def _duplex(self, call: Callable[..., Any], name: str) -> Callable[..., Any]:
        """`Play`: the servicer itself, told how to admit its stream and spend on each command. A partial of
        an async generator function is still one to grpc (`inspect` looks through it)."""
        return functools.partial(call, admit=self.admit)
