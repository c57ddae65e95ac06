"""Delayed spectators through a real gateway (gRPC, in-process worker, SQLite): a tournament with a 5 s
spectator delay, its table played move by move on an injected clock. Every spectator message (Watch) and
view (GetView) is checked against the clock reading at which the change it shows was made: never younger
than the delay, the match's end included; the seats see every change at once. Also the pure buffer alone."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from gateway.spectators import DelayedTable
from protos.tablehall.v1 import matches_pb2, tournaments_pb2
from tablehall.client import TablehallError, action_message
from tests.tournament_hall import Hall, run_hall
from workers.errors import SpectatorDelay

DELAY_MS = 5_000
STEP_MS = 6_000
"""The clock between two moves: a change shown at once would be seen before the next move."""


class Clock:
    def __init__(self) -> None:
        self.now = time.time_ns() // 1_000_000

    def __call__(self) -> int:
        return self.now


async def assignment_of(hall: Hall, token: str) -> tournaments_pb2.Assignment:
    """The player's table, pushed by WatchAssignment (the first messages may say `waiting`)."""
    stream = hall.tournaments.WatchAssignment(tournaments_pb2.GetAssignmentRequest(), metadata=hall.auth(token))
    async for message in stream:
        assert isinstance(message, tournaments_pb2.Assignment)
        if message.status == "table":
            stream.cancel()
            return message
    raise AssertionError("the assignment stream ended without a table")


def act_request(match_id: str, action: dict[str, Any]) -> matches_pb2.ActRequest:
    return matches_pb2.ActRequest(match_id=match_id, action=action_message(action))


def test_no_spectator_message_is_younger_than_the_delay(tmp_path: Path) -> None:
    clock = Clock()

    async def body(hall: Hall) -> None:
        spectators = hall.spectators
        assert spectators is not None
        created = await hall.call("CreateTournament", tournaments_pb2.CreateTournamentRequest(
            name="Delayed cup", game="spectacular-bid", players=["Ana", "Bia"], format="round-robin",
            options=matches_pb2.Options(start_points=20, bank_s=600, delay_s=0), round_pause_s=0,
            spectator_delay_s=DELAY_MS // 1000,
        ))  # fmt: skip
        tokens = [p.token for p in created.players]
        seats = [await assignment_of(hall, t) for t in tokens]
        match_id = seats[0].match_id
        assert seats[1].match_id == match_id
        by_seat = {a.seat: tokens[i] for i, a in enumerate(seats)}
        stub = hall.client.stub

        made: dict[int, int] = {}
        """Each change's seq and the clock reading when it was made (the clock stands still meanwhile)."""
        seat_view = await stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=hall.auth(by_seat[0]))
        for seq in range(1, seat_view.seq + 1):
            made[seq] = clock.now  # dealt at creation
        seen: list[tuple[int, matches_pb2.Update]] = []

        async def spectate() -> None:
            async for update in stub.Watch(matches_pb2.WatchRequest(match_id=match_id)):
                seen.append((clock.now, update))

        played: list[tuple[int, matches_pb2.Update]] = []

        async def spectate_on_play() -> None:
            """A Play session without a token: a spectator too, delayed the same."""
            call = stub.Play()
            await call.write(matches_pb2.PlayRequest(match_id=match_id))
            async for event in call:
                if event.HasField("update"):
                    played.append((clock.now, event.update))
                    if event.update.over:
                        await call.done_writing()

        watcher = asyncio.create_task(spectate())
        player = asyncio.create_task(spectate_on_play())

        def allowed(now: int) -> int:
            """The newest seq a spectator may see at `now`."""
            return max((s for s, at in made.items() if at <= now - DELAY_MS), default=0)

        async def spectator_view() -> matches_pb2.Update | None:
            try:
                view: matches_pb2.Update = await stub.GetView(matches_pb2.GetViewRequest(match_id=match_id))
                return view
            except grpc.aio.AioRpcError as error:
                assert TablehallError.of(error).code == "spectator_delay"
                return None

        async def tick(to: int) -> None:
            clock.now = to
            spectators.retime()
            view = await spectator_view()
            if view is not None:
                assert view.seq <= allowed(clock.now), "GetView showed a change younger than the delay"
                assert "hand" not in json.loads(view.view_json) or json.loads(view.view_json)["hand"] is None

        for _ in range(8):
            for token in by_seat.values():
                view = await stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=hall.auth(token))
                legal = [a for a in json.loads(view.view_json)["legal"] if a["do"] != "resign"]
                if legal or view.over:
                    break
            if view.over or not legal:  # the match ended (points) or waits for a timer: no more moves
                break
            await tick(clock.now + STEP_MS)
            seat_watch = stub.Watch(matches_pb2.WatchRequest(match_id=match_id, after_seq=view.seq),
                                    metadata=hall.auth(by_seat[0]))  # fmt: skip
            reply = await stub.Act(act_request(match_id, legal[0]), metadata=hall.auth(token))
            for seq in range(view.seq + 1, reply.seq + 1):
                made[seq] = clock.now  # this move (and any change a timer made since the view, no later)
            first = await seat_watch.read()
            assert view.seq < first.seq <= reply.seq, "the seat sees the change at once (the clock stands still)"
            seat_watch.cancel()
        await tick(clock.now + STEP_MS)
        last = await stub.GetView(matches_pb2.GetViewRequest(match_id=match_id), metadata=hall.auth(by_seat[0]))
        final_seq = last.seq
        if not last.over:
            resign = await stub.Act(act_request(match_id, {"do": "resign"}), metadata=hall.auth(by_seat[0]))
            final_seq = resign.seq
        for seq in range(max(made) + 1, final_seq + 1):
            made[seq] = clock.now
        ended_at = made[final_seq]
        for at in range(ended_at - 4 * STEP_MS, ended_at + 2 * DELAY_MS, 500):
            await tick(max(at, clock.now))
            if clock.now < ended_at + DELAY_MS:
                assert not any(u.over for _, u in seen + played), "the end was shown before it was as old as the delay"
        await asyncio.wait_for(asyncio.gather(watcher, player), 10)
        shown = await spectator_view()
        assert shown is not None and shown.over and shown.seq == final_seq
        assert [u.seq for _, u in seen] == sorted(made), "the spectator saw every change, in order"
        assert [u.seq for _, u in played] == sorted(made)
        for received, update in seen + played:
            assert update.seq <= allowed(received), f"seq {update.seq} shown before it was {DELAY_MS} ms old"
            assert received - made[update.seq] >= DELAY_MS

    run_hall(tmp_path, body, clock=clock)


