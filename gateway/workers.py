"""The gateway's one way to reach the worker that owns a match: in process or over gRPC.

A worker client takes and returns the internal API's messages (host.proto). `MatchHost` itself is the
in-process client; `GrpcWorker` reaches a worker process and turns its errors back into error classes.
`Router.owner(match_id)` gives a client for the match's partition that finds its current worker for every
call and holds the call while the partition is between workers (a hand-off, a takeover): a refusal that
says nothing was done (`wrong_owner`, a request never delivered) is sent again, to where the partition
went, until `hold_s` has passed; a watch that loses its worker resumes on the next one after the last
update it delivered. The caller sees a pause, not an error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar, cast

import grpc

from gateway.links import CommandStream, NotDelivered, WatchFeed, rebuilt
from gateway.routes import LeasedRoutes, Routes, StaticRoutes
from protos.tablehall.v1 import host_pb2, host_pb2_grpc, matches_pb2
from workers import metrics
from workers.dial import dial
from workers.errors import NotOwner, Unavailable
from workers.following import Following, Sink, Unfollow
from workers.partitions import partition_of
from workers.settings import MEMORY, Topology, lease_ms
from workers.wire import Posted

T = TypeVar("T")

KEEPALIVE = [
    ("grpc.keepalive_time_ms", 5000),
    ("grpc.keepalive_timeout_ms", 5000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
"""A worker that went silent (cut off, frozen) is found out within seconds: its streams break, and what
waits on them is told, instead of waiting on a connection nobody will ever answer on."""
CALL_S = 15.0
"""An internal unary call not answered within this is given up as unavailable (a worker cut off from its
database never answers a create that waits on it; an idempotent call is then sent again, elsewhere)."""
HOLD_S = 5.0
"""How long a call waits for its partition to be served again before the caller hears UNAVAILABLE."""


class WorkerClient(Protocol):
    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse: ...

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse: ...

    async def follow(self, request: host_pb2.HostWatchRequest, sink: Sink[Posted]) -> Unfollow: ...

    def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[Posted]: ...

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
        self.channel = dial(address, KEEPALIVE)
        self.stub = host_pb2_grpc.MatchHostStub(self.channel)
        self.commands: CommandStream | None = None
        self.feed: WatchFeed | None = None

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        reply: host_pb2.HostCreateResponse = await _unary(self.stub.Create(request, timeout=CALL_S))
        return reply

    async def command(self, request: host_pb2.HostCommandRequest) -> matches_pb2.ActResponse:
        """On the worker's command stream (opened on first use, reopened after it breaks)."""
        if self.commands is None or self.commands.broken:
            self.commands = CommandStream(self.stub)
        return await self.commands.send(request)

    async def follow(self, request: host_pb2.HostWatchRequest, sink: Sink[Posted]) -> Unfollow:
        """On the worker's feed stream (opened on first use, reopened after it breaks); the worker's refusal
        comes to `sink` as its end."""
        return self._feed().follow(request, sink)

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[Posted]:
        """On the worker's feed stream (opened on first use, reopened after it breaks)."""
        async for posted in self._feed().watch(request):
            yield posted

    def _feed(self) -> WatchFeed:
        if self.feed is None or self.feed.broken:
            self.feed = WatchFeed(self.channel)
        return self.feed

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update:
        reply: matches_pb2.Update = await _unary(self.stub.View(request, timeout=CALL_S))
        return reply

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record:
        reply: matches_pb2.Record = await _unary(self.stub.Record(request, timeout=CALL_S))
        return reply

    async def create_tables(self, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse:
        reply: host_pb2.HostTablesResponse = await _unary(self.stub.CreateTables(request, timeout=CALL_S))
        return reply

    async def start_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        reply: host_pb2.HostTablesResponse = await _unary(self.stub.StartTables(request, timeout=CALL_S))
        return reply

    async def cancel_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        reply: host_pb2.HostTablesResponse = await _unary(self.stub.CancelTables(request, timeout=CALL_S))
        return reply

    async def close(self) -> None:
        for stream in (self.commands, self.feed):
            if stream is not None:
                stream.close()
        await self.channel.close()


class Router:
    """Routes by match id to the worker serving its partition (workers/partitions.py), holding calls
    while the partition has none. `Router([clients])`: static, partition p on client p mod N."""

    def __init__(self, routes: Routes | Sequence[WorkerClient], hold_s: float = HOLD_S) -> None:
        self.routes: Routes = StaticRoutes(routes) if isinstance(routes, Sequence) else routes
        self.hold_s = hold_s

    def owner(self, match_id: str) -> Routed:
        return Routed(self, partition_of(match_id))

    def current(self, match_id: str) -> WorkerClient | None:
        """The client serving the match right now, without waiting (to group a batch by worker)."""
        return cast(WorkerClient | None, self.routes.client(partition_of(match_id)))

    async def call(self, partition: int, call: Callable[[WorkerClient], Awaitable[T]], *, again: bool) -> T:
        """`call` on the partition's worker, sent again while the refusal says nothing was done (and, when
        `again`, after any unavailability: the call is a read or idempotent)."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + self.hold_s
        pause = 0.002
        held = False
        while True:
            client = cast(WorkerClient | None, self.routes.client(partition))
            if client is not None:
                try:
                    answer = await call(client)
                    if held:
                        metrics.HELD.observe(loop.time() - began)
                    return answer
                except NotOwner as error:
                    if not self.routes.moving:
                        raise  # static partitions: nobody else has it
                    if error.moved_to:
                        self.routes.moved(partition, error.moved_to)
                        if loop.time() < deadline:
                            held = True
                            continue  # straight to where it went
                    last: Exception = error
                except NotDelivered as error:
                    last = error
                except Unavailable as error:
                    if not again:
                        raise
                    last = error
            else:
                last = Unavailable(f"no worker serves this match's partition ({partition}) right now")
            held = True
            left = deadline - loop.time()
            if left <= 0:
                raise Unavailable(f"the match's worker is unavailable ({last}); try again") from None
            await self.routes.changed(min(pause, left))
            pause = min(pause * 2, 0.05)


    async def each_worker(
        self, match_ids: Sequence[str], call: Callable[[WorkerClient, list[str]], Awaitable[T]]
    ) -> list[T]:
        """`call` once per worker with the match ids it serves, workers in parallel. Ids whose worker
        refused them as not its own, or could not be reached, are grouped again and sent again while the
        hold lasts: `call` must be idempotent (creating, starting, cancelling tables is, per match id)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.hold_s
        pending, results, pause = list(match_ids), [], 0.005
        while pending:
            groups: dict[int, tuple[WorkerClient, list[str]]] = {}
            waiting = []
            for match_id in pending:
                client = self.current(match_id)
                if client is None:
                    waiting.append(match_id)
                else:
                    groups.setdefault(id(client), (client, []))[1].append(match_id)
            shares = list(groups.values())
            outcomes = await asyncio.gather(*(call(c, ids) for c, ids in shares), return_exceptions=True)
            pending = waiting
            for (_, ids), outcome in zip(shares, outcomes, strict=True):
                if isinstance(outcome, Unavailable | NotOwner):
                    pending += ids
                elif isinstance(outcome, BaseException):
                    raise outcome
                else:
                    results.append(outcome)
            if pending:
                left = deadline - loop.time()
                if left <= 0:
                    raise Unavailable(f"{len(pending)} matches have no reachable worker now; try again")
                await self.routes.changed(min(pause, left))
                pause = min(pause * 2, 0.1)
        return results


    def hinted(self, partition: int, error: Exception) -> bool:
        """A watch lost its worker: resume (after noting where the partition went), or give up?"""
        if isinstance(error, NotOwner):
            if not self.routes.moving:
                return False
            if error.moved_to:
                self.routes.moved(partition, error.moved_to)
        return True


class Routed:
    """A worker client for one partition, through the router (see the module's docstring)."""

    def __init__(self, router: Router, partition: int) -> None:
        self.router = router
        self.partition = partition

    async def _call(self, call: Callable[[WorkerClient], Awaitable[T]], again: bool = True) -> T:
        return await self.router.call(self.partition, call, again=again)

    async def create(self, request: host_pb2.HostCreateRequest) -> host_pb2.HostCreateResponse:
        return await self._call(lambda c: c.create(request))  # idempotent per match id

    def command(self, request: host_pb2.HostCommandRequest) -> Coroutine[Any, Any, matches_pb2.ActResponse]:
        return self.router.call(self.partition, lambda c: c.command(request), again=False)  # the busiest: no layer

    async def view(self, request: host_pb2.HostViewRequest) -> matches_pb2.Update:
        return await self._call(lambda c: c.view(request))

    async def record(self, request: host_pb2.HostRecordRequest) -> matches_pb2.Record:
        return await self._call(lambda c: c.record(request))

    async def create_tables(self, request: host_pb2.HostCreateTablesRequest) -> host_pb2.HostTablesResponse:
        return await self._call(lambda c: c.create_tables(request))

    async def start_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        return await self._call(lambda c: c.start_tables(request))

    async def cancel_tables(self, request: host_pb2.HostTablesRequest) -> host_pb2.HostTablesResponse:
        return await self._call(lambda c: c.cancel_tables(request))

    async def follow(self, request: host_pb2.HostWatchRequest, sink: Sink[Posted]) -> Unfollow:
        """Push the updates after `request.after_seq` to `sink`; if the match's worker goes away (a
        hand-off, a crash) the watch goes on at the next one from the last update delivered, without gap or
        repeat (`Resuming`)."""
        resuming = Resuming(self, request, sink)
        await resuming.open()
        return resuming.stop

    async def watch(self, request: host_pb2.HostWatchRequest) -> AsyncIterator[Posted]:
        """`follow` as an async iterator."""
        following: Following[Posted] = Following()
        stop = await self.follow(request, following)
        try:
            async for posted in following:
                yield posted
        finally:
            stop()


class Resuming:
    """A watch through the router: a sink in front of the caller's that, when the worker ends the watch
    as no longer its own (`wrong_owner`, `unavailable`), subscribes again where the partition is served
    now, after the last update it passed on. A worker that refuses again and again without an update in
    between is given up once the router's hold has passed, as a call would be."""

    def __init__(self, routed: Routed, request: host_pb2.HostWatchRequest, sink: Sink[Posted]) -> None:
        self.routed = routed
        self.request = request
        self.sink = sink
        self.after = request.after_seq
        self.unfollow: Unfollow | None = None
        self.stopped = False
        self.reopening: asyncio.Task[None] | None = None
        self.refused_since: float | None = None
        """The loop time of the first refusal since the last update passed on (None: none since)."""
        self.pause = 0.0
        """Before subscribing again after a refusal: none the first time, then growing (as `Router.call`)."""

    async def open(self) -> None:
        """Subscribe on the partition's worker (held while it has none; a refusal said at once is the call's)."""
        resumed = host_pb2.HostWatchRequest(
            match_id=self.request.match_id, token_sha256=self.request.token_sha256, after_seq=self.after,
            views=self.request.views,
        )
        unfollow = await self.routed._call(lambda client: client.follow(resumed, self))
        if self.stopped:
            unfollow()
        else:
            self.unfollow = unfollow

    def put(self, posted: Posted) -> None:
        if not self.stopped:
            self.after = posted.seq
            self.refused_since = None
            self.pause = 0.0
            self.sink.put(posted)

    def end(self, error: Exception | None) -> None:
        if self.stopped:
            return
        self.unfollow = None
        if isinstance(error, NotOwner | Unavailable) and self.routed.router.hinted(self.routed.partition, error):
            loop = asyncio.get_running_loop()
            now = loop.time()
            self.refused_since = now if self.refused_since is None else self.refused_since
            if now - self.refused_since < self.routed.router.hold_s:
                self.reopening = loop.create_task(self._reopen())
                return
            error = Unavailable(f"the match's worker is unavailable ({error}); try again")
        self.stopped = True
        self.sink.end(error)

    async def _reopen(self) -> None:
        try:
            if self.pause:
                await self.routed.router.routes.changed(self.pause)
            self.pause = min(max(self.pause * 2, 0.002), 0.05)
            await self.open()
        except Exception as error:
            if not self.stopped:
                self.stopped = True
                self.sink.end(error)

    def stop(self) -> None:
        """The caller stopped listening."""
        self.stopped = True
        if self.reopening is not None:
            self.reopening.cancel()
        if self.unfollow is not None:
            self.unfollow()
            self.unfollow = None


class NoLeases(Exception):
    """The lease table cannot be read (no database, an unreachable one): no route to any worker."""


@contextlib.asynccontextmanager
async def router_for(topology: Topology, url: str, *, probe: bool = True) -> AsyncIterator[Router]:
    """The router of a process that reaches worker processes: static routes to `topology.workers`
    addresses (the static mode), else the routes of the lease table in the database at `url` (`probe`:
    health-check the workers and mark unreachable ones down, as a gateway does)."""
    if topology.workers >= 1:
        clients = [GrpcWorker(topology.worker_address(k)) for k in range(topology.workers)]
        try:
            yield Router(clients)
        finally:
            for client in clients:
                await client.close()
        return
    from workers.sql.leases import Board

    if url == MEMORY:
        raise NoLeases("the workers' leases need a database (TABLEHALL_DATABASE_URL), or static routes (--workers N)")
    try:
        board = await asyncio.to_thread(Board, url)
    except Exception as error:
        raise NoLeases(f"cannot reach the lease table ({error})") from None
    try:
        routes = await LeasedRoutes(board, lease_ms(), GrpcWorker, probe=probe).start()
    except Exception as error:
        await board.close()
        raise NoLeases(f"cannot read the lease table ({type(error).__name__}: {error})") from None
    try:
        yield Router(routes)
    finally:
        await routes.close()
        await board.close()
