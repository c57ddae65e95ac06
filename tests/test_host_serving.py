"""A running match's command is refused once its worker no longer serves the match's partition — its lease ran
out, its hand-off began, or it went elsewhere — on the command path that finds the actor in memory without
hashing the id (`MatchHost._live`), as on the path that loads it; nothing is applied."""

from __future__ import annotations

import asyncio
import hashlib
import time

import pytest

from protos.tablehall.v1 import actions_pb2, host_pb2
from workers.errors import NotOwner
from workers.host import MatchHost

MATCH_ID = "00000000000000a1"


def _token(seat: int) -> bytes:
    return hashlib.sha256(f"{MATCH_ID}{seat}".encode()).digest()


def _ready(seat: int) -> host_pb2.HostCommandRequest:
    action = actions_pb2.Action(ready=actions_pb2.Ready())
    return host_pb2.HostCommandRequest(match_id=MATCH_ID, token_sha256=_token(seat), action=action)


async def _host_with_a_match() -> MatchHost:
    host = MatchHost()
    await host.start()
    await host.create(
        host_pb2.HostCreateRequest(
            match_id=MATCH_ID, game="spectacular-bid", players=["Ana", "Bia"], options_json="{}",
            token_sha256=[_token(0), _token(1)], created_unix_ms=time.time_ns() // 1_000_000,
        )
    )  # fmt: skip
    return host


@pytest.mark.parametrize("lost", ["lease ran out", "hand-off began", "partition gone"])
def test_a_command_to_a_match_in_memory_is_refused_once_its_partition_is_not_served(lost: str) -> None:
    async def scenario() -> None:
        host = await _host_with_a_match()
        actor = host.actors[MATCH_ID]
        assert (await host.command(_ready(0))).seq == actor.seq  # served: the command is applied
        before = actor.seq
        partition = actor.entry.partition
        if lost == "lease ran out":
            host.valid_until = asyncio.get_running_loop().time() - 0.001
        elif lost == "hand-off began":
            host.held[partition].leaving = True
        else:
            del host.held[partition]
        with pytest.raises(NotOwner):
            await host.command(_ready(1))
        assert actor.seq == before  # nothing applied

    asyncio.run(scenario())
