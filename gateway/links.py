"""The two long-lived streams from the gateway to each worker process: commands and watches.

Each carries many matches at once, in batches (`workers.outbox`): a gRPC message costs both processes
far more than the few bytes of a command, so under load one message carries many. A broken stream fails
everything waiting on it and the next call opens a new one. A command the stream never carried, or one a
worker that ended its stream cleanly never read (it answers everything it read before it ends), fails
with `NotDelivered`: nothing of it was done, so the router sends it again. One that may have reached a
worker that vanished fails with `Unavailable`: the caller decides (its seat's view tells what happened).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Generic, TypeVar

import grpc

from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.errors import ERROR_CODE_KEY, MOVED_TO_KEY, Unavailable, error_for
from workers.following import Following, Sink, Unfollow
from workers.outbox import Outbox
from workers.wire import Posted


class NotDelivered(Unavailable):
    """The worker never read this request: it changed nothing, so it may be sent again (anywhere)."""

Item = TypeVar("Item")
Batch = TypeVar("Batch")

_BROKEN = (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError)
REPLY_S = 30.0
"""A command whose worker has not answered within this is given up (its outcome unknown): a last bound,
far beyond a command's milliseconds; a worker that loses its lease answers what it holds at once."""


def rebuilt(error: grpc.aio.AioRpcError) -> Exception:
    """A worker's refusal as its own error class; anything else: the worker is unreachable."""
    metadata = {key: str(value) for key, value in error.trailing_metadata() or ()}
    if ERROR_CODE_KEY in metadata:
        return error_for(metadata[ERROR_CODE_KEY], error.details() or "", metadata.get(MOVED_TO_KEY, ""))
    return Unavailable(f"the match's worker is unreachable ({error.code().name}: {error.details()})")


def _unreachable(error: BaseException) -> Exception:
    if isinstance(error, grpc.aio.AioRpcError):
        return rebuilt(error)
    return Unavailable(f"the match's worker is unreachable ({type(error).__name__})")


