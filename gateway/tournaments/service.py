"""The public `tablehall.v1.Tournaments` service: authenticates the organizer (or a player), hands the
work to the director, and builds every reply from the director's values, never from a match state."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeAlias

import grpc
from google.protobuf.json_format import MessageToDict
from sqlalchemy import Engine

from gateway.service import bearer, bearer_token, token_sha256
from gateway.tournaments import feed, pairing, public, reports, store
from gateway.tournaments.director import Director, TournamentSpec
from gateway.tournaments.errors import NoDatabase, NotYours
from gateway.tournaments.organizers import Organizer, organizer_by_key
from gateway.tournaments.rounds import TIE_BREAKS
from gateway.workers import Router
from protos.tablehall.v1 import matches_pb2, tournaments_pb2, tournaments_pb2_grpc
from workers.actor import unix_ms
from workers.edge import edge, edge_stream
from workers.errors import Unauthenticated

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


def presented_token(context: Context) -> tuple[str, bytes]:
    """The caller's bearer token as sent (stripped) and its SHA-256."""
    token = bearer_token(context, required=True)
    return token, token_sha256(token)


def options_of(message: matches_pb2.Options) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True)


class TournamentsService(tournaments_pb2_grpc.TournamentsServicer):
    def __init__(self, router: Router, director: Director | None = None, clock: Callable[[], int] = unix_ms) -> None:
        self.router = router
        self._director = director
        self.clock = clock
        """The service's clock (tests inject one): the director's, made on first use."""

    async def director(self) -> Director:
        """Made on first use, on the database of TABLEHALL_DATABASE_URL (migrated), like the ratings."""
        if self._director is None:
            self._director = Director(await database_engine(), self.router, self.clock)
        return self._director

    async def organizer(self, context: Context) -> tuple[Director, Organizer]:
        director = await self.director()
        key = bearer(context, required=False)
        if not key:
            raise Unauthenticated("tournament calls need an organizer key: 'authorization: Bearer <key>'")
        found = await asyncio.to_thread(organizer_by_key, director.engine, key)
        if found is None:
            raise Unauthenticated("that organizer key is not known (tablehall organizer create NAME makes one)")
        return director, found

    @edge
    async def CreateTables(
        self, request: tournaments_pb2.CreateTablesRequest, context: Context
    ) -> tournaments_pb2.CreateTablesResponse:
        director, organizer = await self.organizer(context)
        start = request.start_unix_ms if request.HasField("start_unix_ms") else None
        seating = [list(t.players) for t in request.tables]
        batch = await director.create_tables(organizer, request.game, seating, options_of(request.options), start)
        return tournaments_pb2.CreateTablesResponse(
            batch_id=batch.batch_id,
            starts_unix_ms=batch.starts_unix_ms,
            tables=[
                tournaments_pb2.Table(
                    match_id=t.match_id,
                    seats=[
                        matches_pb2.SeatToken(seat=seat, player=player, token=token)
                        for seat, (player, token) in enumerate(zip(t.players, t.tokens, strict=True))
                    ],
                )
                for t in batch.tables
            ],
        )

    @edge
    async def StartTables(
        self, request: tournaments_pb2.StartTablesRequest, context: Context
    ) -> tournaments_pb2.StartTablesResponse:
        director, organizer = await self.organizer(context)
        started, at = await director.start_tables(organizer, request.batch_id)
        return tournaments_pb2.StartTablesResponse(batch_id=request.batch_id, started=started, started_unix_ms=at)

    @edge
    async def CreateTournament(
        self, request: tournaments_pb2.CreateTournamentRequest, context: Context
    ) -> tournaments_pb2.CreateTournamentResponse:
        director, organizer = await self.organizer(context)
        spec = TournamentSpec(
            name=request.name,
            game=request.game,
            players=tuple(request.players),
            format=request.format,
            rounds=request.rounds,
            options=options_of(request.options),
            start_unix_ms=request.start_unix_ms if request.HasField("start_unix_ms") else None,
            voided=request.voided or "replay",
            manual=request.manual,
            round_pause_ms=round(request.round_pause_s * 1000) if request.HasField("round_pause_s") else None,
            spectator_delay_s=request.spectator_delay_s,
        )
        tournament_id, players = await director.create_tournament(organizer, spec)
        return tournaments_pb2.CreateTournamentResponse(
            tournament_id=tournament_id,
            players=[tournaments_pb2.PlayerToken(seed=seed, player=p, token=t) for seed, p, t in players],
        )

    @edge
    async def GetTournament(
        self, request: tournaments_pb2.GetTournamentRequest, context: Context
    ) -> tournaments_pb2.Tournament:
        director, organizer = await self.organizer(context)
        snap = await director.snapshot(request.tournament_id, organizer)
        return tournament_message(snap, request.with_tables, director.clock(), director.state(snap))

    @edge
    async def NextRound(
        self, request: tournaments_pb2.NextRoundRequest, context: Context
    ) -> tournaments_pb2.Tournament:
        director, organizer = await self.organizer(context)
        await director.snapshot(request.tournament_id, organizer)  # exists, and is this organizer's
        batch_id = await director.advance(request.tournament_id, by_organizer=True)
        if batch_id is not None:
            director.spawn(director.deliver(batch_id))  # the caller follows the progress with GetTournament
        snap = await director.snapshot(request.tournament_id)
        return tournament_message(snap, False, director.clock(), director.state(snap))

    @edge
    async def GetStandings(
        self, request: tournaments_pb2.GetStandingsRequest, context: Context
    ) -> tournaments_pb2.Standings:
        director = await self.director()
        snap = await director.snapshot(request.tournament_id)
        viewer = await self._viewer(director, context, snap, required=True)
        return standings_message(public.seen(snap, director.clock(), viewer))

    async def _viewer(
        self, director: Director, context: Context, snap: store.Snapshot, required: bool
    ) -> public.Viewer:
        """Who asks: the tournament's organizer, one of its players, or (only when not `required`: no key, or
        a key that is neither) the public."""
        key = bearer(context, required=required)
        if not key:
            return public.PUBLIC
        found = await asyncio.to_thread(organizer_by_key, director.engine, key)
        if found is not None:
            if found.id == snap.tournament.organizer_id:
                return public.ORGANIZER
            if required:
                raise NotYours(f"tournament {snap.tournament.id} belongs to another organizer")
            return public.PUBLIC
        player = await asyncio.to_thread(store.player_by_token, director.engine, key)
        if player is not None and player[0] == snap.tournament.id:
            return public.Viewer(player=player[1])
        if required:
            raise Unauthenticated("this needs the organizer's key or a player token of this tournament")
        return public.PUBLIC

    @edge
    async def GetAssignment(
        self, request: tournaments_pb2.GetAssignmentRequest, context: Context
    ) -> tournaments_pb2.Assignment:
        director, tournament_id, name, token = await self._player(request, context)
        return assignment_message(await director.recent_snapshot(tournament_id), name, token)

    @edge_stream
    async def WatchAssignment(
        self, request: tournaments_pb2.GetAssignmentRequest, context: Context
    ) -> AsyncIterator[tournaments_pb2.Assignment]:
        director, tournament_id, name, token = await self._player(request, context)
        stream = feed.pushed(
            director,
            tournament_id,
            lambda snap: assignment_message(snap, name, token),
            lambda a: a.status == "finished",
        )
        async for message in stream:
            yield message

    @edge_stream
    async def WatchTournament(
        self, request: tournaments_pb2.WatchTournamentRequest, context: Context
    ) -> AsyncIterator[tournaments_pb2.TournamentPage]:
        """Public: anyone with the tournament's id follows its page (it carries no token), each result once it
        is as old as the spectator delay (the organizer's key: live; a player's token: their own live)."""
        director = await self.director()
        first = await director.snapshot(request.tournament_id)  # NOT_FOUND before the stream starts
        viewer = await self._viewer(director, context, first, required=False)
        stream = feed.pushed(
            director,
            first.tournament.id,
            lambda snap: page_message(snap, director, viewer),
            _finished,
            lambda snap: public.next_reveal_ms(snap, director.clock(), viewer),
        )
        async for message in stream:
            message.now_unix_ms = director.clock()  # after the comparison: a clock reading is no change
            yield message

    async def _player(
        self, request: tournaments_pb2.GetAssignmentRequest, context: Context
    ) -> tuple[Director, str, str, str]:
        """The caller's tournament, name and token, from their player token (refused as GetAssignment says)."""
        director = await self.director()
        token, digest = presented_token(context)
        player = await asyncio.to_thread(store.player_by_token, director.engine, digest)
        if player is None:
            raise Unauthenticated("that is no player's tournament token")
        tournament_id, name = player
        if request.tournament_id and request.tournament_id != tournament_id:
            raise Unauthenticated(f"that token is no player's of tournament {request.tournament_id}")
        return director, tournament_id, name, token

    @edge_stream
    async def ExportRecords(
        self, request: tournaments_pb2.ExportRecordsRequest, context: Context
    ) -> AsyncIterator[tournaments_pb2.TableRecord]:
        director, organizer = await self.organizer(context)
        if request.tournament_id:
            snap = await director.snapshot(request.tournament_id, organizer)
            listed = [(t.round, t.table, t.attempt, t.match_id) for t in snap.tables]
        else:
            _, planned = await director.owned_batch(organizer, request.batch_id)
            listed = [(0, n, 0, t.match_id) for n, t in enumerate(planned, 1)]
        for start in range(0, len(listed), 200):
            part = listed[start : start + 200]
            found = await pairing.records(director.engine, [m for *_, m in part])  # replayed off the clocks
            for number, table, attempt, match_id in part:
                if match_id in found:
                    status, record_json = found[match_id]
                    yield tournaments_pb2.TableRecord(
                        round=number, table=table, attempt=attempt, match_id=match_id, status=status,
                        record_json=record_json,
                    )


