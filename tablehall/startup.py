"""Why a command could not start, in one line: the command line prints it and exits 2, never a traceback.

`explain(error)` words the failures a user causes by what they typed or where they run it (a database URL
that cannot be used, a port already taken, no service at the address); anything else is a bug and keeps
its traceback. `port_taken(host, port)` asks before a server starts anything, so a taken port is said at
once, before workers, databases and log lines.
"""

from __future__ import annotations

import re
import socket
import sys

BIND_FAILED = re.compile(r"Failed to bind to address (\S+?);")
"""grpc's words when a server cannot listen (grpc/_common.py); it raises a bare RuntimeError."""


def explain(error: BaseException) -> str | None:
    """One line for a start-up failure the user can fix, or None (an unexpected error)."""
    client = sys.modules.get("tablehall.client")  # these classes exist only once their modules were loaded
    engine = sys.modules.get("workers.sql.engine")
    if client is not None and isinstance(error, client.ServiceUnreachable):
        return str(error)
    if engine is not None and isinstance(error, engine.DatabaseUnusable):
        return str(error)
    metrics = sys.modules.get("workers.metrics")
    if metrics is not None and isinstance(error, metrics.MetricsUnavailable):
        return str(error)
    if isinstance(error, RuntimeError) and (bound := BIND_FAILED.search(str(error))):
        return cannot_listen(bound.group(1), "the port is taken, or the address is not this machine's")
    return None


def cannot_listen(where: str, reason: str) -> str:
    return f"cannot listen on {where} ({reason}): choose another with --port (0 picks a free one)"


def port_taken(host: str, port: int) -> str | None:
    """None when `host:port` can be listened on now, else why not in one line. Port 0 is always free."""
    if port == 0:
        return None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as error:
        return cannot_listen(f"{host}:{port}", f"unknown address: {error}")
    family, kind, proto, _, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no obstacle
        try:
            probe.bind(address)
        except OSError as error:
            return cannot_listen(f"{host}:{port}", error.strerror or str(error))
    return None
