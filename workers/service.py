"""The internal `MatchHost` gRPC service: what a worker process offers the gateway (host.proto)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from gateway.status import Known, edge, edge_stream
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.host import MatchHost

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class MatchHostService(host_pb2_grpc.MatchHostServicer):
    def __init__(self, host: MatchHost) -> None:
        self.host = host

    @edge
    async def Create(self, request: host_pb2.HostCreateRequest, context: Context) -> host_pb2.HostCreateResponse:
        return await self.host.create(request)

    @edge
    async def Command(self, request: host_pb2.HostCommandRequest, context: Context) -> matches_pb2.ActResponse:
        return await self.host.command(request)

    @edge_stream
    async def Commands(
        self, requests: AsyncIterator[host_pb2.HostCommandRequest], context: Context
    ) -> AsyncIterator[host_pb2.HostCommandReply]:
        """Commands multiplexed on one stream: each runs as its own task; replies go out as they finish."""
        replies: asyncio.Queue[host_pb2.HostCommandReply | None] = asyncio.Queue()
        running: set[asyncio.Task[None]] = set()

        async def one(request: host_pb2.HostCommandRequest) -> None:
            try:
                reply = host_pb2.HostCommandReply(ref=request.ref, reply=await self.host.command(request))
            except Known as error:
                reply = host_pb2.HostCommandReply(ref=request.ref, error_code=error.code, error_message=str(error))
            await replies.put(reply)

        async def read() -> None:
            async for request in requests:
                task = asyncio.create_task(one(request))
                running.add(task)
                task.add_done_callback(running.discard)
            await asyncio.gather(*running)
            await replies.put(None)

        reader = asyncio.create_task(read())
        try:
            while (reply := await replies.get()) is not None:
                yield reply
        finally:
            reader.cancel()
            for task in running:
                task.cancel()

    @edge_stream
    async def Watch(self, request: host_pb2.HostWatchRequest, context: Context) -> AsyncIterator[matches_pb2.Update]:
        async for update in self.host.watch(request):
            yield update

    @edge
    async def View(self, request: host_pb2.HostViewRequest, context: Context) -> matches_pb2.Update:
        return await self.host.view(request)

    @edge
    async def Record(self, request: host_pb2.HostRecordRequest, context: Context) -> matches_pb2.Record:
        return await self.host.record(request)

    @edge
    async def CreateTables(
        self, request: host_pb2.HostCreateTablesRequest, context: Context
    ) -> host_pb2.HostTablesResponse:
        return await self.host.create_tables(request)

    @edge
    async def StartTables(self, request: host_pb2.HostTablesRequest, context: Context) -> host_pb2.HostTablesResponse:
        return await self.host.start_tables(request)

    @edge
    async def CancelTables(self, request: host_pb2.HostTablesRequest, context: Context) -> host_pb2.HostTablesResponse:
        return await self.host.cancel_tables(request)


class MatchSweepsService(host_pb2_grpc.MatchSweepsServicer):
    def __init__(self, host: MatchHost) -> None:
        self.host = host

    @edge
    async def Settle(self, request: host_pb2.HostSettleRequest, context: Context) -> host_pb2.HostSettleResponse:
        return await self.host.settle(request)


async def start_worker_server(host: MatchHost, address: str) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    host_pb2_grpc.add_MatchHostServicer_to_server(MatchHostService(host), server)
    host_pb2_grpc.add_MatchSweepsServicer_to_server(MatchSweepsService(host), server)
    checker = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    checker.set("", health_pb2.HealthCheckResponse.SERVING)
    return server, port
