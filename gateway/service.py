"""The public `tablehall.v1.Matches` service: authenticates the caller as one seat (or a spectator),
stamps each command's arrival, and routes every call to the worker that owns the match."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
from google.protobuf.json_format import MessageToDict

from gateway.answers import Answers
from gateway.guard import Admit, StreamBudget, unlimited
from gateway.rulebook import rules_for
from gateway.spectators import Spectators, live
from gateway.workers import Routed, Router, WorkerClient
from protos.tablehall.v1 import host_pb2, matches_pb2, matches_pb2_grpc
from workers import metrics
from workers.actor import unix_ms
from workers.edge import edge, edge_stream, refusal, settle
from workers.errors import NotFinished, Unauthenticated, status_of
from workers.following import Unfollow
from workers.games.catalog import game_named, unknown_game
from workers.games.errors import MalformedAction, quote
from workers.wire import Posted

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

_MATCH_ID = re.compile(r"[0-9a-f]{16}")
LINGER_S = 1.0
"""A Play stream whose match is over and whose commands are all answered waits this long for one more."""
CLOSED = object()
"""On a Play stream's queue: the client closed its side (it sends no more commands)."""


class PlayEvents:
    """What a Play stream has to send, in arrival order: its seat's updates (pushed by the match: this is
    their sink), then None or an error once they end; command results; `CLOSED`."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, update: Posted) -> None:
        self.push(update)

    def end(self, error: Exception | None) -> None:
        self.push(error)

    def push(self, item: Any) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def pumped(self, updates: AsyncIterator[Posted | matches_pb2.Update]) -> None:
        """A spectator's updates, read here from their iterator (a delayed table's buffer)."""
        try:
            async for update in updates:
                self.push(update if isinstance(update, Posted) else Posted.of(update))
            self.push(None)
        except Exception as error:
            self.push(error)

    async def next(self, timeout: float | None) -> Any:
        """The next item, waiting for it (`TimeoutError` after `timeout` seconds, if given)."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    await asyncio.wait_for(self._waiter, timeout)
            finally:
                self._waiter = None
        return self._items.popleft()


@dataclass(slots=True)
class Commanding:
    """A `Play` stream's commands, read in their own task: each spends a request of the caller's budget,
    goes to the match's worker, and its result joins the stream's events (a refusal for rate ends them)."""

    owner: Routed
    match_id: str
    token: bytes
    budget: StreamBudget
    answers: Answers
    events: PlayEvents

    async def run(self, requests: AsyncIterator[matches_pb2.PlayRequest]) -> None:
        events = self.events
        try:
            async for request in requests:
                arrival = time.time_ns() // 1_000_000  # stamped first (SB-10: arrival at the server)
                self.budget.spend()
                self.answers.asked()
                command = host_pb2.HostCommandRequest(  # its result carries no view: the stream's update does
                    match_id=self.match_id, token_sha256=self.token, action=request.action,
                    arrival_unix_ms=arrival, no_view=True,
                )
                events.push(await answer(self.owner, command, request.ref))
        except Exception as error:  # a message that cannot be read, or one over the caller's budget
            events.push(error)
            return
        events.push(CLOSED)


