"""The async Python SDK for tablehall's public gRPC API.

    async with Client("127.0.0.1:50051") as client:
        created = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        ana = client.seat(created.match_id, created.tokens[0])
        seq, view = await ana.act({"do": "ready"})
        async for seq, view in ana.watch(after_seq=seq): ...

Actions are written as record events (RECORDS.md): `{"do": "play", "tile": "6-4", "end": "E"}`.
Views come as dicts (the shape of view_json, converted from the typed view with `view_dict`); the typed
view messages themselves (views.proto) come from `typed_view`, `updates` and `Session.events(typed=True)`.
The client asks the service for typed views only (VIEW_FORMAT_TYPED): no JSON is built for it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc
from google.protobuf.json_format import ParseDict
from google.protobuf.message import Message

from protos.tablehall.v1 import actions_pb2, matches_pb2, matches_pb2_grpc
from workers.errors import ERROR_CODE_KEY, RETRY_AFTER_KEY
from workers.typed_views import as_dict, typed_of, view_dict
from workers.typed_views.legal import action_message

__all__ = ["action_message", "as_dict", "typed_of", "view_dict"]  # the SDK's helpers, from their one home

TYPED = matches_pb2.VIEW_FORMAT_TYPED

REACH_S = 3.0
"""How long `Client.reachable` waits for the service to answer before saying it cannot be reached."""


class TablehallError(Exception):
    """A refused call: `status` is the gRPC status, `code` the service's stable error code, and for a
    caller over its limits (`rate_limited`) `retry_after_s`, when to try again."""

    def __init__(self, status: grpc.StatusCode, code: str, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.retry_after_s = retry_after_s

    def line(self, limit: int = 300) -> str:
        """The message and its code on one line for a terminal, clipped: a refusal may quote a huge input."""
        text = " ".join(str(self).split())
        return f"{text if len(text) <= limit else text[:limit] + '…'} ({self.code or self.status.name})"

    @staticmethod
    def of(error: grpc.aio.AioRpcError) -> TablehallError:
        trailers = {k: str(v) for k, v in error.trailing_metadata() or ()}
        retry = trailers.get(RETRY_AFTER_KEY, "")
        retry_after_s = int(retry) / 1000 if retry.isdigit() else None
        return TablehallError(
            error.code(), trailers.get(ERROR_CODE_KEY, ""), error.details() or error.code().name, retry_after_s
        )


class ServiceUnreachable(ConnectionError):
    """No tablehall service answers at the address: refused, an unknown host, or no answer in time."""

    @staticmethod
    def of(address: str, error: grpc.aio.AioRpcError, within_s: float) -> ServiceUnreachable:
        if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            reason = f"no answer within {within_s:g} s"
        else:  # grpc words it "...; last error: UNKNOWN: ipv4:...: Connection refused": keep the last words
            reason = (error.details() or error.code().name).rsplit(": ", 1)[-1].strip(" []")
        return ServiceUnreachable(f"no tablehall service answers at {address} ({reason})")


@dataclass(frozen=True, slots=True)
class CreatedMatch:
    match_id: str
    players: tuple[str, ...]
    tokens: tuple[str, ...]
    """One secret per seat, shown only here."""


class SeatClient:
    """One seat of a match (or a spectator when `token` is None)."""

    def __init__(self, stub: matches_pb2_grpc.MatchesStub, match_id: str, token: str | None) -> None:
        self.stub = stub
        self.match_id = match_id
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    async def act(
        self, action: Mapping[str, Any] | actions_pb2.Action, seat: int | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Send one command (record-style, or a typed Action as a legal entry carries it): the new change's
        seq and this seat's view."""
        typed = action if isinstance(action, actions_pb2.Action) else action_message(action)
        request = matches_pb2.ActRequest(match_id=self.match_id, action=typed, views=TYPED)
        if seat is not None:
            request.seat = seat
        try:
            reply = await self.stub.Act(request, metadata=self.metadata)
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None
        return reply.seq, view_dict(reply)

    async def session(self, after_seq: int = 0) -> Session:
        """Open a `Play` stream for this seat (commands and updates on one connection stream)."""
        call = self.stub.Play(metadata=self.metadata)
        # an accepted command's result rides on its update: one message, not two (`events` yields both)
        opening = matches_pb2.PlayRequest(
            match_id=self.match_id, after_seq=after_seq, views=TYPED, answer_on_update=True
        )
        try:
            await call.write(opening)
        except grpc.aio.AioRpcError as error:  # refused at once (over a limit): the service ended the stream
            raise TablehallError.of(error) from None
        return Session(call)

    async def view(self) -> tuple[int, dict[str, Any]]:
        update = await self.update()
        return update.seq, view_dict(update)

    async def typed_view(self) -> tuple[int, Message]:
        """The current view as its typed message (views.proto: SpectacularBidView or FiveOhOneView)."""
        update = await self.update()
        typed = typed_of(update)
        assert typed is not None, "the service sent no typed view"
        return update.seq, typed

    async def update(self, views: int = TYPED) -> matches_pb2.Update:
        """The current view once, as the raw Update (GetView)."""
        request = matches_pb2.GetViewRequest(match_id=self.match_id, views=views)  # type: ignore[arg-type]
        try:
            update: matches_pb2.Update = await self.stub.GetView(request, metadata=self.metadata)
            return update
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None

    async def updates(
        self, after_seq: int = 0, views: int = matches_pb2.VIEW_FORMAT_BOTH
    ) -> AsyncIterator[matches_pb2.Update]:
        """The raw stream: one Update per change after `after_seq`; it ends when the match does. By default
        each carries both the typed view and view_json (`views`: matches.proto ViewFormat)."""
        request = matches_pb2.WatchRequest(match_id=self.match_id, after_seq=after_seq, views=views)  # type: ignore[arg-type]
        call = self.stub.Watch(request, metadata=self.metadata)
        try:
            async for update in call:
                yield update
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None
        finally:
            if isinstance(call, grpc.aio.Call):
                call.cancel()  # a caller that stops reading early closes the stream now, not at garbage collection

    async def watch(self, after_seq: int = 0) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        async for update in self.updates(after_seq, TYPED):
            yield update.seq, view_dict(update)