def _finished(page: tournaments_pb2.TournamentPage) -> bool:
    return page.tournament.status == "finished"


def assignment_message(snap: store.Snapshot, name: str, token: str) -> tournaments_pb2.Assignment:
    """The player's assignment; the seat token is their own tournament token (their seats have its hash)."""
    a = reports.assignment(snap, name, token)
    return tournaments_pb2.Assignment(
        tournament_id=snap.tournament.id, player=name, round=a.round, status=a.status, match_id=a.match_id,
        seat=a.seat, seat_token=a.seat_token, players=list(a.players), starts_unix_ms=a.starts_unix_ms, rank=a.rank,
    )


def standings_message(snap: store.Snapshot) -> tournaments_pb2.Standings:
    return tournaments_pb2.Standings(
        tournament_id=snap.tournament.id,
        game=snap.tournament.game,
        after_round=reports.rounds_ended(snap),
        tie_breaks=TIE_BREAKS[snap.tournament.game],
        standings=[
            tournaments_pb2.Standing(
                rank=s.rank, player=s.player, games=s.games, wins=float(s.wins), points=s.points,
                buchholz=float(s.buchholz), placement_points=float(s.placement_points), score=s.score,
            )
            for s in reports.standings(snap)
        ],
    )


def page_message(
    snap: store.Snapshot, director: Director, viewer: public.Viewer = public.PUBLIC
) -> tournaments_pb2.TournamentPage:
    """The page as `viewer` may see it (the public by default): no token in it. `now_unix_ms` is left 0 here
    (it would make every read differ); the stream sets it on what it sends."""
    now = director.clock()
    shown = public.seen(snap, now, viewer)
    state = director.state(snap) if shown is snap else (shown.tournament.status, "")  # "pairing round n" tells
    return tournaments_pb2.TournamentPage(
        tournament=tournament_message(shown, True, now, state),
        standings=standings_message(shown),
        next_round_unix_ms=feed.next_round_unix_ms(shown, now),
    )


