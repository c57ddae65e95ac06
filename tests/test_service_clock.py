"""The match clock over real gRPC: the server's own timer flags a player who does nothing, and a command
arriving at or after the deadline is refused."""

from __future__ import annotations

import json
import types
from typing import Any

import grpc
import pytest

import gateway.service
from tablehall.client import TablehallError
from tests.over_grpc import Service, first_to_move, serve
from workers.games.records import replay

FAILED = grpc.StatusCode.FAILED_PRECONDITION
SHORT = {"bank_s": 10, "delay_s": 2, "ready_timeout_s": 5}
"""The shortest clocks the options allow (docs/RULES.md): the test moves an injected wall clock through them."""
T0 = 1_700_000_000_000


class Wall:
    """The one wall clock (unix ms) of the gateway's arrival stamps and the worker's timers; the test moves it."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def time_ns(self) -> int:
        return self.now * 1_000_000


def test_a_player_who_does_nothing_loses_on_time_by_the_servers_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = Wall(T0)
    monkeypatch.setattr(gateway.service, "time", wall)

    async def body(service: Service) -> None:
        created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"], SHORT)
        seats = [service.client.seat(created.match_id, token) for token in created.tokens]
        actor = service.actor(created.match_id)
        stream = aiter(service.client.spectator(created.match_id).updates())

        async def at(ms: int) -> tuple[dict[str, Any], bool]:
            """Move the wall clock to match time `ms`; the server's own timer publishes what is due then."""
            wall.now = T0 + ms
            actor.arm()  # a timer armed for the old reading is re-armed for the new one: due now
            update = await anext(stream)
            return json.loads(update.view_json), update.over

        # nobody acts at all: the ready timeout starts the clocks, then the bank of the seat to lead runs out
        update = await anext(stream)
        dealt, over = json.loads(update.view_json), update.over
        assert dealt["phase"] == "ready" and dealt["deadline_ms"] == 5_000 and not over
        flagged = dealt["leader"]  # the first round's lead is forced (SB-3): its holder is to move
        assert flagged in (0, 1)
        running, over = await at(5_000)
        assert running["phase"] == "lead" and running["turn"] == running["clock_running"] == flagged and not over
        assert running["deadline_ms"] == 5_000 + 2_000 + 10_000
        final, over = await at(17_000)
        assert over and final["status"] == "finished"
        assert (final["winner"], final["reason"]) == (1 - flagged, "time")
        assert final["banks_ms"][flagged] == 0 and final["banks_ms"][1 - flagged] == 10_000
        assert await anext(stream, None) is None, "the stream ends after the final update"
        record = await service.client.record(created.match_id)
        assert record["events"] == [], "nobody acted"
        assert record["end_t"] == 17.0
        outcome = replay(record).to_json()
        assert (outcome["winner"], outcome["reason"]) == (1 - flagged, "time")
        # a command after the deadline is refused, and changes nothing
        _, legal = await seats[flagged].view()
        before = actor.seq
        with pytest.raises(TablehallError) as caught:
            await seats[flagged].act({"do": "resign"})
        assert caught.value.status == FAILED
        assert actor.seq == before
        assert legal["legal"] == []

    serve(body, timeout=10, clock=wall)


@pytest.fixture
def arrival(monkeypatch: pytest.MonkeyPatch) -> dict[str, int | None]:
    """Lets a test pin the arrival time the gateway stamps on commands (unix ms); None: the real time."""
    pinned: dict[str, int | None] = {"unix_ms": None}
    real = gateway.service.time  # type: ignore[attr-defined]

    def time_ns() -> int:
        ms = pinned["unix_ms"]
        return real.time_ns() if ms is None else ms * 1_000_000

    monkeypatch.setattr(gateway.service, "time", types.SimpleNamespace(time_ns=time_ns))
    return pinned


def test_a_command_arriving_at_the_deadline_is_refused(arrival: dict[str, Any]) -> None:
    """SB-10: arrival is stamped at the gateway; a command stamped at the deadline instant is too late, one
    stamped a millisecond before it is in time. A long bank keeps the server's timer out of the way."""

    async def body(service: Service) -> None:
        created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"], {"bank_s": 60, "delay_s": 5})
        seats = [service.client.seat(created.match_id, token) for token in created.tokens]
        for seat in seats:
            await seat.act({"do": "ready"})
        mover, view = await first_to_move(seats)
        actor = service.actor(created.match_id)
        deadline = actor.entry.created_unix_ms + view["deadline_ms"]
        assert view["deadline_ms"] >= 65_000
        before = (actor.seq, await seats[mover].view())

        arrival["unix_ms"] = deadline
        with pytest.raises(TablehallError) as caught:
            await seats[mover].act(view["legal"][0])
        assert caught.value.status == FAILED
        assert (actor.seq, await seats[mover].view()) == before, "the late command changed nothing"
        assert not actor.match.over, "the flag is the server timer's to publish, not a refused command's"

        arrival["unix_ms"] = deadline - 1
        seq, after = await seats[mover].act(view["legal"][0])
        assert seq == before[0] + 1 and after["turn"] != mover and after["winner"] is None

    serve(body)