@dataclass(frozen=True, slots=True)
class Result:
    """What became of a command sent on a session: its change, or why it was refused (nothing changed)."""

    ref: int
    seq: int
    error: TablehallError | None


class Session:
    """A seat's `Play` stream: send commands, and read updates and results as they come."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.refs = 0
        self.writing = asyncio.Lock()  # grpc allows one write in flight per stream

    async def send(self, action: Mapping[str, Any] | actions_pb2.Action) -> int:
        """Send a command (record-style, or a typed Action such as a legal entry's, sent as it is); its
        `Result` comes on the stream with the returned reference."""
        self.refs += 1
        ref = self.refs
        typed = action if isinstance(action, actions_pb2.Action) else action_message(action)
        request = matches_pb2.PlayRequest(ref=ref, action=typed)
        async with self.writing:
            try:
                await self.call.write(request)
            except grpc.aio.AioRpcError as error:  # the stream has ended (`events` says why)
                raise TablehallError.of(error) from None
        return ref

    async def events(self, typed: bool = False) -> AsyncIterator[tuple[int, Any] | Result]:
        """`(seq, view)` for each update and a `Result` for each command, until the match ends; the view is
        a dict (view_json's shape), or with `typed` the view's message (views.proto). A command's result that
        came on its update (`answer_on_update`) follows that update."""
        try:
            async for event in self.call:
                if event.HasField("update"):
                    update = event.update
                    yield update.seq, typed_of(update) if typed else view_dict(update)
                    if event.HasField("answered"):
                        yield _result(event.answered)
                else:
                    yield _result(event.result)
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None

    async def close(self) -> None:
        await self.call.done_writing()
        self.call.cancel()


def _result(result: matches_pb2.CommandResult) -> Result:
    error = None
    if result.HasField("error"):
        error = TablehallError(grpc.StatusCode[result.error.status], result.error.code, result.error.message)
    return Result(result.ref, result.seq, error)


@dataclass(frozen=True, slots=True)
class Tls:
    """Reach the service over TLS, trusting `ca` (PEM certificates) or, without it, the system's roots."""

    ca: bytes | None = None


CHANNEL_OPTIONS = (("grpc.use_local_subchannel_pool", 1),)
"""Each channel its own connection: gRPC would otherwise share one TCP connection among every channel to
the same address, and the service budgets requests per connection (gateway/limits.py)."""


def open_channel(address: str, tls: Tls | None = None) -> grpc.aio.Channel:
    """A channel to the service: plaintext (the local default) or TLS."""
    if tls is None:
        return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
    credentials = grpc.ssl_channel_credentials(root_certificates=tls.ca)
    return grpc.aio.secure_channel(address, credentials, options=CHANNEL_OPTIONS)


class Client:
    """The service at `address`, on a connection of its own (plaintext, or TLS with `tls`)."""

    def __init__(self, address: str, tls: Tls | None = None) -> None:
        self.address = address
        self.tls = tls
        self.channel = open_channel(address, tls)
        self.stub = matches_pb2_grpc.MatchesStub(self.channel)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    async def create_match(
        self,
        game: str,
        players: list[str],
        options: Mapping[str, Any] | None = None,
        shared_device: bool = False,
    ) -> CreatedMatch:
        request = matches_pb2.CreateMatchRequest(game=game, players=players, shared_device=shared_device)
        if options:
            ParseDict(dict(options), request.options)
        try:
            reply = await self.stub.CreateMatch(request)
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None
        return CreatedMatch(reply.match_id, tuple(s.player for s in reply.seats), tuple(s.token for s in reply.seats))

    def seat(self, match_id: str, token: str) -> SeatClient:
        return SeatClient(self.stub, match_id, token)

    def spectator(self, match_id: str) -> SeatClient:
        return SeatClient(self.stub, match_id, None)

    async def rules(self, game: str) -> str:
        try:
            return str((await self.stub.GetRules(matches_pb2.GetRulesRequest(game=game))).text)
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None

    async def record(self, match_id: str, token: str | None = None) -> dict[str, Any]:
        """The ended match's record; `token` (a seat's, or a tournament organizer's key) has a delayed
        tournament table's record before the public does."""
        metadata = (("authorization", f"Bearer {token}"),) if token else None
        try:
            reply = await self.stub.GetRecord(matches_pb2.GetRecordRequest(match_id=match_id), metadata=metadata)
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None
        record: dict[str, Any] = json.loads(reply.record_json)
        return record

    async def ping(self) -> None:
        await self.stub.Ping(matches_pb2.PingRequest())

    async def reachable(self, within_s: float = REACH_S) -> None:
        """Returns once the service answers a ping; `ServiceUnreachable` at once when the connection is
        refused or the host unknown (the call does not wait for the channel), or after `within_s`."""
        try:
            await self.stub.Ping(matches_pb2.PingRequest(), timeout=within_s, wait_for_ready=False)
        except grpc.aio.AioRpcError as error:
            if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise ServiceUnreachable.of(self.address, error, within_s) from None
            raise TablehallError.of(error) from None
