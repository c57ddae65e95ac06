"""The HTTP door reads requests within `gateway.bounds`, as the gRPC door does.

connect-python reads and decodes a request before any servicer code runs; a body it cannot decode would
end as UNKNOWN with the decoder's own words (which may quote the input), and a body of any size would be
read whole first. `Guarded` is mixed into each generated Connect application: per call it counts the
bytes it receives (a message over its method's limit is refused before the rest is read), inflates gzip
no further than the limit, decodes through `gateway.bounds`, and refuses what it cannot read as
INVALID_ARGUMENT with `malformed_input` in the `tablehall-error` trailer, like every other refusal.

It overrides two methods connect-python keeps private (`_handle_unary_connect`, `_handle_stream`): the
only places that hold a call's context together with its codec and body. pyproject.toml pins
connect-python below 0.10; tests/test_edge_malformed.py goes through both on every protocol.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, NoReturn

from connectrpc.code import Code
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from google.protobuf.message import Message

from gateway.bounds import MAX_BULK_REQUEST_BYTES, Unreadable, check_size, check_text, limit_of, not_a
from workers.edge import shown
from workers.errors import ERROR_CODE_KEY

Receive = Callable[[], Awaitable[Any]]

PREFIX = 5
"""An envelope's prefix (Connect streaming, gRPC-Web): one flag byte, a 4-byte big-endian length."""


class Refused(ConnectError):
    """A request the door does not read: INVALID_ARGUMENT, its `tablehall-error` trailer already set."""

    def __init__(self, unreadable: Unreadable) -> None:
        super().__init__(Code.INVALID_ARGUMENT, shown(str(unreadable)))
        self.unreadable = unreadable


class Reading:
    """One call's reading: its context (for the trailer) and its method's size limit."""

    def __init__(self, ctx: RequestContext[Any, Any], limit: int) -> None:
        self.ctx = ctx
        self.limit = limit

    def refuse(self, unreadable: Unreadable) -> NoReturn:
        self.ctx.response_trailers()[ERROR_CODE_KEY] = unreadable.code
        raise Refused(unreadable)

    def whole(self, receive: Receive) -> Receive:
        """A body that is one message (Connect unary): refused once it grows past the limit."""
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                self.refuse(Unreadable(f"the request is over the limit of {self.limit:,} bytes"))
            return message

        return counted

    def framed(self, receive: Receive) -> Receive:
        """An enveloped body (streams, gRPC-Web): each message refused as soon as its prefix declares it
        longer than the limit, before its bytes are read."""
        frames = _Frames()

        async def counted() -> Any:
            message = await receive()
            for size in frames.sizes(message.get("body", b"")):
                self.check(size)
            return message

        return counted

    def check(self, size: int) -> None:
        try:
            check_size(size, self.limit)
        except Unreadable as unreadable:
            self.refuse(unreadable)

    def codec(self, codec: Any) -> Any:
        return _Codec(codec, self)


class _Frames:
    """Follows the envelopes of a body across its chunks: the declared size of each message begun."""

    def __init__(self) -> None:
        self.prefix = bytearray()
        self.left = 0

    def sizes(self, chunk: bytes) -> list[int]:
        found = []
        at = 0
        while at < len(chunk):
            if self.left:
                step = min(self.left, len(chunk) - at)
                self.left -= step
                at += step
                continue
            take = chunk[at : at + PREFIX - len(self.prefix)]
            self.prefix.extend(take)
            at += len(take)
            if len(self.prefix) == PREFIX:
                self.left = int.from_bytes(self.prefix[1:], "big")
                self.prefix.clear()
                found.append(self.left)
        return found


READING: ContextVar[Reading | None] = ContextVar("tablehall_reading", default=None)
"""The call being read in this task (set by `Guarded`): what `BoundedGzip` refuses through."""


class _Codec:
    """A connect-python codec that decodes requests through `gateway.bounds`."""

    def __init__(self, codec: Any, reading: Reading) -> None:
        self.inner = codec
        self.reading = reading

    def name(self) -> str:
        name: str = self.inner.name()
        return name

    def encode(self, message: Any) -> bytes:
        encoded: bytes = self.inner.encode(message)
        return encoded

    def decode(self, data: bytes | bytearray, message: Message) -> Message:
        self.reading.check(len(data))
        try:
            self.inner.decode(data, message)
        except Exception:  # whatever fails to decode a client's bytes is that client's malformed input
            self.reading.refuse(not_a(message))
        try:
            check_text(message, len(data))
        except Unreadable as unreadable:
            self.reading.refuse(unreadable)
        return message


class BoundedGzip(GzipCompression):
    """gzip that inflates a request no further than its method's limit: a small body that would inflate
    to gigabytes is refused at the limit, not after the gigabytes."""

    def decompress(self, data: bytes | bytearray | memoryview) -> bytes:
        reading = READING.get()
        try:
            return inflated(data, reading.limit if reading is not None else MAX_BULK_REQUEST_BYTES)
        except Unreadable as unreadable:
            if reading is None:
                raise Refused(unreadable) from None
            reading.refuse(unreadable)


def inflated(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error:
        raise Unreadable("the request is not valid gzip") from None
    if len(out) > limit or inflate.unconsumed_tail:
        raise Unreadable(f"the request inflates past the limit of {limit:,} bytes")
    if not inflate.eof or inflate.unused_data:
        raise Unreadable("the request is not one whole gzip member")
    return out


class Guarded:
    """Mixed into a generated connect-python ASGI application (before it in the bases)."""

    async def _handle_unary_connect(
        self, http_method: str, headers: Any, codec: Any, query_params: Any, endpoint: Any, receive: Receive,
        send: Any, ctx: RequestContext[Any, Any],
    ) -> None:
        reading = _reading(endpoint, ctx)
        handle = super()._handle_unary_connect  # type: ignore[misc]
        body = reading.whole(receive)
        await handle(http_method, headers, reading.codec(codec), query_params, endpoint, body, send, ctx)

    async def _handle_stream(
        self, receive: Receive, send: Any, protocol: Any, endpoint: Any, codec: Any, headers: Any,
        ctx: RequestContext[Any, Any],
    ) -> None:
        reading = _reading(endpoint, ctx)
        handle = super()._handle_stream  # type: ignore[misc]
        await handle(reading.framed(receive), send, protocol, endpoint, reading.codec(codec), headers, ctx)


def _reading(endpoint: Any, ctx: RequestContext[Any, Any]) -> Reading:
    reading = Reading(ctx, limit_of(f"{endpoint.method.service_name}.{endpoint.method.name}"))
    READING.set(reading)
    return reading
