"""How much of a request the public doors read: the size of a request message per method, the length of
every string in it. Both doors read requests through here (gRPC: gateway/server.py; Connect and gRPC-Web:
gateway/connect_door.py), so bytes that are no message, a request over its size or a string over its
length are refused alike: INVALID_ARGUMENT `malformed_input`, with a message that names the field and
never repeats the input. The figures are documented in README.md ("Limits") and in the .proto files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from google.protobuf.message import Message

from workers.games.errors import MalformedAction

MAX_TEXT = 256
"""Characters in any string field of a request (player names are held to 64 further in)."""

MAX_REQUEST_BYTES = 64 * 1024
"""Bytes of one request message: every method but the bulk ones."""

MAX_BULK_REQUEST_BYTES = 4 * 1024 * 1024
"""Bytes of one request message of a bulk method (up to 5,000 tables in one CreateTables)."""

BULK_METHODS = frozenset({"tablehall.v1.Tournaments.CreateTables", "tablehall.v1.Tournaments.CreateTournament"})

TRANSPORT_MAX_BYTES = 2 * MAX_BULK_REQUEST_BYTES
"""What the gRPC transport accepts at all (`grpc.max_receive_message_length`): above it a message is
dropped unread (RESOURCE_EXHAUSTED, gRPC's own answer); below it, over a method's limit, the service
answers `malformed_input` itself."""

M = TypeVar("M", bound=Message)


class Unreadable(MalformedAction):
    """A request the doors do not read: no message of its type, too big, or a string too long."""


def limit_of(method: str) -> int:
    """The size limit of one request message of `method` (full name: `tablehall.v1.Matches.Act`)."""
    return MAX_BULK_REQUEST_BYTES if method in BULK_METHODS else MAX_REQUEST_BYTES


def check_size(size: int, limit: int) -> None:
    if size > limit:
        raise Unreadable(f"a request of {size:,} bytes is over the limit of {limit:,} bytes")


def not_a(message: type[Message] | Message) -> Unreadable:
    return Unreadable(f"the request is not a {message.DESCRIPTOR.full_name} message")


def read(kind: type[M], data: bytes, limit: int) -> M:
    """One request message from its wire bytes, checked; `Unreadable` says why not."""
    check_size(len(data), limit)
    try:
        message = kind.FromString(data)
    except Exception:  # whatever fails to parse a client's bytes is that client's malformed input
        raise not_a(kind) from None
    check_text(message, len(data))
    return message


def check_text(message: Message, size: int) -> None:
    """Refuses the first string of `message` (nested, repeated or in a map) longer than `MAX_TEXT`.
    `size`: the bytes it was read from; no string in fewer than `MAX_TEXT` bytes can be longer (a
    character takes a byte at least, in protobuf and in JSON), so most requests are not walked at all."""
    if size <= MAX_TEXT:
        return
    found = _overlong(message)
    if found is not None:
        steps, length = found
        path = message.DESCRIPTOR.name + "".join(reversed(steps))
        raise Unreadable(f"{path} is {length:,} characters long; at most {MAX_TEXT} are read")


def _overlong(value: object) -> tuple[list[str], int] | None:
    """The path (innermost step first) and the length of the first string in `value` over the bound; the
    path is spelled only when one is found (requests are read on the hot path of every command)."""
    if isinstance(value, str):
        return ([], len(value)) if len(value) > MAX_TEXT else None
    if isinstance(value, Message):
        for field, item in value.ListFields():
            found = _overlong(item)
            if found is not None:
                found[0].append(f".{field.name}")
                return found
    elif isinstance(value, int | float | bytes):
        return None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            found = _overlong(key) or _overlong(item)
            if found is not None:
                found[0].append(f"[{key}]" if isinstance(key, int) else "[…]")
                return found
    elif isinstance(value, Sequence):
        for index, item in enumerate(value):
            found = _overlong(item)
            if found is not None:
                found[0].append(f"[{index}]")
                return found
    return None
