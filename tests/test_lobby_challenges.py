"""Open challenges and friend links over a real gateway and database: listed or unlisted, taken by
others only, the table made when full (a 501♠ challenge waits for its third player), seats pushed; expired
after their lifetime (injected clock): not listed, not taken, swept by the leader's beat."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from sqlalchemy import select

from gateway.lobby import schema
from gateway.lobby.hall import CHALLENGE_RANGE_S, LobbySettings
from tablehall.client import TablehallError
from tests.lobby_support import SETTINGS, Lobby, run_lobby


def test_a_listed_challenge_is_taken_and_both_are_seated(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        made = await ana.open_challenge("spectacular-bid", {"start_points": 50})
        assert len(made.challenge_id) == 16 and made.host == "Ana" and made.options.start_points == 50
        (listed,) = await bia.challenges()
        assert listed.challenge_id == made.challenge_id
        with pytest.raises(TablehallError) as own:
            await ana.take(made.challenge_id)
        assert (own.value.status, own.value.code) == (grpc.StatusCode.FAILED_PRECONDITION, "own_challenge")
        seat = await bia.take(made.challenge_id)
        assert seat.seat == 1 and seat.match_id and list(seat.players) == ["Ana", "Bia"]
        host_seat = await asyncio.wait_for(ana.seated(made.challenge_id), 10)
        assert (host_seat.match_id, host_seat.seat) == (seat.match_id, 0)
        _, view = await lobby.client.seat(seat.match_id, lobby.players["Bia"].key).view()
        assert view["seat"] == 1
        assert await bia.challenges() == []
        with pytest.raises(TablehallError) as gone:
            await (await lobby.player("Cid")).take(made.challenge_id)
        assert gone.value.status == grpc.StatusCode.NOT_FOUND

    run_lobby(tmp_path, body)


def test_an_unlisted_challenge_is_a_friend_link_and_501_waits_for_three(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia, cid = await lobby.player("Ana"), await lobby.player("Bia"), await lobby.player("Cid")
        link = await ana.open_challenge("501", {"start_score": 100}, unlisted=True)
        assert link.seats == 3 and await cid.challenges() == []
        first = await bia.take(link.challenge_id)
        assert (first.seat, first.match_id) == (1, "")
        with pytest.raises(TablehallError) as twice:
            await bia.take(link.challenge_id)
        assert twice.value.code == "own_challenge"
        last = await cid.take(link.challenge_id)
        assert last.seat == 2 and last.match_id and list(last.players) == ["Ana", "Bia", "Cid"]
        assert lobby.count(schema.lobby_tables) == 1
        with pytest.raises(TablehallError) as bad:
            await bia.take("not-a-link" * 30)
        assert bad.value.status == grpc.StatusCode.INVALID_ARGUMENT and "not-a-link" not in str(bad.value)[60:]
        with pytest.raises(TablehallError) as seats:
            await ana.open_challenge("spectacular-bid", seats=3)
        assert seats.value.status == grpc.StatusCode.INVALID_ARGUMENT

    run_lobby(tmp_path, body)


def test_only_its_host_cancels_a_challenge_and_then_nobody_takes_it(tmp_path: Path) -> None:
    async def body(lobby: Lobby) -> None:
        ana, bia = await lobby.player("Ana"), await lobby.player("Bia")
        made = await ana.open_challenge("spectacular-bid")
        with pytest.raises(TablehallError) as not_hers:
            await bia.cancel(made.challenge_id)
        assert not_hers.value.status == grpc.StatusCode.PERMISSION_DENIED
        await ana.cancel(made.challenge_id)
        assert await bia.challenges() == []
        for call in (bia.take(made.challenge_id), ana.cancel(made.challenge_id)):
            with pytest.raises(TablehallError) as gone:
                await call
            assert gone.value.status == grpc.StatusCode.NOT_FOUND
        assert lobby.count(schema.lobby_tables) == 0

    run_lobby(tmp_path, body)


def test_without_a_database_the_lobby_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from tablehall.lobby_client import LobbyClient, register
    from tests.over_grpc import Service, serve

    monkeypatch.setenv("TABLEHALL_DATABASE_URL", "memory")

    async def body(service: Service) -> None:
        for call in (register(service.client, "Ana"), LobbyClient(service.client, "thp_x").join("501")):
            with pytest.raises(TablehallError) as refused:
                await call
            assert (refused.value.status, refused.value.code) == (grpc.StatusCode.FAILED_PRECONDITION, "no_database")

    serve(body)


def test_a_challenge_expires_after_its_lifetime_and_the_beat_sweeps_it(tmp_path: Path) -> None:
    lifetime_ms = SETTINGS.challenge_ms

    async def body(lobby: Lobby) -> None:
        ana, bia, cid = await lobby.player("Ana"), await lobby.player("Bia"), await lobby.player("Cid")
        opened_at = lobby.clock.now
        listed = await ana.open_challenge("spectacular-bid")
        link = await ana.open_challenge("501", {"start_score": 100}, unlisted=True)
        assert listed.expires_unix_ms == link.expires_unix_ms == opened_at + lifetime_ms
        await bia.take(link.challenge_id)  # one of the 501 table's two seats taken: it still waits for Cid

        lobby.clock.now = opened_at + lifetime_ms - 1
        shown = await bia.challenge_list()
        assert [c.challenge_id for c in shown.challenges] == [listed.challenge_id]
        assert shown.challenges[0].expires_unix_ms - shown.now_unix_ms == 1, "the time left, on the service's clock"

        lobby.clock.now = opened_at + lifetime_ms
        assert await bia.challenges() == [], "an expired challenge is not listed"
        for who, challenge_id in ((bia, listed.challenge_id), (cid, link.challenge_id)):  # the list, a friend link
            with pytest.raises(TablehallError) as late:
                await who.take(challenge_id)
            assert (late.value.status, late.value.code) == (grpc.StatusCode.FAILED_PRECONDITION, "challenge_expired")
        assert lobby.count(schema.lobby_tables) == 0

        await lobby.hall.tick()  # the leader's beat sweeps them
        with lobby.engine.connect() as conn:
            states = dict(conn.execute(select(schema.lobby_challenges.c.id, schema.lobby_challenges.c.state)).all())
        assert states == {listed.challenge_id: "expired", link.challenge_id: "expired"}
        with pytest.raises(TablehallError) as swept:
            await cid.take(link.challenge_id)  # the friend link after the sweep: still said to have expired
        assert swept.value.code == "challenge_expired" and "expired" in str(swept.value)
        with pytest.raises(TablehallError) as gone:
            await ana.cancel(listed.challenge_id)
        assert gone.value.status == grpc.StatusCode.NOT_FOUND
        fresh = await ana.open_challenge("spectacular-bid")  # a new one lives its own lifetime
        assert (await bia.take(fresh.challenge_id)).match_id

    run_lobby(tmp_path, body)


def test_a_challenge_lifetime_setting_is_kept_within_its_range(monkeypatch: pytest.MonkeyPatch) -> None:
    low, high = CHALLENGE_RANGE_S
    for given, kept in (("5", low), ("90", 90.0), ("1e9", high)):
        monkeypatch.setenv("TABLEHALL_LOBBY_CHALLENGE_S", given)
        assert LobbySettings.from_env().challenge_ms == int(kept * 1000)
    monkeypatch.delenv("TABLEHALL_LOBBY_CHALLENGE_S")
    assert LobbySettings.from_env().challenge_ms == 600_000
