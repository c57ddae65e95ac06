"""The gateway's one way to reach the worker that owns a match: in process or over gRPC.

A worker client takes and returns the internal API's messages (host.proto). `MatchHost` itself is the
in-process client; `GrpcWorker` reaches a worker process and turns its errors back into error classes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

import grpc

from gateway.status import ERROR_CODE_KEY
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.errors import Unavailable, error_for
from workers.partitions import owner_of


class WorkerClient(Protocol):
    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse: ...

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse: ...

    def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]: ...

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update: ...

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record: ...


def _rebuilt(error: grpc.aio.AioRpcError) -> Exception:
    for key, value in error.trailing_metadata() or ():
        if key == ERROR_CODE_KEY:
            return error_for(str(value), error.details() or "")
    return Unavailable(f"the match's worker is unreachable: {error.code().name}")


class GrpcWorker:
    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = host_pb2_grpc.MatchHostStub(self.channel)

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        try:
            reply: host_pb2.HostCreateResponse = await self.stub.Create(request)
            return reply
        except grpc.aio.AioRpcError as error:
            raise _rebuilt(error) from None

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        try:
            reply: matches_pb2.ActResponse = await self.stub.Command(request)
            return reply
        except grpc.aio.AioRpcError as error:
            raise _rebuilt(error) from None

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]:
        try:
            async for update in self.stub.Watch(request):
                yield update
        except grpc.aio.AioRpcError as error:
            raise _rebuilt(error) from None

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update:
        try:
            reply: matches_pb2.Update = await self.stub.View(request)
            return reply
        except grpc.aio.AioRpcError as error:
            raise _rebuilt(error) from None

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record:
        try:
            reply: matches_pb2.Record = await self.stub.Record(request)
            return reply
        except grpc.aio.AioRpcError as error:
            raise _rebuilt(error) from None

    async def close(self) -> None:
        await self.channel.close()


class Router:
    """Routes by match id: the same partition map as the workers (workers/partitions.py)."""

    def __init__(self, workers: Sequence[WorkerClient]) -> None:
        self.workers = list(workers)

    def owner(self, match_id: str) -> WorkerClient:
        return self.workers[owner_of(match_id, len(self.workers))]
