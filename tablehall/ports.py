"""Ports for child processes started here (the tests', a bench's `tablehall serve` and its /metrics), chosen
outside the kernel's ephemeral range.

A port probed free here is bound by a child process a moment later (a worker restarted after kill -9 binds
its old port again). Inside the ephemeral range, any outgoing connection of any process on the machine
(a client of PostgreSQL, Redis or a test's gRPC channel) may be given that port meanwhile; CI saw a
restarted worker fail so. Outside it only another explicit bind can take it, and these are drawn at random
from some 20,000 ports, each checked free when drawn.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10_000
"""Below this, the well-known services a machine may run."""
_draw = random.SystemRandom()


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out on its own (Linux's setting, else its default)."""
    try:
        low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return 32_768, 60_999
    return low, high


def free_ports(count: int = 1) -> int:
    """A base port such that base .. base+count-1 are all free now, none of them an ephemeral port."""
    low, high = ephemeral_range()
    start, end = max([(LOWEST, low - 1), (high + 1, 65_535)], key=lambda span: span[1] - span[0])
    for _ in range(500):
        base = _draw.randrange(start, end - count + 2)
        held: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                probe = socket.socket()
                held.append(probe)
                probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for probe in held:
                probe.close()
    raise RuntimeError(f"no block of {count} free ports between {start} and {end}")


def free_port() -> int:
    """One free port outside the ephemeral range."""
    return free_ports(1)
