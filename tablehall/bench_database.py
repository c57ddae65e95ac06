"""The database server's own CPU during `tablehall bench service`, when it runs on this machine (PostgreSQL).

A durable service's cost per command includes the database's work (parsing, WAL, commits), which runs in
the server's processes, not ours: without it the figures of a PostgreSQL run leave out part of what the two
cores spend. The server is found through a connection of our own: its backend's parent is the postmaster,
whose processes (backends, WAL writer, checkpointer, …) are read from /proc. A backend that ended during the
load is counted too: the postmaster reaps it, and its CPU joins the postmaster's children's time.

What it counts is the whole server's, every database's: run the bench on a server nobody else loads.
A server on another machine (or a /proc we cannot read) is not counted, and the figures say so.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tablehall.processes import children, stat_fields

NAME = "PostgreSQL"
"""The server's name among the processes in `tablehall bench service`'s CPU figures."""


@dataclass(frozen=True, slots=True)
class DatabaseServer:
    """A local PostgreSQL server, by its postmaster's pid."""

    postmaster: int

    @staticmethod
    def of(url: str) -> DatabaseServer | None:
        """The server behind `url` when it is PostgreSQL on this machine; else None (nothing to count)."""
        if not url.startswith("postgresql"):
            return None
        engine = create_engine(url, poolclass=NullPool)
        try:
            with engine.connect() as conn:  # its backend read while it lives (it ends with the connection)
                parent = _parent(int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one()))
        except Exception:  # unreachable now: the bench itself will say so
            return None
        finally:
            engine.dispose()
        if parent is None or not _is_postgres(parent):
            return None  # not this machine's process (a remote server, or a container's own pid space)
        return DatabaseServer(parent)

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server so far: the postmaster, its reaped children, its live ones."""
        spent = 0
        for child in children(self.postmaster):  # before the postmaster's own: one reaped in between counts
            own = stat_fields(child)  # twice (a tick or two of an ending backend), never not at all
            if own is not None:
                spent += int(own[11]) + int(own[12])
        fields = stat_fields(self.postmaster)
        if fields is None:
            return 0.0
        spent += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        return spent / os.sysconf("SC_CLK_TCK")


def uncounted(database_url: str, counted: Mapping[str, float]) -> str:
    """What the CPU figures leave out: a PostgreSQL server they could not read (not on this machine)."""
    if database_url.startswith("postgresql") and NAME not in counted:
        return f" ({NAME}'s own not counted: its server is not on this machine)"
    return ""


def _parent(pid: int) -> int | None:
    fields = stat_fields(pid)
    return None if fields is None else int(fields[1])


def _is_postgres(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip() in ("postgres", "postmaster")
    return False
