"""Where a worker keeps what it accepted. One interface; in memory for now, the durable log later."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from workers.games.engine import JSON


@dataclass(frozen=True, slots=True)
class MatchEntry:
    match_id: str
    game: str
    players: tuple[str, ...]
    options: dict[str, JSON]
    token_sha256: tuple[bytes, ...]
    created_unix_ms: int
    lot: int


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One accepted change: a command (seat, action, t) or a deal (seat None, with its commitment salt)."""

    seq: int
    seat: int | None
    action: dict[str, JSON]
    t_ms: int


class Storage(Protocol):
    def create(self, entry: MatchEntry) -> None: ...

    def append(self, match_id: str, entry: LogEntry) -> None: ...

    def entries(self, match_id: str) -> list[LogEntry]: ...


@dataclass
class MemoryStorage:
    matches: dict[str, MatchEntry] = field(default_factory=dict)
    logs: dict[str, list[LogEntry]] = field(default_factory=dict)

    def create(self, entry: MatchEntry) -> None:
        self.matches[entry.match_id] = entry
        self.logs[entry.match_id] = []

    def append(self, match_id: str, entry: LogEntry) -> None:
        self.logs[match_id].append(entry)

    def entries(self, match_id: str) -> list[LogEntry]:
        return list(self.logs.get(match_id, []))


_ = Any
