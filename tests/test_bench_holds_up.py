"""`tablehall bench service` holds up under load (issue 16, item 6): a call the service cancels or refuses is
counted, never raised, and the bench goes on with the other matches; the peer harness's figures print as
ratios. A real gateway and worker; the one injected fault is a gateway whose CreateMatch answers CANCELLED
to every other call (as a server going away, or its limits, would), everything else the real service."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import grpc
import pytest

from gateway.server import MATCHES, public_servicers, start_gateway
from gateway.workers import Router
from tablehall import bench_service
from tablehall.bench_service import Peer, Tally
from workers.host import MatchHost


class CancelsEveryOther:
    """The real Matches servicer, but CreateMatch answers CANCELLED to every second call."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls = itertools.count()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def CreateMatch(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        if next(self.calls) % 2 == 1:
            await context.abort(grpc.StatusCode.CANCELLED, "cancelled by the server")
        return await self.real.CreateMatch(request, context)


@pytest.mark.parametrize("game", ["spectacular-bid", "501"])
def test_a_cancelled_create_is_counted_and_the_bench_goes_on(game: str, capsys: pytest.CaptureFixture[str]) -> None:
    async def body() -> Tally:
        host = MatchHost()
        router = Router([host])
        servicers = public_servicers(router)
        servicers[MATCHES] = CancelsEveryOther(servicers[MATCHES])
        gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
        tally = Tally()
        try:
            await bench_service.run(tally, f"127.0.0.1:{gateway.port}", 6, 3, game, 1, 0, "memory")
        finally:
            host.close()
            await gateway.stop(grace=0.5)
        return tally

    tally = asyncio.run(body())
    assert tally.refused["create: CANCELLED"] == 3, tally.refused
    assert tally.finished == 3 and tally.command_s
    bench_service.report(tally, "here", 6, 3, game, 0, "memory")
    bench_service.compare(tally, Peer(moves_per_s=100.0, p99_ms=50.0, cpu_ms=1.0))
    out = capsys.readouterr().out
    assert "3 create: CANCELLED" in out and "against the peer harness" in out
    assert "server CPU ms per move" in out and "×" in out.split("against the peer harness", 1)[1]
