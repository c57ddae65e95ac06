"""The per-client limits (gateway/limits.py) in front of the public services, on both doors.

`Guard.guarded` wraps a servicer the way `ConnectBridge` does (one method per RPC of its descriptor), so
the grpcio server and the HTTP door (gateway/web.py) run the same wrapped instances. Each call spends
one request of its connection (`context.peer()`) and of its bearer token (by SHA-256); a streaming call
also holds one open-stream slot while it runs, and every command on a `Play` stream spends one request.
A refusal is RESOURCE_EXHAUSTED with the code `rate_limited` in `tablehall-error` and a hint in
`retry-after-ms`; it never reaches a worker, so it changes nothing. A `Play` stream whose command is over
budget ends with that refusal (its earlier commands stand; resume with `after_seq`).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import MethodDescriptor

from gateway.limits import Budgets, Refusal
from workers import metrics
from workers.edge import ERROR_CODE_KEY
from workers.errors import RateLimited

RETRY_AFTER_KEY = "retry-after-ms"
COMMANDS = frozenset({"Act", "Play"})
"""Whose refusals count in `tablehall_commands_rejected_total{code="rate_limited"}`."""


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
class _Stream:
    """A Play stream's refusal, set from the task reading its requests. The call's own task first hands
    on what the servicer has ready (the results of the commands before the refused one); once it waits
    inside the servicer with nothing ready (it may wait there long, for the next update), it is
    cancelled, and the refusal ends the call."""

    task: asyncio.Task[Any] | None
    inside: bool = False
    steps: int = 0
    refusal: Refusal | None = None
    cancelled: bool = False

    def enter(self) -> None:
        """The call's task asks the servicer for its next message."""
        self.inside = True
        self.steps += 1
        if self.refusal is not None:
            self._check_soon()

    def refuse(self, refusal: Refusal) -> None:
        self.refusal = refusal
        if self.inside:
            self._check_soon()

    def _check_soon(self) -> None:
        asyncio.get_running_loop().call_soon(self._check, self.steps)

    def _check(self, steps: int) -> None:
        """Still inside, no step taken for a whole turn of the loop: it waits on nothing ready."""
        if self.inside and self.steps == steps and not self.cancelled and self.task is not None:
            self.cancelled = True
            self.task.cancel()


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
        trailers = ((ERROR_CODE_KEY, RateLimited.code), (RETRY_AFTER_KEY, str(refusal.retry_after_ms)))
        await context.abort(RateLimited.status, refusal.message, trailers)
        raise AssertionError("unreachable")  # context.abort raises

    async def open(self, context: Any, keys: tuple[str, ...], where: str) -> None:
        """A streaming call: one open-stream slot and one request, or the refusal (nothing held)."""
        refusal = self.budgets.open_watch(keys)
        if refusal is None:
            refusal = self.budgets.spend(keys, self.clock())
            if refusal is not None:
                self.budgets.close_watch(keys)
        if refusal is not None:
            await self.refuse(context, refusal, where)

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
        async def duplex(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            keys = caller_keys(context)
            await self.open(context, keys, name)
            stream = _Stream(asyncio.current_task())
            events = call(self._counted(requests, keys, stream), context)
            try:
                while True:
                    stream.enter()
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        break
                    except asyncio.CancelledError:
                        if not stream.cancelled or stream.task is None:
                            raise
                        stream.task.uncancel()  # our own cancel: the refusal below ends the call
                        break
                    finally:
                        stream.inside = False
                    yield event
                if stream.refusal is not None:
                    await events.aclose()
                    await self.refuse(context, stream.refusal, name)
            finally:
                self.budgets.close_watch(keys)

        return duplex

    async def _counted(
        self, requests: AsyncIterator[Any], keys: tuple[str, ...], stream: _Stream
    ) -> AsyncIterator[Any]:
        """The stream's requests; the first (the opening) was paid with the call, each later one spends
        a request. Over budget, the stream is refused and no further request is passed on."""
        first = True
        async for request in requests:
            if not first:
                refusal = self.budgets.spend(keys, self.clock())
                if refusal is not None:
                    stream.refuse(refusal)
                    return
            first = False
            yield request
