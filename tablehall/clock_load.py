"""The load of `tablehall bench clocks --load M`: bots play M matches at a time against the worker the way a
gateway sends a worker commands, through its gRPC service (`MatchHost` Create, View and Command), from a
process of their own. So the worker's loop does what a real worker's does for each command (the call, the
rules, the commit, the reply), and the bots' own thinking is not on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import multiprocessing
import random
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event

import grpc

from protos.tablehall.v1 import host_pb2, host_pb2_grpc
from tablehall.client import action_message
from workers import event_loop
from workers.bots.policy import choose
from workers.errors import ERROR_CODE_KEY
from workers.games.catalog import SPECTACULAR_BID

LOOK_AGAIN_S = 0.01
"""Nobody may act (a deal pause): the bots look at the match again this much later."""
POLL_S = 0.1
"""How often the worker's side looks whether the bots' process has ended (no thread waits for it)."""


class BotsEnded(RuntimeError):
    """The bots' process ended without its tally (it failed: its own traceback is on stderr)."""


@dataclass
class Tally:
    """What the bots did: commands acknowledged, and refusals by their stable code."""

    commands: int = 0
    refused: Counter[str] = field(default_factory=Counter)


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


def _seat() -> bytes:
    return hashlib.sha256(secrets.token_urlsafe(16).encode()).digest()


async def _match(stub: host_pb2_grpc.MatchHostStub, rng: random.Random, tally: Tally) -> None:
    """Both seats of one match played by bots, until it is over."""
    match_id = f"load-{secrets.token_hex(8)}"
    seats = [_seat(), _seat()]
    await stub.Create(host_pb2.HostCreateRequest(
        match_id=match_id, game=SPECTACULAR_BID, players=["A", "B"], token_sha256=seats, created_unix_ms=unix_ms(),
    ))  # fmt: skip
    while True:
        acted = False
        for digest in seats:
            update = await stub.View(host_pb2.HostViewRequest(match_id=match_id, token_sha256=digest))
            view = json.loads(update.view_json)
            if view.get("status", "in_progress") != "in_progress":
                return
            action = choose(view, rng, greedy=False)
            if action is None:
                continue
            request = host_pb2.HostCommandRequest(
                match_id=match_id, token_sha256=digest, action=action_message(action), arrival_unix_ms=unix_ms()
            )
            try:
                await stub.Command(request)
                tally.commands += 1
            except grpc.aio.AioRpcError as error:
                codes = [v for k, v in error.trailing_metadata() or () if k == ERROR_CODE_KEY]
                tally.refused[str(codes[0]) if codes else error.code().name] += 1
            acted = True
        if not acted:
            await asyncio.sleep(LOOK_AGAIN_S)


async def _play(address: str, matches: int, seed: int, stop: Event) -> Tally:
    tally = Tally()
    rng = random.Random(seed)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = host_pb2_grpc.MatchHostStub(channel)

        async def player() -> None:
            while not stop.is_set():  # a match begun is played to its end: no clock is left running
                await _match(stub, random.Random(rng.random()), tally)

        async with asyncio.TaskGroup() as group:
            for _ in range(matches):
                group.create_task(player())
    return tally


def _bots(address: str, matches: int, seed: int, stop: Event, out: Connection) -> None:
    """The bots' process: play until `stop`, then send the tally."""
    tally = event_loop.run(_play(address, matches, seed, stop))
    out.send((tally.commands, dict(tally.refused)))
    out.close()


async def load(address: str, matches: int, seed: int, stop: asyncio.Event) -> Tally:
    """Run the bots against the worker at `address` until `stop` is set, then wait for their tally
    (`BotsEnded` as soon as their process is found ended without one)."""
    spawn = multiprocessing.get_context("spawn")  # this process runs gRPC: never fork it
    stopping = spawn.Event()
    receiving, sending = spawn.Pipe(duplex=False)
    process = spawn.Process(target=_bots, args=(address, matches, seed, stopping, sending), daemon=True)
    process.start()
    sending.close()
    try:
        while not stop.is_set():
            if not process.is_alive():
                raise BotsEnded(f"the bots' process ended early (exit code {process.exitcode})")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_S)
        stopping.set()
        while not receiving.poll():
            await asyncio.sleep(POLL_S)
        try:
            commands, refused = receiving.recv()
        except EOFError:
            raise BotsEnded(f"the bots' process ended with exit code {process.exitcode} and no tally") from None
        return Tally(commands, Counter(refused))
    finally:
        stopping.set()
        for _ in range(int(5 / POLL_S)):  # it ends once its tally is sent
            if not process.is_alive():
                break
            await asyncio.sleep(POLL_S)
        else:
            process.kill()
