"""Messages put together from parts already serialized, and what watchers are handed: an update's bytes.

Protobuf's encoding is a sequence of fields, so a message's bytes are the bytes of its parts one after the
other, and an embedded message is its bytes behind its field's tag and length. An update is built once per
change and seat (its parts once per change: what every watcher of the change shares), and then travels as
those bytes: into each `Play` event behind one tag, into a worker's feed, through the gateway and out to
the client, parsed by nobody on the way (each parse and copy of a view cost the service microseconds a
watcher; `tablehall bench service`). gRPC handlers whose serializer is `passing(cls)` send bytes as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from protos.tablehall.v1 import matches_pb2
from workers.games.values import built_fast

_SHORT = [bytes([n]) for n in range(0x80)] + [bytes((n & 0x7F | 0x80, n >> 7)) for n in range(0x80, 0x4000)]
"""Every varint of one or two bytes (below 16,384: the length of a view or an update, most seqs), made once."""


def varint(value: int) -> bytes:
    """An unsigned integer as protobuf encodes it (seven bits a byte, low bits first)."""
    if value < 0x4000:
        return _SHORT[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int) -> bytes:
    """The key of a length-delimited field (an embedded message, bytes, a string) numbered `number`."""
    return varint(number << 3 | 2)


def field(key: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its key (`tag`), the payload's length, the payload."""
    return key + varint(len(payload)) + payload


def varint_key(number: int) -> bytes:
    """The key of a varint field (an integer or a bool) numbered `number`."""
    return varint(number << 3)


def passing(cls: Any) -> Callable[[Any], bytes]:
    """A gRPC serializer for messages of `cls` that sends bytes (a message serialized already) as they are."""
    serialize = cls.SerializeToString

    def serialized(message: Any) -> bytes:
        return message if isinstance(message, bytes) else serialize(message)

    return serialized


@built_fast  # one for every update of every seat
@dataclass(frozen=True, slots=True)
class Posted:
    """One watcher's update of one change as it goes out: a `matches.Update`, serialized. Every watcher of a
    seat (and form) woken by a change is handed the same one."""

    seq: int
    wire: bytes

    def update(self) -> matches_pb2.Update:
        """The message itself (for the few readers that look inside: spectators' delays, tests)."""
        return matches_pb2.Update.FromString(self.wire)

    @staticmethod
    def of(update: matches_pb2.Update) -> Posted:
        return Posted(update.seq, update.SerializeToString())


PLAY_UPDATE, PLAY_RESULT, PLAY_ANSWERED = (tag(matches_pb2.PlayEvent.DESCRIPTOR.fields_by_name[name].number)
                                           for name in ("update", "result", "answered"))  # fmt: skip
"""The keys of a `PlayEvent`'s fields."""


def play_update(posted: Posted, answered: matches_pb2.CommandResult | None = None) -> bytes:
    """A `PlayEvent` carrying this update (and the result of the command that made it), serialized."""
    event = field(PLAY_UPDATE, posted.wire)
    return event if answered is None else event + field(PLAY_ANSWERED, answered.SerializeToString())


def play_result(result: matches_pb2.CommandResult) -> bytes:
    """A `PlayEvent` carrying a command's result alone, serialized."""
    return field(PLAY_RESULT, result.SerializeToString())


def handlers(service: str, servicer: object) -> dict[str, grpc.RpcMethodHandler]:
    """gRPC method handlers for every method of `service` (its full name), each calling the servicer's
    method of that name; responses may be messages or bytes (`passing`)."""
    kinds = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    found = descriptor_pool.Default().FindServiceByName(service)
    return {
        method.name: kinds[method.client_streaming, method.server_streaming](
            getattr(servicer, method.name),
            GetMessageClass(method.input_type).FromString,
            passing(GetMessageClass(method.output_type)),
        )
        for method in found.methods
    }
