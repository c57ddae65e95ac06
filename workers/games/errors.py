"""One error class per kind of failure, each with a stable code and the gRPC status it travels with."""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar


class Status(Enum):
    """A refusal's gRPC status by its gRPC name: the core imports no grpc, so `workers.errors` turns a
    member into grpc's own `StatusCode` of the same name."""

    INVALID_ARGUMENT = "invalid_argument"
    FAILED_PRECONDITION = "failed_precondition"
    INTERNAL = "internal"


class RulesError(Exception):
    """Base of every error the rules core raises; `code` is stable across releases, `status` is how a
    call it ends reads over gRPC. A subclass that sets its own code sets its status beside it."""

    code: ClassVar[str] = "rules_error"
    status: ClassVar[Status] = Status.INTERNAL

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in vars(cls) and "status" not in vars(cls):
            raise TypeError(f"{cls.__name__} sets code {cls.code!r} without its status")


class IllegalAction(RulesError):
    """A well-formed action that the rules do not allow now; the state is left untouched."""

    code = "illegal_action"
    status = Status.FAILED_PRECONDITION


class MalformedAction(RulesError):
    """An action, deal or option that cannot be read at all (unknown tile, missing field, ...)."""

    code = "malformed_input"
    status = Status.INVALID_ARGUMENT


QUOTED_CHARS = 40
"""The most of a client's input that an error message repeats; the rest is counted, never echoed."""


def quote(value: object, *, marks: bool = True) -> str:
    """Client input as every error message shows it: its repr (`marks=False`: a string as it is), cut to
    `QUOTED_CHARS` characters with the length of the whole, so a refusal stays short however big the
    input was."""
    if isinstance(value, str):
        shown = value[:QUOTED_CHARS]
        shown = repr(shown) if marks else shown
        return shown if len(value) <= QUOTED_CHARS else f"{shown}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else f"{text[:QUOTED_CHARS]}… ({len(text):,} characters)"
