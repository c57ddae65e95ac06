"""Service errors, one class per kind of failure, each with its stable code and its gRPC status (the
rules' own errors are in `workers.games.errors`, their status by name). The tables of codes are derived
from the classes; `workers.edge` ends every call with the status of the error that ended it."""

from __future__ import annotations

from typing import Any, ClassVar

import grpc

from workers.games.errors import IllegalAction, MalformedAction, RulesError

ERROR_CODE_KEY = "tablehall-error"
"""The trailer with a refusal's stable code (every door, every hop)."""
MOVED_TO_KEY = "tablehall-moved-to"
"""Internal calls: with `wrong_owner`, where the match's partition went (the router sends it there)."""
RETRY_AFTER_KEY = "retry-after-ms"
"""With `rate_limited`: how long the caller waits before it tries again."""


class ServiceError(Exception):
    """Base of the service's refusals: `code` is stable across releases (the `tablehall-error` trailer,
    metrics labels), `status` is how the call reads over gRPC. A subclass that sets its own code sets its
    status beside it."""

    code: ClassVar[str] = "internal"
    status: ClassVar[grpc.StatusCode] = grpc.StatusCode.INTERNAL

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in vars(cls) and "status" not in vars(cls):
            raise TypeError(f"{cls.__name__} sets code {cls.code!r} without its status")


class NotFound(ServiceError):
    code = "not_found"
    status = grpc.StatusCode.NOT_FOUND


class Unauthenticated(ServiceError):
    """No token, or a token that is no seat of this match."""

    code = "unauthenticated"
    status = grpc.StatusCode.UNAUTHENTICATED


class NotYourSeat(ServiceError):
    """A valid token asked to act for another seat."""

    code = "permission_denied"
    status = grpc.StatusCode.PERMISSION_DENIED


class NotFinished(ServiceError):
    """What needs a finished match (its record) asked of one still running."""

    code = "not_finished"
    status = grpc.StatusCode.FAILED_PRECONDITION


class NotOwner(ServiceError):
    """A worker asked for a match of a partition it does not own (nothing was done: safe to send again,
    to `moved_to` when the partition is known to have moved there)."""

    code = "wrong_owner"
    status = grpc.StatusCode.UNAVAILABLE

    def __init__(self, message: str, moved_to: str = "") -> None:
        super().__init__(message)
        self.moved_to = moved_to


class Unavailable(ServiceError):
    code = "unavailable"
    status = grpc.StatusCode.UNAVAILABLE


class NotStarted(ServiceError):
    """A command for a scheduled match before its start (nothing is dealt, no clock runs yet)."""

    code = "not_started"
    status = grpc.StatusCode.FAILED_PRECONDITION


class RateLimited(ServiceError):
    """A caller over its request budget or its open-stream limit (gateway/limits.py): retry later, after
    `retry_after_ms` (the `retry-after-ms` trailer)."""

    code = "rate_limited"
    status = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, message: str, retry_after_ms: int = 0) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


class SpectatorDelay(ServiceError):
    """A spectator's view of a delayed tournament table asked before any of its changes is old enough to show."""

    code = "spectator_delay"
    status = grpc.StatusCode.FAILED_PRECONDITION


class AlreadyQueued(ServiceError):
    """A player who is in the Lobby's queue already asked to join again (one place in one queue)."""

    code = "already_queued"
    status = grpc.StatusCode.ALREADY_EXISTS


class NameTaken(ServiceError):
    """A player name that someone has already: a registered name is one player's."""

    code = "name_taken"
    status = grpc.StatusCode.ALREADY_EXISTS


class OwnChallenge(ServiceError):
    """A player taking their own challenge, or a seat of one they hold already."""

    code = "own_challenge"
    status = grpc.StatusCode.FAILED_PRECONDITION


class ChallengeExpired(ServiceError):
    """A challenge taken after its lifetime (`TABLEHALL_LOBBY_CHALLENGE_S`): nobody can take it any more."""

    code = "challenge_expired"
    status = grpc.StatusCode.FAILED_PRECONDITION


LOBBY_ERRORS = (AlreadyQueued, NameTaken, OwnChallenge, ChallengeExpired)
"""The Lobby's refusals: answered by the gateway itself, they never cross the hop to a worker."""


ERRORS: dict[str, type[ServiceError] | type[RulesError]] = {
    kind.code: kind
    for kind in (
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
"""The refusals that cross the gateway→worker hop, by code (`error_for` rebuilds them on the far side)."""


def status_of(kind: type[BaseException]) -> grpc.StatusCode:
    """The gRPC status a call ends with when `kind` ends it: its own, INTERNAL for an unexpected error."""
    if issubclass(kind, ServiceError):
        return kind.status
    if issubclass(kind, RulesError):
        return grpc.StatusCode[kind.status.name]
    return grpc.StatusCode.INTERNAL


STATUS: dict[str, grpc.StatusCode] = {code: status_of(kind) for code, kind in ERRORS.items()}
"""Each code of `ERRORS` with its gRPC status, derived from the classes."""


def error_for(code: str, message: str, moved_to: str = "") -> Exception:
    """Rebuild an error that crossed the internal gateway→worker hop."""
    if code == NotOwner.code:
        return NotOwner(message, moved_to)
    return ERRORS.get(code, ServiceError)(message)


__all__ = ["ERRORS", "LOBBY_ERRORS", "STATUS", "RulesError", "ServiceError", "error_for", "status_of"]
