"""`tablehall bench messages`: the CPU one streamed gRPC message costs each side on this machine.

It is the floor under every command: a command through the gateway costs the gateway and the player's
client one message each way plus one update per seat, whatever the service does. An echo server in its
own process answers a client over many bidirectional streams; both report their CPU time (not wall time,
so a busy machine inflates the figure less).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

import grpc
from rich.console import Console

from protos.tablehall.v1 import matches_pb2
from workers import event_loop

_METHOD = "/tablehall.bench.Echo/Chat"
_ping = matches_pb2.PingRequest


async def _serve(pipe: Connection) -> None:
    async def chat(requests: Any, context: Any) -> Any:
        async for request in requests:
            yield request

    handler = grpc.method_handlers_generic_handler(
        "tablehall.bench.Echo",
        {"Chat": grpc.stream_stream_rpc_method_handler(chat, _ping.FromString, _ping.SerializeToString)},
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    started = time.process_time()
    pipe.send(port)
    await asyncio.to_thread(pipe.recv)  # the client is done
    pipe.send(time.process_time() - started)
    await server.stop(None)


def _server(pipe: Connection) -> None:
    event_loop.run(_serve(pipe))


async def _client(port: int, messages: int, streams: int) -> tuple[float, float]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        chat = channel.stream_stream(_METHOD, _ping.SerializeToString, _ping.FromString)

        async def one() -> None:
            call = chat()
            for _ in range(messages // streams):
                await call.write(_ping())
                await call.read()
            await call.done_writing()

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one() for _ in range(streams)))
        return time.process_time() - cpu, time.perf_counter() - started


@contextlib.contextmanager
def server_process(target: Callable[[Connection], None]) -> Iterator[Connection]:
    """A bench's server in a process of its own, told what to do over a pipe; joined (killed after 10 s) on
    the way out."""
    ours, theirs = multiprocessing.Pipe()
    server = multiprocessing.Process(target=target, args=(theirs,), daemon=True)
    server.start()
    try:
        yield ours
    finally:
        server.join(10)
        if server.is_alive():
            server.kill()


def bench_messages(messages: int, streams: int) -> int:
    with server_process(_server) as pipe:
        port = pipe.recv()
        client_cpu, wall = event_loop.run(_client(port, messages, streams))
        pipe.send("done")
        server_cpu = pipe.recv()
    sent = (messages // streams) * streams  # each round trip: one message each way, on each side
    Console().print(
        f"tablehall bench messages: {sent:,} round trips on {streams} streams in {wall:.1f} s; CPU per streamed "
        f"message (one sent or received): client {client_cpu / sent / 2 * 1e6:.0f} µs, "
        f"server {server_cpu / sent / 2 * 1e6:.0f} µs"
    )
    return 0
