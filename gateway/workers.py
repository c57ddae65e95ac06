"""The gateway's one way to reach the worker that owns a match: in process or over gRPC.

A worker client takes and returns the internal API's messages (host.proto). `MatchHost` itself is the
in-process client; `GrpcWorker` reaches a worker process and turns its errors back into error classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Protocol, TypeVar

import grpc

from gateway.status import ERROR_CODE_KEY
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.errors import Unavailable, error_for
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


def _rebuilt(error: grpc.aio.AioRpcError) -> Exception:
    for key, value in error.trailing_metadata() or ():
        if key == ERROR_CODE_KEY:
            return error_for(str(value), error.details() or "")
    return Unavailable(f"the match's worker is unreachable ({error.code().name}: {error.details()})")


async def _unary(call: Awaitable[T]) -> T:
    """One internal call; a worker's refusal comes back as its own error class."""
    try:
        return await call
    except grpc.aio.AioRpcError as error:
        raise _rebuilt(error) from None


class GrpcWorker:
    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = host_pb2_grpc.MatchHostStub(self.channel)
        self.commands: CommandStream | None = None

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        reply: host_pb2.HostCreateResponse = await _unary(self.stub.Create(request))
        return reply

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        """On the worker's command stream (opened on first use, reopened after it breaks)."""
        if self.commands is None or self.commands.broken:
            self.commands = CommandStream(self.stub)
        return await self.commands.send(request)

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]:
        try:
            async for update in self.stub.Watch(request):
                yield update
        except grpc.aio.AioRpcError as error:
            raise _rebuilt(error) from None

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
        if self.commands is not None:
            self.commands.close()
        await self.channel.close()


class CommandStream:
    """One bidirectional stream to a worker carrying every command, matched to replies by `ref`."""

    def __init__(self, stub: host_pb2_grpc.MatchHostStub) -> None:
        self.call = stub.Commands()
        self.waiting: dict[int, asyncio.Future[matches_pb2.ActResponse]] = {}
        self.refs = 0
        self.broken = False
        self.writing = asyncio.Lock()  # grpc allows one write in flight per stream
        self.reader = asyncio.create_task(self._read())

    async def send(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        self.refs += 1
        ref = self.refs
        reply: asyncio.Future[matches_pb2.ActResponse] = asyncio.get_running_loop().create_future()
        self.waiting[ref] = reply
        sent = host_pb2.HostCommandRequest()
        sent.CopyFrom(request)
        sent.ref = ref
        try:
            async with self.writing:
                await self.call.write(sent)
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError) as error:
            self.waiting.pop(ref, None)
            broken = Unavailable(f"the match's worker is unreachable ({type(error).__name__})")
            self._break(broken)
            raise broken from None
        return await reply

    async def _read(self) -> None:
        try:
            async for message in self.call:
                reply = self.waiting.pop(message.ref, None)
                if reply is None or reply.done():
                    continue
                if message.error_code:
                    reply.set_exception(error_for(message.error_code, message.error_message))
                else:
                    reply.set_result(message.reply)
            self._break(Unavailable("the match's worker closed its command stream"))
        except grpc.aio.AioRpcError as error:
            self._break(_rebuilt(error))

    def _break(self, error: Exception) -> None:
        self.broken = True
        for reply in self.waiting.values():
            if not reply.done():
                reply.set_exception(error)
        self.waiting.clear()

    def close(self) -> None:
        self.reader.cancel()
        self.call.cancel()


class Router:
    """Routes by match id: the same partition map as the workers (workers/partitions.py)."""

    def __init__(self, workers: Sequence[WorkerClient]) -> None:
        self.workers = list(workers)

    def owner(self, match_id: str) -> WorkerClient:
        return self.workers[owner_of(match_id, len(self.workers))]
