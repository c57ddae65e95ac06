"""The gateway's one way to reach the worker that owns a match: in process or over gRPC.

A worker client takes and returns the internal API's messages (host.proto). `MatchHost` itself is the
in-process client; `GrpcWorker` reaches a worker process and turns its errors back into error classes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Protocol, TypeVar

import grpc

from gateway.links import CommandStream, WatchFeed, rebuilt
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.partitions import owner_of

T = TypeVar("T")


class WorkerClient(Protocol):
    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse: ...

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse: ...

    def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]: ...

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update: ...

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record: ...

    async def create_tables(self, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse: ...

    async def start_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse: ...

    async def cancel_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse: ...


async def _unary(call: Awaitable[T]) -> T:
    """One internal call; a worker's refusal comes back as its own error class."""
    try:
        return await call
    except grpc.aio.AioRpcError as error:
        raise rebuilt(error) from None


class GrpcWorker:
    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = host_pb2_grpc.MatchHostStub(self.channel)
        self.commands: CommandStream | None = None
        self.feed: WatchFeed | None = None

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        reply: host_pb2.HostCreateResponse = await _unary(self.stub.Create(request))
        return reply

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        """On the worker's command stream (opened on first use, reopened after it breaks)."""
        if self.commands is None or self.commands.broken:
            self.commands = CommandStream(self.stub)
        return await self.commands.send(request)

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]:
        """On the worker's feed stream (opened on first use, reopened after it breaks)."""
        if self.feed is None or self.feed.broken:
            self.feed = WatchFeed(self.stub)
        async for update in self.feed.watch(request):
            yield update

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update:
        reply: matches_pb2.Update = await _unary(self.stub.View(request))
        return reply

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record:
        reply: matches_pb2.Record = await _unary(self.stub.Record(request))
        return reply

    async def create_tables(self, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse:
        reply: host_pb2.HostTablesResponse = await _unary(self.stub.CreateTables(request))
        return reply

    async def start_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        reply: host_pb2.HostTablesResponse = await _unary(self.stub.StartTables(request))
        return reply

    async def cancel_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        reply: host_pb2.HostTablesResponse = await _unary(self.stub.CancelTables(request))
        return reply

    async def close(self) -> None:
        for stream in (self.commands, self.feed):
            if stream is not None:
                stream.close()
        await self.channel.close()


class Router:
    """Routes by match id: the same partition map as the workers (workers/partitions.py)."""

    def __init__(self, workers: Sequence[WorkerClient]) -> None:
        self.workers = list(workers)

    def owner(self, match_id: str) -> WorkerClient:
        return self.workers[owner_of(match_id, len(self.workers))]
