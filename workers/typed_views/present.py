"""A field of a typed view as view_json has it: its value, or None (null) when unset."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message


def present(message: Message, name: str) -> Any:
    return getattr(message, name) if message.HasField(name) else None