def test_a_live_tournament_table_is_not_held(tmp_path: Path) -> None:
    clock = Clock()

    async def body(hall: Hall) -> None:
        created = await hall.call("CreateTournament", tournaments_pb2.CreateTournamentRequest(
            name="Live cup", game="spectacular-bid", players=["Ana", "Bia"], format="round-robin",
            options=matches_pb2.Options(start_points=20), round_pause_s=0,
        ))  # fmt: skip
        table = await assignment_of(hall, created.players[0].token)
        stub = hall.client.stub
        view = await stub.GetView(matches_pb2.GetViewRequest(match_id=table.match_id))  # no wait, no refusal
        assert view.seq >= 1 and not view.HasField("seat")
        assert hall.spectators is not None and table.match_id not in hall.spectators.tables

    run_hall(tmp_path, body, clock=clock)


def test_a_spectator_delay_over_an_hour_is_refused(tmp_path: Path) -> None:
    async def body(hall: Hall) -> None:
        request = tournaments_pb2.CreateTournamentRequest(
            name="Bad", game="spectacular-bid", players=["Ana", "Bia"], format="round-robin", spectator_delay_s=3601,
        )
        with pytest.raises(TablehallError) as refused:
            await hall.call("CreateTournament", request)
        assert refused.value.code == "batch_rejected" and "spectator delay" in str(refused.value)
        assert hall.batches() == 0

    run_hall(tmp_path, body)


def test_the_buffer_shows_each_update_once_it_is_old_enough() -> None:
    """The buffer alone: updates arrive at injected clock readings; each is shown from delay later on."""
    clock = Clock()
    start = clock.now
    arrivals = {1: start, 2: start + 400, 3: start + 800}

    async def source() -> AsyncIterator[matches_pb2.Update]:
        for seq, at in arrivals.items():
            clock.now = at
            yield matches_pb2.Update(seq=seq, over=seq == 3)

    async def main() -> None:
        table = DelayedTable(1000, clock, source)
        await table.task  # the follower read the whole source
        assert [a.at_ms for a in table.arrived] == list(arrivals.values())
        for now in range(start, start + 2000, 50):
            shown = [a.update.seq for a in table.shown(now)]
            assert shown == [s for s, at in arrivals.items() if now - at >= 1000]
        clock.now = start + 999
        with pytest.raises(SpectatorDelay):
            table.view()
        clock.now = start + 1799
        assert table.view().seq == 2
        clock.now = start + 1800
        assert table.view().seq == 3
        assert [u.seq async for u in table.updates(1)] == [2, 3]  # resumes after a seq; ends after `over`

    asyncio.run(main())


@pytest.mark.parametrize("given", ["3601", "-1", "soon"])
def test_the_command_line_refuses_a_bad_spectator_delay_in_one_line(tmp_path: Path, given: str) -> None:
    (tmp_path / "players.csv").write_text("Ana\nBia\n")
    command = [sys.executable, "-m", "tablehall.cli", "tournament", "create", "--name", "x", "--game",
               "spectacular-bid", "--format", "round-robin", "--players", str(tmp_path / "players.csv"),
               f"--spectator-delay={given}"]  # fmt: skip
    ran = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "--spectator-delay" in ran.stderr and "Traceback" not in ran.stderr
