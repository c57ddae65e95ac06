"""Per-client limits on a real gateway (gRPC on a free port, the HTTP door beside it): a client flooding
one connection is refused RESOURCE_EXHAUSTED (`rate_limited`, `retry-after-ms`) after its budget while
another match's commands are all accepted; a Play stream counts each command and ends refused, changing
nothing; a token's budget is shared by its connections and by both doors; open streams are limited per
connection and per token; the settings come from the environment of a real `tablehall serve`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from prometheus_client import REGISTRY

from gateway.limits import Budgets, LimitSettings
from gateway.server import public_servicers, start_gateway
from gateway.web import WebDoor, start_web_door
from gateway.workers import Router
from protos.tablehall.v1 import matches_pb2
from tablehall.bench_service import Tally, bot, quantile
from tablehall.bots import run_bot
from tablehall.client import Client, Result, TablehallError
from tests.processes import stop_process
from tests.web_support import raw_unary
from workers.host import MatchHost

SB = "spectacular-bid"
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


@dataclass
class Limited:
    address: str
    budgets: Budgets
    door: WebDoor

    @property
    def url(self) -> str:
        return self.door.url


@contextlib.asynccontextmanager
async def limited(settings: LimitSettings) -> AsyncIterator[Limited]:
    """A gateway, its HTTP door and an in-process worker, all behind one set of budgets."""
    host = MatchHost()
    router = Router([host])
    budgets = Budgets(settings)
    servicers = public_servicers(router, budgets)
    gateway = await start_gateway(router, "127.0.0.1", 0, servicers)
    door = await start_web_door(servicers, "127.0.0.1", 0)
    try:
        yield Limited(f"127.0.0.1:{gateway.port}", budgets, door)
    finally:
        await host.stop()
        await door.stop(grace=0.5)
        await gateway.stop(grace=0.5)


def rejected(code: str) -> float:
    return REGISTRY.get_sample_value("tablehall_commands_rejected_total", {"code": code}) or 0.0


def assert_rate_limited(error: TablehallError) -> None:
    assert (error.status, error.code) == (EXHAUSTED, "rate_limited"), error
    assert error.retry_after_s is not None and error.retry_after_s > 0
    assert "too many" in str(error)


async def until(check: object, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@dataclass
class Flood:
    passed: int = 0
    refused: int = 0
    refused_while_playing: int = 0
    first_refusal: asyncio.Event | None = None


async def flood(client: Client, match_id: str, token: str, stop: asyncio.Event, tally: Flood) -> None:
    """Commands as fast as one connection carries them (8 in flight), until told to stop (50,000 at most)."""
    seat = client.seat(match_id, token)
    assert tally.first_refusal is not None
    playing = False

    async def one() -> None:
        nonlocal playing
        while not stop.is_set() and tally.passed + tally.refused < 50_000:
            try:
                await seat.act({"do": "ready"})  # the first is taken, later ones are illegal: all pass the guard
                tally.passed += 1
            except TablehallError as error:
                if error.status is not EXHAUSTED:
                    tally.passed += 1
                    continue
                assert_rate_limited(error)
                tally.refused += 1
                tally.refused_while_playing += playing
                tally.first_refusal.set()

    async def mark() -> None:
        nonlocal playing
        await tally.first_refusal.wait()  # type: ignore[union-attr]
        playing = True

    marker = asyncio.create_task(mark())
    await asyncio.gather(*(one() for _ in range(8)))
    marker.cancel()


def test_a_flooding_client_is_refused_while_another_match_plays_unhindered() -> None:
    settings = LimitSettings(rate_per_s=100, burst=200, max_watches=8)

    async def normal_match(ana: Client, bia: Client) -> Tally:
        """Two bots on Play sessions, each seat on its own connection; a refusal for rate would raise."""
        created = await ana.create_match(SB, ["Ana", "Bia"], {"start_points": 25})
        played = Tally()
        seats = [c.seat(created.match_id, t) for c, t in zip((ana, bia), created.tokens, strict=True)]
        await asyncio.gather(*(bot(seat, random.Random(k), played) for k, seat in enumerate(seats)))
        _, final = await ana.spectator(created.match_id).view()
        assert final["status"] == "finished"
        return played

    async def main() -> tuple[Flood, Tally, float]:
        async with limited(settings) as service, Client(service.address) as flooder, \
                Client(service.address) as ana, Client(service.address) as bia:
            target = await flooder.create_match(SB, ["Flo", "Odd"])
            tally = Flood(first_refusal=asyncio.Event())
            stop = asyncio.Event()
            started = time.monotonic()
            flooding = asyncio.create_task(flood(flooder, target.match_id, target.tokens[0], stop, tally))
            await asyncio.wait_for(tally.first_refusal.wait(), 30)  # the flood is over its budget now
            played = await asyncio.wait_for(normal_match(ana, bia), 60)
            stop.set()
            await flooding
            return tally, played, time.monotonic() - started

    tally, played, elapsed = asyncio.run(main())
    commands = len(played.command_s)
    p50, p99 = (quantile(played.command_s, q) * 1000 for q in (0.5, 0.99))
    print(f"flooder: {tally.passed} passed, {tally.refused} refused in {elapsed:.1f} s; normal match: {commands} "
          f"commands accepted, p50 {p50:.1f} ms, p99 {p99:.1f} ms")  # fmt: skip
    # the normal match: every command it sent was accepted (a refusal for rate would have raised in `bot`)
    assert commands > 0
    # the flooder: refused, and never let through more than its budget allows
    assert tally.refused > 0 and tally.refused_while_playing > 0
    assert tally.passed <= settings.burst + settings.rate_per_s * elapsed + 1


def test_bots_over_their_budget_wait_as_told_and_finish_the_match() -> None:
    """Two bots at full speed on a tight budget: refused for rate along the way (counted), they wait for
    the retry hint and play the match to its end."""
    settings = LimitSettings(rate_per_s=10, burst=5, max_watches=8)  # a match takes each seat 10+ commands

    async def main() -> tuple[str, float]:
        async with limited(settings) as service, Client(service.address) as host:
            created = await host.create_match(SB, ["Ana", "Bia"], {"start_points": 25})
            before = rejected("rate_limited")
            finals = await asyncio.gather(*(
                run_bot(service.address, created.match_id, token, greedy=True, seed=k)
                for k, token in enumerate(created.tokens)
            ))  # fmt: skip
            return str(finals[0]["status"]), rejected("rate_limited") - before

    status, refused = asyncio.run(asyncio.wait_for(main(), 120))
    assert status == "finished" and refused > 0


def test_a_play_stream_counts_each_command_and_ends_refused_changing_nothing() -> None:
    settings = LimitSettings(rate_per_s=0.01, burst=10, max_watches=8)

    async def main() -> None:
        async with limited(settings) as service, Client(service.address) as client, Client(service.address) as other:
            created = await other.create_match(SB, ["Ana", "Bia"])
            before = rejected("rate_limited")
            session = await client.seat(created.match_id, created.tokens[0]).session()  # request 1 of 10
            for _ in range(10):  # the first `ready` is taken, the next ones refused as illegal; the 10th is over
                await session.send({"do": "ready"})
            results: list[Result] = []
            seqs: list[int] = []
            with pytest.raises(TablehallError) as ended:
                async for event in session.events():
                    if isinstance(event, Result):
                        results.append(event)
                    else:
                        seqs.append(event[0])
            assert_rate_limited(ended.value)
            assert [r.ref for r in results] == list(range(1, 10))  # 9 commands passed, then the stream ended
            assert results[0].error is None
            assert all(r.error is not None and r.error.code == "illegal_action" for r in results[1:])
            assert rejected("rate_limited") == before + 1
            # nothing changed after the accepted `ready`: a spectator on another connection sees its seq
            seq, view = await other.spectator(created.match_id).view()
            assert seq == results[0].seq and view["ready"] == [0]
            # the token's budget is spent on every connection; the stream's slot is free again
            with pytest.raises(TablehallError) as again:
                await other.seat(created.match_id, created.tokens[0]).view()
            assert_rate_limited(again.value)
            await until(lambda: not service.budgets.watches, "the refused stream to release its slot")

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_play_stream_over_the_open_stream_limit_is_refused_holding_nothing() -> None:
    """The token's one stream is open: its second Play stream, on another connection, ends refused at once
    (counted as a refused command, with the wait in `retry-after-ms`), and the first one still plays."""
    settings = LimitSettings(rate_per_s=1000, burst=1000, max_watches=1)

    async def main() -> None:
        async with limited(settings) as service, Client(service.address) as one, Client(service.address) as two:
            created = await one.create_match(SB, ["Ana", "Bia"])
            match_id, token = created.match_id, created.tokens[0]
            first = await one.seat(match_id, token).session()
            events = aiter(first.events())
            assert not isinstance(await anext(events), Result)
            before = rejected("rate_limited")
            with pytest.raises(TablehallError) as over:  # as the session opens or as it is read: either can
                # come first, the refusal is sent as soon as the stream reaches the gateway
                second = await two.seat(match_id, token).session()
                async for _ in second.events():
                    raise AssertionError("a refused stream sends nothing")
            assert_rate_limited(over.value)
            assert "open streams" in str(over.value)
            assert rejected("rate_limited") == before + 1
            assert sorted(service.budgets.watches.values()) == [1, 1]  # the first stream's slots only
            await first.send({"do": "ready"})
            answered = [event async for event in _until_result(events)]
            assert isinstance(answered[-1], Result) and answered[-1].error is None
            await first.close()
            await until(lambda: not service.budgets.watches, "the first stream to release its slots")

    asyncio.run(asyncio.wait_for(main(), 60))


async def _until_result(events: AsyncIterator[object]) -> AsyncIterator[object]:
    async for event in events:
        yield event
        if isinstance(event, Result):
            return


def test_a_tokens_budget_is_shared_by_its_connections_and_both_doors() -> None:
    settings = LimitSettings(rate_per_s=0.01, burst=4, max_watches=8)

    async def main() -> None:
        async with limited(settings) as service, Client(service.address) as one, Client(service.address) as two:
            created = await one.create_match(SB, ["Ana", "Bia"])
            token = created.tokens[0]
            ask = matches_pb2.GetViewRequest(match_id=created.match_id).SerializeToString()
            await one.seat(created.match_id, token).view()
            await two.seat(created.match_id, token).view()
            status, _, _ = await asyncio.to_thread(raw_unary, service.url, "GetView", ask, token)
            assert status == 200
            await two.seat(created.match_id, token).view()  # the 4th of 4
            with pytest.raises(TablehallError) as refused:
                await two.seat(created.match_id, token).view()
            assert_rate_limited(refused.value)
            status, headers, body = await asyncio.to_thread(raw_unary, service.url, "GetView", ask, token)
            assert status == 429, body  # Connect's HTTP status for RESOURCE_EXHAUSTED
            assert b"resource_exhausted" in body and b"too many requests" in body
            assert headers["trailer-tablehall-error"] == "rate_limited"
            assert int(headers["trailer-retry-after-ms"]) > 0
            # the other seat's token and a spectator still pass on the same connections
            await two.seat(created.match_id, created.tokens[1]).view()
            await one.spectator(created.match_id).view()
            # one connection over its own budget, with no token at all; another connection is not
            async with Client(service.address) as three:
                for _ in range(4):
                    await three.rules(SB)
                with pytest.raises(TablehallError) as flooded:
                    await three.rules(SB)
                assert_rate_limited(flooded.value)
            await one.rules(SB)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_open_streams_are_limited_per_connection_and_per_token() -> None:
    settings = LimitSettings(rate_per_s=1000, burst=1000, max_watches=2)

    async def main() -> None:
        async with limited(settings) as service, Client(service.address) as one, Client(service.address) as two, \
                Client(service.address) as three:
            created = await one.create_match(SB, ["Ana", "Bia"])
            match_id, token = created.match_id, created.tokens[0]
            watching = [one.spectator(match_id).updates() for _ in range(2)]
            for stream in watching:
                await anext(stream)
            extra = one.spectator(match_id).updates()
            with pytest.raises(TablehallError) as third:  # the connection holds its 2
                await anext(extra)
            assert_rate_limited(third.value)
            assert "open streams" in str(third.value) and third.value.retry_after_s == 1.0
            # a token: a Play session and a Watch on connection two; a third stream of it refused on three
            session = await two.seat(match_id, token).session()
            assert not isinstance(await anext(aiter(session.events())), Result)
            mine = two.seat(match_id, token).updates()
            await anext(mine)
            theirs = three.seat(match_id, token).updates()
            with pytest.raises(TablehallError) as over:
                await anext(theirs)
            assert_rate_limited(over.value)
            spectating = three.spectator(match_id).updates()  # connection three itself has room
            await anext(spectating)
            # closing a stream frees its slot
            await watching[0].aclose()  # type: ignore[attr-defined]
            await until(lambda: sorted(service.budgets.watches.values()) == [1, 1, 2, 2], "the slot to be freed")
            again = one.spectator(match_id).updates()
            await anext(again)
            for stream in (watching[1], mine, spectating, again):
                await stream.aclose()  # type: ignore[attr-defined]
            await session.close()
            await until(lambda: not service.budgets.watches, "every slot to be freed")

    asyncio.run(asyncio.wait_for(main(), 60))


def test_tablehall_serve_takes_its_limits_from_the_environment(tmp_path: Path) -> None:
    env = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING", "TABLEHALL_BURST": "3", "TABLEHALL_RATE_PER_S": "0.01"}
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", "memory"]
    command += ["--web-port", "off"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "serving on" in line, line
        address = line.split("serving on ")[1].split()[0]

        async def main() -> None:
            async with Client(address) as client:
                for _ in range(3):
                    await client.rules(SB)
                with pytest.raises(TablehallError) as refused:
                    await client.rules(SB)
                assert_rate_limited(refused.value)

        asyncio.run(asyncio.wait_for(main(), 30))
    finally:
        stop_process(process)
    bad = subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**env, "TABLEHALL_MAX_WATCHES": "many"},
    )
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines()[-1] == "TABLEHALL_MAX_WATCHES must be a number, not 'many'"
    assert "Traceback" not in bad.stderr
