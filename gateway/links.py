"""The two long-lived streams from the gateway to each worker process: commands and watches.

Each carries many matches at once, in batches (`workers.outbox`): a gRPC message costs both processes
far more than the few bytes of a command, so under load one message carries many. A broken stream fails
everything waiting on it with `Unavailable` (clients retry; watchers resume from their sequence number)
and the next call opens a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from gateway.status import ERROR_CODE_KEY
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers.errors import Unavailable, error_for
from workers.outbox import Outbox

_BROKEN = (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError)


def rebuilt(error: grpc.aio.AioRpcError) -> Exception:
    """A worker's refusal as its own error class; anything else: the worker is unreachable."""
    for key, value in error.trailing_metadata() or ():
        if key == ERROR_CODE_KEY:
            return error_for(str(value), error.details() or "")
    return Unavailable(f"the match's worker is unreachable ({error.code().name}: {error.details()})")


def _unreachable(error: BaseException) -> Exception:
    if isinstance(error, grpc.aio.AioRpcError):
        return rebuilt(error)
    return Unavailable(f"the match's worker is unreachable ({type(error).__name__})")


class CommandStream:
    """Every command for one worker, matched to its reply by `ref`."""

    def __init__(self, stub: host_pb2_grpc.MatchHostStub) -> None:
        self.call = stub.Commands()
        self.waiting: dict[int, asyncio.Future[matches_pb2.ActResponse]] = {}
        self.refs = 0
        self.broken = False
        self.outbox: Outbox[host_pb2.HostCommandRequest] = Outbox()
        self.tasks = [asyncio.create_task(self._write()), asyncio.create_task(self._read())]

    async def send(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        """Send `request` (this stream sets its `ref`) and wait for the worker's reply."""
        if self.broken:
            raise Unavailable("the match's worker is unreachable (its command stream broke)")
        self.refs += 1
        request.ref = self.refs
        reply: asyncio.Future[matches_pb2.ActResponse] = asyncio.get_running_loop().create_future()
        self.waiting[request.ref] = reply
        self.outbox.put(request)
        return await reply

    async def _write(self) -> None:
        try:
            while commands := await self.outbox.take():
                await self.call.write(host_pb2.HostCommandBatch(commands=commands))
        except _BROKEN as error:
            self._break(_unreachable(error))

    async def _read(self) -> None:
        try:
            async for batch in self.call:
                for message in batch.replies:
                    reply = self.waiting.pop(message.ref, None)
                    if reply is None or reply.done():
                        continue
                    if message.error_code:
                        reply.set_exception(error_for(message.error_code, message.error_message))
                    else:
                        reply.set_result(message.reply)
            self._break(Unavailable("the match's worker closed its command stream"))
        except _BROKEN as error:
            self._break(_unreachable(error))

    def _break(self, error: Exception) -> None:
        self.broken = True
        self.outbox.close()
        for reply in self.waiting.values():
            if not reply.done():
                reply.set_exception(error)
        self.waiting.clear()

    def close(self) -> None:
        self._break(Unavailable("the gateway closed its command stream"))
        for task in self.tasks:
            task.cancel()
        self.call.cancel()


class WatchFeed:
    """Every watch this gateway holds on one worker. Each watch has its own queue here, so a slow
    client delays nobody else (a match's updates are few: the queue stays short)."""

    def __init__(self, stub: host_pb2_grpc.MatchHostStub) -> None:
        self.call = stub.Feed()
        self.watching: dict[int, asyncio.Queue[host_pb2.FeedItem | Exception]] = {}
        self.ids = 0
        self.broken = False
        self.outbox: Outbox[host_pb2.FeedSubscribe | int] = Outbox()
        self.tasks = [asyncio.create_task(self._write()), asyncio.create_task(self._read())]

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[matches_pb2.Update]:
        """The updates of one watch, as the worker's `Watch` would send them."""
        if self.broken:
            raise Unavailable("the match's worker is unreachable (its feed broke)")
        self.ids += 1
        number = self.ids
        queue: asyncio.Queue[host_pb2.FeedItem | Exception] = asyncio.Queue()
        self.watching[number] = queue
        self.outbox.put(host_pb2.FeedSubscribe(id=number, watch=request))
        ended = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, Exception):
                    ended = True
                    raise item
                if item.end:
                    ended = True
                    if item.error_code:
                        raise error_for(item.error_code, item.error_message)
                    return
                yield item.update
        finally:
            self.watching.pop(number, None)
            if not ended and not self.broken:
                self.outbox.put(number)  # the caller stopped listening: the worker can stop sending

    async def _write(self) -> None:
        try:
            while requests := await self.outbox.take():
                subscribe = [r for r in requests if isinstance(r, host_pb2.FeedSubscribe)]
                cancel = [r for r in requests if isinstance(r, int)]
                await self.call.write(host_pb2.FeedRequest(subscribe=subscribe, cancel=cancel))
        except _BROKEN as error:
            self._break(_unreachable(error))

    async def _read(self) -> None:
        try:
            async for batch in self.call:
                for item in batch.items:
                    queue = self.watching.get(item.id)
                    if queue is not None:
                        queue.put_nowait(item)
            self._break(Unavailable("the match's worker closed its feed"))
        except _BROKEN as error:
            self._break(_unreachable(error))

    def _break(self, error: Exception) -> None:
        self.broken = True
        self.outbox.close()
        for queue in self.watching.values():
            queue.put_nowait(error)

    def close(self) -> None:
        self._break(Unavailable("the gateway closed its feed"))
        for task in self.tasks:
            task.cancel()
        self.call.cancel()
