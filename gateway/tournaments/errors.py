"""The Tournaments API's own refusals, each with a stable code (mapped to a gRPC status in gateway.status)."""

from __future__ import annotations

from workers.errors import ServiceError


class BatchRejected(ServiceError):
    """A batch of tables (or a tournament's players) that cannot be created as asked; nothing was."""

    code = "batch_rejected"


class NoDatabase(ServiceError):
    """Tournaments live in the database: a service running with TABLEHALL_DATABASE_URL=memory has none."""

    code = "no_database"


class RoundNotOver(ServiceError):
    """The organizer asked for the next round while tables of the current one are still playing."""

    code = "round_not_over"


class TournamentOver(ServiceError):
    code = "tournament_over"


class NotYours(ServiceError):
    """A valid organizer key asking about another organizer's batch or tournament."""

    code = "permission_denied"
