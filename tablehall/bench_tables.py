"""`tablehall bench tables --tables 1000`: the time to schedule N tables in one call, embedded mode.

Starts `tablehall serve` (gateway and in-process worker, one process) on a new SQLite file (or
`--database-url`), makes an organizer key in that database, warms the path with a one-table batch, then
times, each as one `CreateTables` call seen by the client: N tables starting now (created, dealt and
logged), N tables held for an hour (`start_at`), and `StartTables` starting those N now. Every player
name is distinct within a call. The figures include the client building the request and reading the
2N tokens of the reply.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from protos.tablehall.v1 import tournaments_pb2, tournaments_pb2_grpc
from tablehall.children import stop
from workers.games.catalog import fewest_seats


def bench_tables(tables: int, game: str, database_url: str | None) -> int:
    seats = fewest_seats(game)
    with tempfile.TemporaryDirectory(prefix="tablehall-bench-tables-") as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        from gateway.tournaments.organizers import create_organizer
        from workers.sql.migrate import engine_for

        key = create_organizer(engine_for(url), f"bench-{os.getpid()}-{time.time_ns()}")
        env = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING"}
        command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", url]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            if "serving on" not in line:
                print(f"tablehall bench tables: the service did not start: {line!r}", file=sys.stderr)
                return 1
            address = line.split()[3]
            figures = asyncio.run(_measure(address, key, tables, game, seats))
        finally:
            stop(server)
    where = url.split("://")[0]
    print(f"{tables} {game} tables ({tables * seats} players) in one call, embedded ({where}):")
    for what, seconds in figures:
        print(f"  {what:<34} {seconds:6.3f} s")
    return 0


async def _measure(address: str, key: str, n: int, game: str, seats: int) -> list[tuple[str, float]]:
    metadata = (("authorization", f"Bearer {key}"),)
    async with grpc.aio.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20)]) as ch:
        stub = tournaments_pb2_grpc.TournamentsStub(ch)

        def request(count: int, start_unix_ms: int | None) -> tournaments_pb2.CreateTablesRequest:
            names = [f"player{i:06}" for i in range(count * seats)]
            seated = [names[i : i + seats] for i in range(0, len(names), seats)]
            made = tournaments_pb2.CreateTablesRequest(
                game=game, tables=[tournaments_pb2.TableRequest(players=p) for p in seated]
            )
            if start_unix_ms is not None:
                made.start_unix_ms = start_unix_ms
            return made

        await stub.CreateTables(request(1, None), metadata=metadata)  # warm: channel, engine, first batch
        figures = []
        started = time.perf_counter()
        now = await stub.CreateTables(request(n, None), metadata=metadata)
        figures.append(("create, clocks start now", time.perf_counter() - started))
        assert len(now.tables) == n
        started = time.perf_counter()
        held = await stub.CreateTables(request(n, time.time_ns() // 1_000_000 + 3_600_000), metadata=metadata)
        figures.append(("create, held for an hour", time.perf_counter() - started))
        started = time.perf_counter()
        go = await stub.StartTables(tournaments_pb2.StartTablesRequest(batch_id=held.batch_id), metadata=metadata)
        figures.append(("start the held ones now", time.perf_counter() - started))
        assert go.started == n
    return figures
