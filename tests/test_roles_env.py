"""The distributed roles configured by the environment alone, as k8s/ configures them (tablehall-config):
`tablehall worker --ordinal K` and `tablehall gateway` without --workers or --worker-address take the count
and the address template from TABLEHALL_WORKERS and TABLEHALL_WORKER_ADDRESS, and matches route across them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tablehall.client import Client
from tablehall.ports import free_port, free_ports
from tests.durability import Proc, run
from workers.partitions import owner_of

WORKERS = 2


def test_gateway_and_workers_take_the_topology_from_the_environment(tmp_path: Path) -> None:
    base = free_ports(WORKERS)
    gateway_port = free_port()
    env = {
        **os.environ,
        "TABLEHALL_WORKERS": str(WORKERS),
        "TABLEHALL_WORKER_ADDRESS": "127.0.0.1:{port}",
        "TABLEHALL_WORKER_BASE_PORT": str(base),
        "TABLEHALL_DATABASE_URL": "memory",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("TABLEHALL_METRICS_PORT", None)
    procs = [Proc(f"worker{k}", ["worker", "--ordinal", str(k)], env, tmp_path) for k in range(WORKERS)]
    procs.append(Proc("gateway", ["gateway", "--port", str(gateway_port)], env, tmp_path))

    async def body() -> None:
        await asyncio.gather(*(p.started() for p in procs))
        for k in range(WORKERS):
            assert any(f"worker {k} of {WORKERS} serving on 127.0.0.1:{base + k}" in ln for ln in procs[k].lines)
        owners = set()
        async with Client(f"127.0.0.1:{gateway_port}") as client:
            for _ in range(12):
                created = await client.create_match("spectacular-bid", ["Ana", "Bia"])
                owners.add(owner_of(created.match_id, WORKERS))
                _seq, view = await client.seat(created.match_id, created.tokens[0]).view()
                assert view["status"] == "in_progress"
        assert owners == set(range(WORKERS)), owners

    try:
        run(body, timeout=90)
    finally:
        for proc in procs:
            proc.stop()
