"""Settings shared by the gateway and the workers, from flags or the environment, so both compute the
same partition map and worker addresses (k8s: one ConfigMap feeds both)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from workers.storage import MemoryStorage, Storage

MEMORY = "memory"


@dataclass(frozen=True, slots=True)
class Topology:
    workers: int
    """How many worker processes share the partitions (0: one worker inside the gateway's process)."""
    address: str
    """Where worker k listens: a template with {ordinal} and {port} (= base port + ordinal)."""
    base_port: int

    def worker_address(self, ordinal: int) -> str:
        return self.address.format(ordinal=ordinal, port=self.base_port + ordinal)

    @staticmethod
    def from_env(workers: int | None = None, address: str | None = None) -> Topology:
        return Topology(
            workers if workers is not None else int(os.environ.get("TABLEHALL_WORKERS", "0")),
            address or os.environ.get("TABLEHALL_WORKER_ADDRESS", "127.0.0.1:{port}"),
            int(os.environ.get("TABLEHALL_WORKER_BASE_PORT", "50061")),
        )


def tolerance_ms(env: Mapping[str, str] = os.environ) -> int:
    """SB-11: how long an owner may be down or a timer late before a running clock's match is voided."""
    return int(float(env.get("TABLEHALL_TOLERANCE_S", "1")) * 1000)


def lease_ms(env: Mapping[str, str] = os.environ) -> int:
    """How long a partition's lease holds after its owner's heartbeat: TABLEHALL_LEASE_S, else half the
    tolerance, so a crashed worker's partitions are taken over and loaded within the tolerance and its
    running clocks go on."""
    lease_s = env.get("TABLEHALL_LEASE_S")
    return int(float(lease_s) * 1000) if lease_s else max(100, tolerance_ms(env) // 2)


async def open_storage(url: str | None) -> Storage:
    """`memory`, or a database URL (default: `TABLEHALL_DATABASE_URL`, else the SQLite file tablehall.db)."""
    from workers.sql.engine import database_url

    url = url or database_url()
    if url == MEMORY:
        return MemoryStorage()
    from workers.sql.storage import SqlStorage

    return await SqlStorage.open(url)


def fork_log_writers(url: str | None) -> None:
    """For `tablehall serve` writing its log to a database: fork the writers' fork server now, while the
    process has one thread (`writer_fork`), so that its writer is a process. Not for `tablehall worker`:
    there it cost the rolling restart's hand-offs and starts, for no gain on a machine whose cores the
    workers fill (README, Speed). Unless TABLEHALL_LOG_WRITER=thread; a URL that cannot be used is left for
    the storage's opening to report."""
    from workers.sql.engine import database_url

    url = url or database_url()
    if url == MEMORY:
        return
    from workers.sql import writer_child, writer_fork
    from workers.sql.writer_process import chosen_writer

    if chosen_writer() == "thread":
        return

    try:
        writer_fork.start(url, writer_child.run)
    except Exception:  # the storage's opening says what is wrong with the URL, as without this
        return
