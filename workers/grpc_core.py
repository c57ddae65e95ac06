"""How gRPC's core does its I/O in tablehall's processes: its own sockets and pollers, not the EventEngine.

grpcio 1.80 moved Python's listeners and client connections onto gRPC's EventEngine, where every message
also crosses the EventEngine's threads before Python's poller thread hands it to the event loop. On this
repository's 2-core machine that cost about a quarter more CPU per message on each side (`tablehall bench
floor`, back to back: server 0.19 -> 0.14 ms a command, client likewise, 5,000 -> 7,000 commands/s), so the
processes run with the two experiments off, as every grpcio before 1.80 did. An operator's own
`GRPC_EXPERIMENTS` is left alone. A grpcio that no longer knows these experiments logs "Unknown
experiment" once at start and runs its own way.
"""

from __future__ import annotations

import os

EXPERIMENTS = "-event_engine_client,-event_engine_listener"
"""`GRPC_EXPERIMENTS` unless the environment sets it (the experiments gRPC reads once, at `import grpc`)."""


def configure() -> None:
    """Set `GRPC_EXPERIMENTS` for this process and its children, unless it is set (idempotent)."""
    os.environ.setdefault("GRPC_EXPERIMENTS", EXPERIMENTS)