class _Link(Generic[Item, Batch]):
    """One stream to a worker: an outbox written in batches, and replies read and handed on. A broken
    stream (or the gateway closing it) fails everything waiting on it."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.broken = False
        self.outbox: Outbox[Item] = Outbox()
        self.written: list[Item] = []
        """What the stream has carried (or was carrying when it broke)."""
        self.tasks = [asyncio.create_task(self._write()), asyncio.create_task(self._read())]

    def _message(self, items: list[Item]) -> Any:
        raise NotImplementedError

    def _deliver(self, batch: Batch) -> None:
        raise NotImplementedError

    def _fail(self, error: Exception, clean: bool) -> None:
        raise NotImplementedError

    async def _write(self) -> None:
        try:
            await self.call.wait_for_connection()  # a worker that cannot be reached was carried nothing
            while items := await self.outbox.take():
                self._carried(items)
                await self.call.write(self._message(items))
        except _BROKEN as error:
            self._break(_unreachable(error))

    def _carried(self, items: list[Item]) -> None:
        """These items are on their way (a stream that breaks now may have delivered them)."""

    async def _read(self) -> None:
        try:
            async for batch in self.call:
                self._deliver(batch)
            clean = await self.call.code() == grpc.StatusCode.OK
            self._break(Unavailable("the match's worker closed its stream"), clean=clean)
        except _BROKEN as error:
            self._break(_unreachable(error))

    def _break(self, error: Exception, clean: bool = False) -> None:
        """The stream is over. `clean`: the worker ended it after answering everything it had read."""
        self.broken = True
        self.outbox.close()
        self._fail(error, clean)

    def close(self) -> None:
        self._break(Unavailable("the gateway closed its stream to the worker"))
        for task in self.tasks:
            task.cancel()
        self.call.cancel()


class CommandStream(_Link[host_pb2.HostCommandRequest, host_pb2.HostCommandReplyBatch]):
    """Every command for one worker, matched to its reply by `ref`."""

    def __init__(self, stub: host_pb2_grpc.MatchHostStub, reply_s: float = REPLY_S) -> None:
        self.waiting: dict[int, asyncio.Future[matches_pb2.ActResponse]] = {}
        self.carried: set[int] = set()
        self.refs = 0
        self.reply_s = reply_s
        self.sent: deque[tuple[float, int]] = deque()
        """When each command was sent (loop time) and its ref, oldest first, until `overdue` let it go: one
        sweep every quarter of `reply_s` bounds every wait, where a timer each cost a command ~7 µs."""
        super().__init__(stub.Commands())
        self.tasks.append(asyncio.create_task(self._sweep()))

    async def send(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        """Send `request` (this stream sets its `ref`) and wait for the worker's reply (`overdue`: at most
        `reply_s` and a quarter of it). A caller that gives up leaves its command to the worker."""
        if self.broken:
            raise NotDelivered("the match's worker is unreachable (its command stream broke)")
        self.refs += 1
        request.ref = self.refs
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[matches_pb2.ActResponse] = loop.create_future()
        self.waiting[request.ref] = reply
        self.sent.append((loop.time(), request.ref))
        self.outbox.put(request)
        return await reply

    async def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.broken:
            await asyncio.sleep(self.reply_s / 4)  # the sweeps' cadence, not a clock of the match
            self.overdue(loop.time())

    def overdue(self, now: float) -> None:
        """Fail every command still unanswered `reply_s` after it was sent (at loop time `now`); forget the
        answered ones before the oldest still waiting."""
        cutoff = now - self.reply_s
        while self.sent:
            at, ref = self.sent[0]
            if ref in self.waiting and at > cutoff:
                return
            self.sent.popleft()
            reply = self.waiting.pop(ref, None)
            if reply is not None and not reply.done():
                reply.set_exception(
                    Unavailable(f"the match's worker did not answer within {self.reply_s:g} s: look at the view")
                )

    def _message(self, items: list[host_pb2.HostCommandRequest]) -> host_pb2.HostCommandBatch:
        return host_pb2.HostCommandBatch(commands=items)

    def _carried(self, items: list[host_pb2.HostCommandRequest]) -> None:
        self.carried.update(item.ref for item in items)

    def _deliver(self, batch: host_pb2.HostCommandReplyBatch) -> None:
        for message in batch.replies:
            self.carried.discard(message.ref)
            reply = self.waiting.pop(message.ref, None)
            if reply is None or reply.done():
                continue
            if message.error_code:
                reply.set_exception(error_for(message.error_code, message.error_message, message.moved_to))
            else:
                reply.set_result(message.reply)

    def _fail(self, error: Exception, clean: bool) -> None:
        for ref, reply in self.waiting.items():
            if reply.done():
                continue
            if clean or ref not in self.carried:
                reply.set_exception(NotDelivered(f"the match's worker did not take the command ({error})"))
            else:
                reply.set_exception(error)
        self.waiting.clear()


FEED = f"/{host_pb2.DESCRIPTOR.services_by_name['MatchHost'].full_name}/Feed"


class WatchFeed(_Link[host_pb2.FeedSubscribe | int, host_pb2.FeedBatchWire]):
    """Every watch this gateway holds on one worker, each pushed to its own sink as its items come in
    (workers/following.py): a slow client delays nobody else, its sink queues its few updates. The batches
    are read as `FeedBatchWire`: each update stays the bytes the worker serialized, handed on unread."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.watching: dict[int, Sink[Posted]] = {}
        self.ids = 0
        feed = channel.stream_stream(
            FEED,
            request_serializer=host_pb2.FeedRequest.SerializeToString,
            response_deserializer=host_pb2.FeedBatchWire.FromString,
        )
        super().__init__(feed())

    def follow(self, request: host_pb2.HostWatchRequest, sink: Sink[Posted]) -> Unfollow:
        """Subscribe one watch: its updates, then its end (the worker's refusal, if it refuses), go to `sink`."""
        if self.broken:
            raise Unavailable("the match's worker is unreachable (its feed broke)")
        self.ids += 1
        number = self.ids
        self.watching[number] = sink
        self.outbox.put(host_pb2.FeedSubscribe(id=number, watch=request))

        def unfollow() -> None:
            if self.watching.pop(number, None) is not None and not self.broken:
                self.outbox.put(number)  # the caller stopped listening: the worker can stop sending

        return unfollow

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[Posted]:
        """The updates of one watch, as the worker's `Watch` would send them."""
        following: Following[Posted] = Following()
        unfollow = self.follow(request, following)
        try:
            async for posted in following:
                yield posted
        finally:
            unfollow()

    def _message(self, items: list[host_pb2.FeedSubscribe | int]) -> host_pb2.FeedRequest:
        subscribe = [r for r in items if isinstance(r, host_pb2.FeedSubscribe)]
        return host_pb2.FeedRequest(subscribe=subscribe, cancel=[r for r in items if isinstance(r, int)])

    def _deliver(self, batch: host_pb2.FeedBatchWire) -> None:
        for item in batch.items:
            sink = self.watching.get(item.id)
            if sink is None:
                continue
            if not item.end:
                # a worker of the release before sends no seq beside the update: read it from the update
                seq = item.seq or matches_pb2.Update.FromString(item.update).seq
                sink.put(Posted(seq, item.update))
                continue
            del self.watching[item.id]
            error = error_for(item.error_code, item.error_message, item.moved_to) if item.error_code else None
            sink.end(error)

    def _fail(self, error: Exception, clean: bool) -> None:
        watching, self.watching = self.watching, {}
        for sink in watching.values():
            sink.end(error)
