"""The internal `MatchHost` gRPC service: what a worker process offers the gateway (host.proto)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeAlias, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.edge import INTERNAL, Known, edge, edge_stream, quiet_dropped_clients
from workers.errors import NotOwner
from workers.following import Unfollow
from workers.host import MatchHost
from workers.keeper import LeaseKeeper
from workers.outbox import Outbox
from workers.wire import Posted, field, handlers, tag

log = logging.getLogger("tablehall.worker")

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


T = TypeVar("T")


def _refusal(error: Exception, what: str) -> tuple[str, str, str]:
    """An item of a multiplexed stream that failed, as (code, message, moved_to): a known refusal as
    itself, anything else logged here and INTERNAL to the caller (as `edge` does for a whole call)."""
    if isinstance(error, Known):
        return error.code, str(error), getattr(error, "moved_to", "")
    log.error("unexpected error in %s", what, exc_info=error)
    return "internal", INTERNAL, ""


async def _batches(
    outbox: Outbox[T], reading: Coroutine[Any, Any, None], running: Callable[[], Iterable[asyncio.Task[None]]]
) -> AsyncIterator[list[T]]:
    """A multiplexed stream's replies, batch by batch, while `reading` takes its requests; when the stream
    ends, the reader and every task still `running` for it are cancelled (a command's own change runs on
    in its match's mailbox: cancelling its task only drops the reply nobody can receive)."""
    reader = asyncio.create_task(reading)
    try:
        while batch := await outbox.take():
            yield batch
    finally:
        reader.cancel()
        for task in list(running()):
            task.cancel()


async def _until(closing: asyncio.Event, requests: AsyncIterator[T]) -> AsyncIterator[T]:
    """The requests of a stream until the worker closes (then no more is read: a request the caller sent
    after that was never seen here, so the stream's clean end tells it that nothing of it was done)."""
    stop = asyncio.ensure_future(closing.wait())
    read: asyncio.Future[T] | None = None
    try:
        while not closing.is_set():
            read = asyncio.ensure_future(anext(requests))
            await asyncio.wait({read, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():
                return
            try:
                request = read.result()
            except StopAsyncIteration:
                return
            yield request
    finally:
        stop.cancel()
        if read is not None:  # this stream was let go while a read was pending: nobody will take its end
            read.cancel()
            if read.done() and not read.cancelled():
                read.exception()  # taken here (asyncio logs a task's exception that nobody took)


FEED_ITEMS = tag(host_pb2.FeedBatch.DESCRIPTOR.fields_by_name["items"].number)
FEED_UPDATE = tag(host_pb2.FeedItem.DESCRIPTOR.fields_by_name["update"].number)


class _FeedSink:
    """One watch of a Feed stream: its updates and its end become items of the stream's outbox, serialized
    (an update's bytes go in as they are: `workers.wire`)."""

    __slots__ = ("ended", "following", "items", "match_id", "number")

    def __init__(self, number: int, items: Outbox[bytes], following: dict[int, Any], match_id: str) -> None:
        self.number, self.items, self.following, self.match_id = number, items, following, match_id
        self.ended = False

    def put(self, posted: Posted) -> None:
        head = host_pb2.FeedItem(id=self.number, seq=posted.seq).SerializeToString()
        self.items.put(head + field(FEED_UPDATE, posted.wire))

    def end(self, error: Exception | None) -> None:
        if self.ended:
            return
        self.ended = True
        self.following.pop(self.number, None)
        if error is None:
            self.items.put(host_pb2.FeedItem(id=self.number, end=True).SerializeToString())
            return
        code, message, moved_to = _refusal(error, f"a watch of match {self.match_id}")
        self.items.put(host_pb2.FeedItem(
            id=self.number, end=True, error_code=code, error_message=message, moved_to=moved_to
        ).SerializeToString())


def _tasks(entries: Iterable[asyncio.Task[None] | Unfollow]) -> list[asyncio.Task[None]]:
    return [entry for entry in entries if isinstance(entry, asyncio.Task)]


def _stop(entry: asyncio.Task[None] | Unfollow | None) -> None:
    if isinstance(entry, asyncio.Task):
        entry.cancel()
    elif entry is not None:
        entry()


class MatchHostService(host_pb2_grpc.MatchHostServicer):
    def __init__(
        self,
        host: MatchHost,
        keeper: LeaseKeeper | None = None,
        drain: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self.host = host
        self.keeper = keeper
        self.drain = drain
        """Hands everything over and stops the process (None: this worker has no leases to hand over)."""
        self.closing = asyncio.Event()
        """Set when the worker stops: its streams end cleanly after answering what they read."""

    @edge
    async def Create(self, request: host_pb2.HostCreateRequest, context: Context) -> host_pb2.HostCreateResponse:
        return await self.host.create(request)

    @edge
    async def Command(self, request: host_pb2.HostCommandRequest, context: Context) -> matches_pb2.ActResponse:
        return await self.host.command(request)

    @edge_stream
    async def Commands(
        self, requests: AsyncIterator[host_pb2.HostCommandBatch], context: Context
    ) -> AsyncIterator[host_pb2.HostCommandReplyBatch]:
        """Commands multiplexed on one stream: each runs as its own task; replies go out as they finish,
        batched (`workers.outbox`)."""
        replies: Outbox[host_pb2.HostCommandReply] = Outbox()
        running: set[asyncio.Task[None]] = set()
        await context.send_initial_metadata(())  # the gateway writes once it knows the stream is open

        async def one(request: host_pb2.HostCommandRequest) -> None:
            try:
                reply = host_pb2.HostCommandReply(ref=request.ref, reply=await self.host.command(request))
            except Exception as error:
                code, message, moved_to = _refusal(error, f"a command for match {request.match_id}")
                reply = host_pb2.HostCommandReply(
                    ref=request.ref, error_code=code, error_message=message, moved_to=moved_to
                )
            replies.put(reply)

        async def read() -> None:
            async for batch in _until(self.closing, requests):
                for request in batch.commands:
                    task = asyncio.create_task(one(request))
                    running.add(task)
                    task.add_done_callback(running.discard)
            await asyncio.gather(*running)
            replies.close()

        async for batch in _batches(replies, read(), lambda: running):
            yield host_pb2.HostCommandReplyBatch(replies=batch)

    @edge_stream
    async def Feed(  # type: ignore[override]  # batches go out serialized (workers.wire.handlers)
        self, requests: AsyncIterator[host_pb2.FeedRequest], context: Context
    ) -> AsyncIterator[bytes]:
        """Many watches on one stream (gateway/links.py): each follows its match as `Watch` would, its
        updates pushed into the stream's outbox by the match's actor (workers/following.py); each batch
        goes out as a serialized FeedBatch."""
        items: Outbox[bytes] = Outbox()
        following: dict[int, asyncio.Task[None] | Unfollow] = {}
        """Each watch: the task subscribing it, then how to stop it."""
        await context.send_initial_metadata(())

        async def subscribe(number: int, watch: host_pb2.HostWatchRequest) -> None:
            sink = _FeedSink(number, items, following, watch.match_id)
            try:
                stop = await self.host.follow(watch, sink)
            except Exception as error:
                sink.end(error)
                return
            if following.get(number) is asyncio.current_task():
                following[number] = stop
            else:  # over already, or cancelled by the gateway meanwhile
                stop()

        async def read() -> None:
            async for request in _until(self.closing, requests):
                for wanted in request.subscribe:
                    following[wanted.id] = asyncio.create_task(subscribe(wanted.id, wanted.watch))
                for number in request.cancel:
                    _stop(following.pop(number, None))
            for entry in list(following.values()):
                _stop(entry)  # the gateway is gone: so are its watches
            following.clear()
            items.close()

        try:
            async for batch in _batches(items, read(), lambda: _tasks(following.values())):
                yield b"".join([field(FEED_ITEMS, item) for item in batch])
        finally:
            for entry in list(following.values()):
                _stop(entry)

    @edge_stream
    async def Watch(  # type: ignore[override]  # updates go out serialized (workers.wire.handlers)
        self, request: host_pb2.HostWatchRequest, context: Context
    ) -> AsyncIterator[bytes]:
        async for posted in self.host.watch(request):
            yield posted.wire

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

    @edge
    async def Take(self, request: host_pb2.TakeRequest, context: Context) -> host_pb2.TakeResponse:
        if self.keeper is None:
            raise NotOwner("this worker has static partitions: it takes none over")
        return host_pb2.TakeResponse(
            serving=await self.keeper.accept(
                request.partition, request.epoch, request.expect, request.since_unix_ms, request.kind
            )
        )

    @edge
    async def Drain(self, request: host_pb2.DrainRequest, context: Context) -> host_pb2.DrainResponse:
        if self.drain is None:
            raise NotOwner("this worker has static partitions: there is nobody to hand them to")
        return host_pb2.DrainResponse(handed=await self.drain())


class MatchSweepsService(host_pb2_grpc.MatchSweepsServicer):
    def __init__(self, host: MatchHost) -> None:
        self.host = host

    @edge
    async def Settle(self, request: host_pb2.HostSettleRequest, context: Context) -> host_pb2.HostSettleResponse:
        return await self.host.settle(request)


async def start_worker_server(
    host: MatchHost, address: str, service: MatchHostService | None = None
) -> tuple[grpc.aio.Server, int]:
    quiet_dropped_clients()  # a vanished gateway or watcher is one debug line, as at the gateway
    server = grpc.aio.server(options=[  # gateways ping their worker connections every few seconds
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 4000),
        ("grpc.http2.max_ping_strikes", 0),
    ])
    name = host_pb2.DESCRIPTOR.services_by_name["MatchHost"].full_name
    served = handlers(name, service or MatchHostService(host))  # its streams send bytes built already
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, served),))
    server.add_registered_method_handlers(name, served)
    host_pb2_grpc.add_MatchSweepsServicer_to_server(MatchSweepsService(host), server)
    checker = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    checker.set("", health_pb2.HealthCheckResponse.SERVING)
    return server, port
