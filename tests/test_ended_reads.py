"""Every match ever created can be read: a finished and a voided match answer GetRecord, GetView (each seat
and a spectator) and Watch with the same bytes after a restart of the workers, of `tablehall serve`, of
the gateway, as before it (the worker loads an ended match from the log on demand)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from protos.tablehall.v1 import host_pb2, matches_pb2
from tablehall.client import Client, CreatedMatch
from tablehall.ports import free_port
from tests.durability import DB_BACKENDS, Internal, Proc, database, run
from tests.leased import fleet
from workers.partitions import partition_of

Reads = dict[str, bytes]


@pytest.fixture(params=DB_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as found:
        yield found


async def ended_pair(client: Client) -> tuple[CreatedMatch, CreatedMatch]:
    """A finished match (a resignation after a few moves) and a match voided while it ran."""
    finished = await client.create_match("spectacular-bid", ["Ana", "Bia"], {"start_points": 40})
    seats = [client.seat(finished.match_id, t) for t in finished.tokens]
    for seat in seats:
        await seat.act({"do": "ready"})
    await seats[0].act({"do": "resign"})
    voided = await client.create_match("501", ["Cy", "Di", "Ed"])
    return finished, voided


async def void(worker_address: str, match_id: str) -> None:
    internal = Internal(worker_address)
    try:
        cancel = host_pb2.HostTablesRequest(match_ids=[match_id], reason="cancelled")
        reply = await internal.call("CancelTables", cancel)
        assert [t.status for t in reply.tables] == ["voided"], reply
    finally:
        await internal.close()


async def reads(client: Client, created: CreatedMatch) -> Reads:
    """Every read of the match, as the bytes on the wire."""
    match_id = created.match_id
    found: Reads = {}
    found["record"] = (await client.stub.GetRecord(matches_pb2.GetRecordRequest(match_id=match_id))).SerializeToString()
    for name, seat in [("spectator", client.spectator(match_id))] + [
        (f"seat{i}", client.seat(match_id, t)) for i, t in enumerate(created.tokens)
    ]:
        view = await seat.stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=seat.metadata)
        found[f"view/{name}"] = view.SerializeToString()
        found[f"watch/{name}"] = b"".join([u.SerializeToString() async for u in seat.updates(after_seq=0)])
    return found


def test_ended_matches_read_the_same_after_every_worker_and_the_gateway_restart(url: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with fleet(url, tmp_path, 2) as f:
            async with Client(f.address) as client:
                finished, voided = await ended_pair(client)
                table = await f.table()
                holder = table.holder(partition_of(voided.match_id), 0, 1 << 62)
                assert holder is not None
                await void(holder.address, voided.match_id)
                before = {m.match_id: await reads(client, m) for m in (finished, voided)}
            await f.roll()  # every worker replaced: the ended matches are in no worker's memory now
            assert f.gateway is not None
            f.gateway.stop()  # and a new gateway
            await f.spawn_gateway().started()
            async with Client(f.address) as client:
                after = {m.match_id: await reads(client, m) for m in (finished, voided)}
            assert after == before

    run(body, timeout=300)


def test_ended_matches_read_the_same_after_serve_restarts(url: str, tmp_path: Path) -> None:
    """`tablehall serve` (one process): a match it finished, and one voided `worker_down` when it came back
    after an outage longer than the tolerance (the restart itself), read alike after the next restart."""

    async def body() -> None:
        port = free_port()
        args = ["serve", "--port", str(port), "--web-port", "off", "--database-url", url]
        env = {**_base_env(), "TABLEHALL_REDIS_URL": "", "PYTHONUNBUFFERED": "1", "TABLEHALL_TOLERANCE_S": "0.2"}
        first = await Proc("serve", args, env, tmp_path, port).started()
        try:
            async with Client(f"127.0.0.1:{port}") as client:
                finished, _ = await ended_pair(client)
                running = await client.create_match("spectacular-bid", ["Fay", "Gus"], {"start_points": 40})
                for token in running.tokens:
                    await client.seat(running.match_id, token).act({"do": "ready"})  # its clock runs
        finally:
            first.stop()
        second = await Proc("serve", args, env, tmp_path, port).started()
        try:
            async with Client(f"127.0.0.1:{port}") as client:
                assert (await client.spectator(running.match_id).view())[1]["void_reason"] == "worker_down"
                before = {m.match_id: await reads(client, m) for m in (finished, running)}
        finally:
            second.stop()
        third = await Proc("serve", args, env, tmp_path, port).started()
        try:
            async with Client(f"127.0.0.1:{port}") as client:
                after = {m.match_id: await reads(client, m) for m in (finished, running)}
        finally:
            third.stop()
        assert after == before

    run(body, timeout=300)


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TABLEHALL_DATABASE_URL", None)
    return env
