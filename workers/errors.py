"""Service errors, one class per kind of failure, each with a stable code (the rules' own errors are in
`workers.games.errors`). The gateway maps every code to a gRPC status once, in `gateway.status`."""

from __future__ import annotations

from typing import ClassVar

from workers.games.errors import IllegalAction, MalformedAction, RulesError


class ServiceError(Exception):
    code: ClassVar[str] = "internal"


class NotFound(ServiceError):
    code = "not_found"


class Unauthenticated(ServiceError):
    """No token, or a token that is no seat of this match."""

    code = "unauthenticated"


class NotYourSeat(ServiceError):
    """A valid token asked to act for another seat."""

    code = "permission_denied"


class NotFinished(ServiceError):
    """What needs a finished match (its record) asked of one still running."""

    code = "not_finished"


class NotOwner(ServiceError):
    """A worker asked for a match of a partition it does not own (nothing was done: safe to send again,
    to `moved_to` when the partition is known to have moved there)."""

    code = "wrong_owner"

    def __init__(self, message: str, moved_to: str = "") -> None:
        super().__init__(message)
        self.moved_to = moved_to


class Unavailable(ServiceError):
    code = "unavailable"


class NotStarted(ServiceError):
    """A command for a scheduled match before its start (nothing is dealt, no clock runs yet)."""

    code = "not_started"


class RateLimited(ServiceError):
    """A caller over its request budget or its open-stream limit (gateway/limits.py): retry later."""

    code = "rate_limited"


ERRORS: dict[str, type[Exception]] = {
    cls.code: cls
    for cls in (
        NotFound,
        Unauthenticated,
        NotYourSeat,
        NotFinished,
        NotOwner,
        Unavailable,
        NotStarted,
        RateLimited,
        IllegalAction,
        MalformedAction,
    )
}


def error_for(code: str, message: str, moved_to: str = "") -> Exception:
    """Rebuild an error that crossed the internal gateway→worker hop."""
    if code == NotOwner.code:
        return NotOwner(message, moved_to)
    return ERRORS.get(code, ServiceError)(message)


__all__ = ["ERRORS", "RulesError", "ServiceError", "error_for"]
