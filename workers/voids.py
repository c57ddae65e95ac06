"""Why the service voids a match (SB-11 faults, the sweeps, the tournaments): the one list of reasons that
the host, the sweep, the tournaments and the metrics (`tablehall_matches_voided_total{reason}`) share."""

from __future__ import annotations

from enum import StrEnum


class VoidReason(StrEnum):
    WORKER_DOWN = "worker_down"
    """A worker recovered the match after an outage longer than the tolerance while a deadline was pending."""
    TIMER_LATE = "timer_late"
    """The match's deadline timer fired later than the tolerance (an overloaded event loop)."""
    OWNER_UNREACHABLE = "owner_unreachable"
    """The sweep found the match overdue and its owner did not answer."""
    ABANDONED = "abandoned"
    """Nobody ever acted at the table, or a clockless table stayed idle too long (the players' doing)."""
    CANCELLED = "cancelled"
    """A batch of tables that could not be created everywhere: what was made is voided."""
