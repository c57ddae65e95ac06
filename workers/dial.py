"""How one process of the service dials another (gateway → worker, worker → worker, sweeps → worker).

gRPC's default reconnect backoff starts at 1 s and grows ×1.6 up to 120 s, and a channel in backoff fails
calls at once. A worker started again at the same address (the dev-cluster, the static mode, a pod that
keeps its IP) was then unreachable for seconds to minutes through channels that had seen the old one die:
its peers could not hand it partitions, and the gateway's health probes marked it down again and again.
Channels between the service's own processes retry a connection after 100 ms, and never wait over 1 s.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

RECONNECT: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


OWN_CONNECTION: tuple[tuple[str, int], ...] = (("grpc.use_local_subchannel_pool", 1),)
"""A channel that never shares its connection with another channel of the process. gRPC keeps one
connection per address for all of a process's channels by default, so a channel dialled afresh after a
failure could pick up the old channel's connection while it still waits out its reconnect backoff, and fail
at once (seen once in CI: a worker started again at a dead one's address failed its first probe)."""


def dial(address: str, options: Sequence[tuple[str, int]] = ()) -> grpc.aio.Channel:
    """A plaintext channel to another process of the service, quick to reconnect."""
    return grpc.aio.insecure_channel(address, options=[*RECONNECT, *options])
