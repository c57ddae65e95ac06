"""The Tournaments API's own refusals, each with its stable code and its gRPC status (`workers.errors`)."""

from __future__ import annotations

import grpc

from workers.errors import NotYourSeat, ServiceError


class BatchRejected(ServiceError):
    """A batch of tables (or a tournament's players) that cannot be created as asked; nothing was."""

    code = "batch_rejected"
    status = grpc.StatusCode.INVALID_ARGUMENT


class NoDatabase(ServiceError):
    """Tournaments live in the database: a service running with TABLEHALL_DATABASE_URL=memory has none."""

    code = "no_database"
    status = grpc.StatusCode.FAILED_PRECONDITION


class RoundNotOver(ServiceError):
    """The organizer asked for the next round while tables of the current one are still playing."""

    code = "round_not_over"
    status = grpc.StatusCode.FAILED_PRECONDITION


class TournamentOver(ServiceError):
    code = "tournament_over"
    status = grpc.StatusCode.FAILED_PRECONDITION


class NotYours(ServiceError):
    """A valid organizer key asking about another organizer's batch or tournament."""

    code = NotYourSeat.code  # the same refusal as another seat's token
    status = NotYourSeat.status