def tournament_message(
    snap: store.Snapshot, with_tables: bool, now_unix_ms: int, state: tuple[str, str] | None = None
) -> tournaments_pb2.Tournament:
    """The tournament as callers see it; `state`: its status and detail (Director.state), else the stored status."""
    t = snap.tournament
    status, detail = state or (t.status, "")
    message = tournaments_pb2.Tournament(
        tournament_id=t.id, name=t.name, game=t.game, format=t.format, status=status, detail=detail, rounds=t.rounds,
        current_round=t.current_round, players=list(t.players), voided=t.voided, manual=t.manual,
        starts_unix_ms=t.starts_unix_ms, spectator_delay_s=t.spectator_delay_ms // 1000,
        round_states=[
            tournaments_pb2.Round(
                number=r.number, status=r.status, tables=r.tables, scheduled=r.scheduled, ended=r.ended,
                byes=list(r.byes), starts_unix_ms=r.starts_unix_ms,
            )
            for r in reports.round_summaries(snap, now_unix_ms)
        ],
    )
    if with_tables:
        message.tables.extend(
            tournaments_pb2.TournamentTable(
                round=x.round, table=x.table, attempt=x.attempt, match_id=x.match_id, players=list(x.players),
                status=x.status if x.status != "playing" else "in_progress",
                result_json=json.dumps(x.result) if x.result is not None else "",
            )
            for x in snap.tables
        )
    return message


async def database_engine() -> Engine:
    """The database of TABLEHALL_DATABASE_URL, migrated (NoDatabase: the service runs with `memory`)."""
    from workers.sql.engine import database_url
    from workers.sql.migrate import engine_for

    url = database_url()
    if url == "memory":
        raise NoDatabase("tournaments need a database: this service runs with TABLEHALL_DATABASE_URL=memory")
    engine: Engine = await asyncio.to_thread(engine_for, url)
    return engine