def new_token() -> str:
    """A new seat or player token: 192 random bits, URL-safe, never starting with "-" (which a command
    line would take for an option: `tablehall bot --token -x…`)."""
    while (token := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return token


def token_sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def bearer_token(context: Context, required: bool) -> str:
    """The caller's bearer token as sent (stripped); empty for a spectator where that is allowed."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            scheme, _, token = str(value).partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated("the authorization metadata must read 'Bearer <token>'")
            return token.strip()
    if required:
        raise Unauthenticated("this needs a seat token: send it as 'authorization: Bearer <token>'")
    return ""


def bearer(context: Context, required: bool) -> bytes:
    """The SHA-256 of the caller's bearer token (all the workers ever see); empty for a spectator."""
    token = bearer_token(context, required)
    return token_sha256(token) if token else b""


def checked_id(match_id: str) -> str:
    if not _MATCH_ID.fullmatch(match_id):
        raise MalformedAction(f"{quote(match_id)} is not a match id (16 hex digits)")
    return match_id


async def answer(owner: WorkerClient, command: host_pb2.HostCommandRequest, ref: int) -> matches_pb2.CommandResult:
    """One command's result on a Play stream: the change it made, or the status and code `Act` would
    have answered (an unexpected failure: logged once, INTERNAL with the generic message)."""
    try:
        reply = await owner.command(command)
    except Exception as error:
        code, message = refusal(error, "a Play command")
        metrics.rejected(code).inc()
        refused = matches_pb2.CommandError(status=status_of(type(error)).name, code=code, message=message)
        return matches_pb2.CommandResult(ref=ref, error=refused)
    return matches_pb2.CommandResult(ref=ref, seq=reply.seq)



Consent: TypeAlias = Callable[[list[str], bytes], Awaitable[None]]
"""Refuses a CreateMatch that names a registered player without their key (the Lobby's check)."""


class MatchesService(matches_pb2_grpc.MatchesServicer):
    def __init__(self, router: Router, consent: Consent | None = None, spectators: Spectators | None = None) -> None:
        self.router = router
        self.consent = consent
        self.spectators = spectators if spectators is not None else Spectators(unix_ms, live)
        """Spectators of delayed tables (gateway/spectators.py); seats never go through it."""

    def updates(
        self, match_id: str, token: bytes, after_seq: int, views: matches_pb2.ViewFormat.ValueType
    ) -> AsyncIterator[Posted | matches_pb2.Update]:
        """What Watch sends: a seat's updates at once (the worker's own stream, no layer between: every
        update of every command passes here); a spectator's once the table's delay allows."""
        watch = host_pb2.HostWatchRequest(match_id=match_id, token_sha256=token, after_seq=after_seq, views=views)
        if token:
            return self.router.owner(match_id).watch(watch)
        return self._spectator_updates(watch)

    async def _spectator_updates(self, watch: host_pb2.HostWatchRequest) -> AsyncIterator[Posted | matches_pb2.Update]:
        match_id = watch.match_id
        delayed = await self.spectators.table(match_id, lambda: self._spectating(match_id))
        if delayed is not None:
            async for update in delayed.updates(watch.after_seq):
                yield in_form(update, watch.views)
            return
        async for posted in self.router.owner(match_id).watch(watch):
            yield posted

    async def _spectating(self, match_id: str) -> AsyncIterator[matches_pb2.Update]:
        """A spectator's every update of the match from the first, in both forms (what a delayed table's
        buffer holds; each spectator gets the form it asked: `in_form`)."""
        async for posted in self.router.owner(match_id).watch(host_pb2.HostWatchRequest(match_id=match_id)):
            yield posted.update()

    @edge
    async def CreateMatch(
        self, request: matches_pb2.CreateMatchRequest, context: Context
    ) -> matches_pb2.CreateMatchResponse:
        game = game_named(request.game)
        if game is None:
            raise MalformedAction(unknown_game(request.game))
        options: dict[str, Any] = MessageToDict(request.options, preserving_proto_field_name=True)
        if request.shared_device:
            options["shared_device"] = True
        if self.consent is not None:
            await self.consent(list(request.players), bearer(context, required=False))
        match_id = secrets.token_hex(8)
        tokens = [new_token() for _ in request.players]
        await self.router.owner(match_id).create(
            host_pb2.HostCreateRequest(
                match_id=match_id,
                game=game.name,
                players=list(request.players),
                options_json=json.dumps(options),
                token_sha256=[token_sha256(t) for t in tokens],
                created_unix_ms=time.time_ns() // 1_000_000,
            )
        )
        seats = [
            matches_pb2.SeatToken(seat=seat, player=player, token=token)
            for seat, (player, token) in enumerate(zip(request.players, tokens, strict=True))
        ]
        return matches_pb2.CreateMatchResponse(match_id=match_id, seats=seats)

    @edge
    async def Act(self, request: matches_pb2.ActRequest, context: Context) -> matches_pb2.ActResponse:
        arrival = time.time_ns() // 1_000_000  # stamped before anything else (SB-10: arrival at the server)
        token = bearer(context, required=True)
        command = host_pb2.HostCommandRequest(
            match_id=checked_id(request.match_id), token_sha256=token, action=request.action, arrival_unix_ms=arrival,
            views=request.views,
        )
        if request.HasField("seat"):
            command.seat = request.seat
        return await self.router.owner(request.match_id).command(command)

    @edge_stream
    async def Watch(  # type: ignore[override]  # a seat's updates go out serialized (gateway/server.py)
        self, request: matches_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[bytes | matches_pb2.Update]:
        token = bearer(context, required=False)
        async for update in self.updates(checked_id(request.match_id), token, request.after_seq, request.views):
            yield update.wire if isinstance(update, Posted) else update

    async def Play(  # type: ignore[override]  # events go out serialized (gateway/server.py)
        self, requests: AsyncIterator[matches_pb2.PlayRequest], context: Context, admit: Admit = unlimited
    ) -> AsyncIterator[bytes]:
        """Watch and Act on one stream: updates as Watch sends them, and each command's result. Every
        command gets exactly one result, even after the match's last update: once the updates have ended
        and every command read is answered, the stream still reads (and answers) commands until the client
        closes its side, or for `LINGER_S` more (a command sent as the match ended is still on its way).
        Events go out serialized (`gateway/answers.py`).

        The busiest call of the service, so no layer stands between it and grpc: it ends itself through
        `settle` (no `edge_stream`), and spends the caller's budget where it reads each command (`admit`,
        from the guard in front of it: gateway/guard.py)."""
        budget: StreamBudget | None = None
        stop: Unfollow | None = None
        tasks: list[asyncio.Task[None]] = []
        try:
            budget = admit(context)
            token = bearer(context, required=False)
            first = await anext(aiter(requests), None)
            if first is None:
                return
            match_id = checked_id(first.match_id)
            owner = self.router.owner(match_id)
            events = PlayEvents()
            answers = Answers(first.answer_on_update)
            watch = host_pb2.HostWatchRequest(
                match_id=match_id, token_sha256=token, after_seq=first.after_seq, views=first.views
            )
            if token:  # a seat: its updates pushed here by its match (workers/following.py)
                stop = await owner.follow(watch, events)
            else:
                tasks.append(asyncio.create_task(events.pumped(self._spectator_updates(watch))))
            commanding = Commanding(owner, match_id, token, budget, answers, events)
            tasks.append(asyncio.create_task(commanding.run(requests)))
            ended = closed = False
            while not (ended and closed and answers.unanswered == 0):
                settled = ended and answers.unanswered == 0
                try:
                    event = await events.next(LINGER_S if settled else None)
                except TimeoutError:
                    return  # the match is over, every command answered, and none came for a while
                if event is CLOSED:
                    closed = True
                    continue
                if event is None or isinstance(event, Exception):
                    ended = True
                    for held in answers.ended():  # held results go out before the stream ends
                        yield held
                    if isinstance(event, Exception):
                        raise event
                    continue
                out = answers.update(event) if isinstance(event, Posted) else answers.result(event)
                for sent in out:
                    yield sent
        except Exception as error:
            await settle(error, context, "Play")
        finally:
            if stop is not None:
                stop()
            for task in tasks:
                task.cancel()
            if budget is not None:
                budget.close()

    @edge
    async def GetView(self, request: matches_pb2.GetViewRequest, context: Context) -> matches_pb2.Update:
        match_id, token = checked_id(request.match_id), bearer(context, required=False)
        if not token:
            delayed = await self.spectators.table(match_id, lambda: self._spectating(match_id))
            if delayed is not None:
                return in_form(delayed.view(), request.views)
        view = host_pb2.HostViewRequest(match_id=match_id, token_sha256=token, views=request.views)
        return await self.router.owner(match_id).view(view)

    @edge
    async def GetRules(self, request: matches_pb2.GetRulesRequest, context: Context) -> matches_pb2.Rules:
        return rules_for(request.game)

    @edge
    async def GetRecord(self, request: matches_pb2.GetRecordRequest, context: Context) -> matches_pb2.Record:
        ask = host_pb2.HostRecordRequest(match_id=checked_id(request.match_id))
        record = await self.router.owner(request.match_id).record(ask)
        return await self.spectators.record(request.match_id, bearer(context, required=False), record)

    async def Ping(self, request: matches_pb2.PingRequest, context: Context) -> matches_pb2.PingResponse:
        return matches_pb2.PingResponse()

    # --- ratings (ratings/api.py; the database of TABLEHALL_DATABASE_URL) ---------------------------

    @edge
    async def GetRating(self, request: matches_pb2.GetRatingRequest, context: Context) -> matches_pb2.Rating:
        from ratings import api

        row = await asyncio.to_thread(api.rating_of, await _ratings_engine(), request.player, _rated_game(request.game))
        return _rating(row)

    @edge
    async def GetLeaderboard(
        self, request: matches_pb2.GetLeaderboardRequest, context: Context
    ) -> matches_pb2.Leaderboard:
        from ratings import api

        game = _rated_game(request.game)
        limit = min(request.limit or 10, 1000)
        found = await asyncio.to_thread(api.leaderboard, await _ratings_engine(), game, limit)
        return matches_pb2.Leaderboard(game=game, entries=[_rating(row) for row in found])

    @edge
    async def GetRatingHistory(
        self, request: matches_pb2.GetRatingHistoryRequest, context: Context
    ) -> matches_pb2.RatingHistory:
        from ratings import api

        game = _rated_game(request.game)
        limit = min(request.limit or 50, 1000)
        found = await asyncio.to_thread(api.history, await _ratings_engine(), request.player, game, limit)
        changes = [
            matches_pb2.RatingChange(
                match_id=c.match_id, rank=c.rank, mu_before=c.mu_before, sigma_before=c.sigma_before,
                mu_after=c.mu_after, sigma_after=c.sigma_after, at_unix_ms=c.at_unix_ms,
            )
            for c in found
        ]
        return matches_pb2.RatingHistory(player=request.player, game=game, changes=changes)


def _rated_game(name: str) -> str:
    game = game_named(name)
    if game is None:
        raise MalformedAction(unknown_game(name))
    return game.name


async def _ratings_engine() -> Any:
    from workers.sql.engine import database_url
    from workers.sql.migrate import engine_for

    url = database_url()
    if url == "memory":
        raise NotFinished("ratings need a database: this service runs with TABLEHALL_DATABASE_URL=memory")
    return await asyncio.to_thread(engine_for, url)


def _rating(row: Any) -> matches_pb2.Rating:
    return matches_pb2.Rating(
        player=row.player, game=row.game, mu=row.mu, sigma=row.sigma, ordinal=row.ordinal, games=row.games
    )


def in_form(update: matches_pb2.Update, views: matches_pb2.ViewFormat.ValueType) -> matches_pb2.Update:
    """A delayed spectator's update (held in both forms) in the form the spectator asked."""
    if views == matches_pb2.VIEW_FORMAT_BOTH:
        return update
    shown = matches_pb2.Update()
    shown.CopyFrom(update)
    if views == matches_pb2.VIEW_FORMAT_TYPED:
        shown.ClearField("view_json")
    else:
        shown.ClearField("view")
    return shown
