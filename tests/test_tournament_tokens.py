"""Seat tokens of tournament tables: a player's seat token at each of their tables is their own tournament
token (the seats are created with the hash stored for the player), so the database holds nothing from
which a seat token could be made: every secret in it is a SHA-256 of a token, never the token or a key."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import inspect, select

from gateway.tournaments import schema
from gateway.tournaments.director import seat_hashes
from protos.tablehall.v1 import tournaments_pb2
from tablehall.bots import choose
from tablehall.client import TablehallError
from tablehall.entrant import assignment
from tests.storage_backends import postgres_database
from tests.test_tournament_play import SB_FAST, create, play_all
from tests.tournament_hall import Hall, run_hall
from workers.sql import models as m

PLAYERS = ["ann", "bob", "cid", "dee"]


def sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


async def seated(hall: Hall, created: tournaments_pb2.CreateTournamentResponse) -> list[tournaments_pb2.Assignment]:
    """Every player's assignment once round 1's tables exist (they are created in the background)."""
    while True:
        found = [await assignment(hall.tournaments, created.tournament_id, p.token) for p in created.players]
        if all(f.status == "table" for f in found):
            return found
        await asyncio.sleep(0.02)


def test_the_assigned_seat_token_is_the_players_token_and_the_match_takes_it_as_that_seat(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        created = await create(hall, game="spectacular-bid", players=PLAYERS, format="round-robin",
                               options=SB_FAST, manual=True)  # fmt: skip
        tokens = {p.player: p.token for p in created.players}
        found = await seated(hall, created)
        assert len({f.match_id for f in found}) == 2  # four players: two tables
        for f in found:
            assert f.seat_token == tokens[f.player]  # handed back as presented, nothing derived
            assert f.players[f.seat] == f.player
            _, view = await hall.client.seat(f.match_id, f.seat_token).view()
            assert view["seat"] == f.seat  # the match knows the token as this player's seat
        with hall.engine.connect() as conn:  # the worker's seats hold the player's stored hash
            seats = {(r.match_id, r.seat): bytes(r.token_sha256) for r in conn.execute(select(m.seats))}
        assert seats == {(f.match_id, f.seat): sha256(tokens[f.player]) for f in found}

        # the seat token commands that seat: whoever is to act at each table acts with its assigned token
        for match_id in {f.match_id for f in found}:
            acted = False
            for f in (f for f in found if f.match_id == match_id):
                seat = hall.client.seat(match_id, f.seat_token)
                seq, view = await seat.view()
                action = choose(view, random.Random(1), greedy=True)
                if action is not None:
                    after, _ = await seat.act(action, seat=f.seat)
                    assert after > seq
                    acted = True
            assert acted, f"nobody could act at {match_id}"
            stranger = next(f for f in found if f.match_id != match_id)  # a player of the other table
            with pytest.raises(TablehallError) as caught:
                await hall.client.seat(match_id, stranger.seat_token).view()
            assert caught.value.status is grpc.StatusCode.UNAUTHENTICATED

        # padding around the bearer token is not part of it: the seat token is the token itself
        padded = await hall.tournaments.GetAssignment(
            tournaments_pb2.GetAssignmentRequest(tournament_id=created.tournament_id),
            metadata=(("authorization", f"Bearer  {tokens['ann']} "),),
        )
        assert padded.seat_token == tokens["ann"]

    run_hall(tmp_path, body)


def values(value: Any) -> Iterator[Any]:
    """Every scalar inside a column value (JSON columns hold lists and objects)."""
    if isinstance(value, str) and value.startswith(("[", "{")):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from values(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from values(v)
    elif isinstance(value, memoryview):
        yield bytes(value)
    else:
        yield value


def secret_forms(token: str) -> list[bytes]:
    """What a stored token (or the 24 random bytes behind it) could look like in a column."""
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    return [token.encode(), raw, raw.hex().encode()]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_no_column_holds_a_value_a_seat_token_follows_from(tmp_path: Path, backend: str) -> None:
    """A whole tournament played, then every row of every table read: no token, key or secret anywhere;
    every binary value (and every hex seat hash) is the SHA-256 of a token that was handed out."""

    async def body(hall: Hall) -> None:
        created = await create(hall, game="spectacular-bid", players=PLAYERS, format="round-robin", options=SB_FAST)
        finals = await play_all(hall, created)
        assert {f.status for f in finals} == {"finished"}
        tokens = [p.token for p in created.players]
        hashes = {sha256(t) for t in [*tokens, hall.key]}
        players_columns = {c["name"] for c in inspect(hall.engine).get_columns("tournament_players")}
        assert players_columns == {"tournament_id", "seed", "name", "token_sha256"}  # migration: no seat_key

        forms = [f for t in tokens for f in secret_forms(t)] + [hall.key.encode()]
        digests = 0
        with hall.engine.connect() as conn:
            seat_hashes_hex = {
                h for (hs,) in conn.execute(select(schema.batch_tables.c.token_sha256)) for h in values(hs)
            }
            for table in m.metadata.sorted_tables:
                for row in conn.execute(select(table)):
                    for column, cell in zip(table.columns, row, strict=True):
                        for v in values(cell):
                            data = v if isinstance(v, bytes) else str(v).encode()
                            where = f"{table.name}.{column.name}"
                            assert not any(f in data for f in forms), f"{where} holds a token"
                            if isinstance(v, bytes) and table.name != "snapshots":
                                assert v in hashes, f"{where} holds bytes that are no token's hash"
                                digests += 1
        assert digests > 0
        # the seats of tournament tables are hashed as the players' tokens, nothing else
        assert seat_hashes_hex == {sha256(t).hex() for t in tokens}

    if backend == "postgresql":
        with postgres_database() as url:
            run_hall(tmp_path, body, timeout=180, url=url)
    else:
        run_hall(tmp_path, body, timeout=180)


def test_a_player_planned_twice_at_one_table_is_refused() -> None:
    stored = {p: sha256(p) for p in PLAYERS}
    assert seat_hashes("t", ["bob", "ann"], stored) == (stored["bob"], stored["ann"])
    with pytest.raises(ValueError, match="ann planned twice at one table"):
        seat_hashes("t", ["ann", "bob", "ann"], stored)
