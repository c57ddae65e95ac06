"""What the log-writer tests share: a process's descendants as /proc shows them, waiting for processes to
end, and reading back what a database's logs hold as a fresh storage (as after a restart)."""

from __future__ import annotations

import asyncio
import os
import select
import time
from collections.abc import Iterable
from pathlib import Path

from tablehall.processes import children
from workers.sql import SqlStorage

BOUND_S = 60.0


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`, with its /proc comm (a fork keeps its parent's command line)."""
    found: dict[int, str] = {}
    pending = children(pid)
    while pending:
        child = pending.pop()
        try:
            found[child] = Path(f"/proc/{child}/comm").read_text().strip()
            pending += children(child)
        except OSError:
            continue
    return found


def ended(pid: int) -> bool:
    """The process is gone, a zombie nobody reaped, or dead and being reaped (Z, X): it runs no more."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def outlived_by_none(writers: Iterable[int]) -> None:
    """Every one of these processes ends (the serving process they wrote for is gone), within the bound:
    each waited for through a pidfd, readable once the process has exited (not this one's child)."""
    deadline = time.monotonic() + BOUND_S
    for pid in writers:
        try:
            watched = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # gone already
        try:
            select.select([watched], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(watched)
        assert ended(pid), f"process {pid} outlived the process it worked for"


def logged(url: str, match_ids: Iterable[str]) -> dict[str, list[int]]:
    """Per match, the seqs its log holds, read by a fresh storage (as after a restart)."""

    async def logs() -> dict[str, list[int]]:
        storage = await SqlStorage.open(url)
        try:
            return {m: [e.seq for e in await storage.log(m)] for m in match_ids}
        finally:
            await storage.close()

    return asyncio.run(asyncio.wait_for(logs(), BOUND_S))
