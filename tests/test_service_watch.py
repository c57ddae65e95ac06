"""Watch streams over real gRPC: resuming after a dropped stream misses nothing and repeats nothing."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator

import grpc

from protos.tablehall.v1 import matches_pb2
from tests.over_grpc import Service, drive, serve
from workers.actor import MatchActor


async def take(stream: AsyncIterator[matches_pb2.Update], n: int) -> list[matches_pb2.Update]:
    """The next `n` updates (fewer if the stream ends), then the stream is closed: a client that stops
    reading must hang up, or the server's unread updates hold the connection's flow-control window."""
    out: list[matches_pb2.Update] = []
    try:
        async for update in stream:
            out.append(update)
            if len(out) == n:
                break
    finally:
        if isinstance(stream, grpc.aio.Call):
            stream.cancel()
        else:
            await stream.aclose()  # type: ignore[attr-defined]
    return out


async def released(actor: MatchActor) -> None:
    while actor.watchers:
        await asyncio.sleep(0)


def test_a_dropped_stream_resumes_without_gap_or_repeat() -> None:
    async def body(service: Service) -> None:
        created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"])
        seats = [service.client.seat(created.match_id, token) for token in created.tokens]
        rng = random.Random(7)
        actor = service.actor(created.match_id)

        # seat 0 reads a few updates while the match is being played, then its stream is dropped
        call = seats[0].stub.Watch(
            matches_pb2.WatchRequest(match_id=created.match_id, after_seq=0), metadata=seats[0].metadata
        )
        playing = asyncio.create_task(drive(seats, rng, until=lambda seq: seq >= 6, modest=True))
        first = await take(call, 5)  # and hang up
        await playing
        assert [u.seq for u in first] == [1, 2, 3, 4, 5]
        # the server lets the dropped watcher go (its cancellation runs on this loop: yield until it has)
        await asyncio.wait_for(released(actor), 2)

        # play on without the watcher, well past where it stopped (no round ends the match that fast)
        dropped_at = first[-1].seq
        await drive(seats, rng, until=lambda seq: seq >= dropped_at + 20, modest=True)
        assert actor.seq >= dropped_at + 10 and not actor.match.over

        # reconnect after the last seq seen; play on while it streams, then a resignation ends the match
        resumed = asyncio.create_task(take(seats[0].updates(after_seq=dropped_at), 10_000))
        gone = actor.seq
        await drive(seats, rng, until=lambda seq: seq >= gone + 20, modest=True)
        await seats[1].act({"do": "resign"})
        rest = await resumed
        assert rest and rest[-1].over and json.loads(rest[-1].view_json)["reason"] == "resign"

        seqs = [u.seq for u in first + rest]
        assert seqs == list(range(1, actor.seq + 1)), "every seq once, in order"
        # and the views are the ones a fresh, uninterrupted stream gives for the finished match
        whole = await take(seats[0].updates(after_seq=0), 10_000)
        for u in first + rest:  # the service's clock reading (match_time_ms) moves with time, not with the match
            u.ClearField("match_time_ms")
        assert first + rest == whole
        # the spectator's resumed stream obeys the same rule
        spectator = service.client.spectator(created.match_id)
        half = actor.seq // 2
        head = await take(spectator.updates(after_seq=0), half)
        tail = await take(spectator.updates(after_seq=head[-1].seq), 10_000)
        assert [u.seq for u in head + tail] == list(range(1, actor.seq + 1))
        assert all(u.view_json.count('"hand":null') == 1 for u in head + tail)

    serve(body)


def test_a_watcher_gets_each_update_once_as_it_happens() -> None:
    async def body(service: Service) -> None:
        created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"])
        seats = [service.client.seat(created.match_id, token) for token in created.tokens]
        stream = seats[1].updates(after_seq=0)
        first = await anext(stream)
        assert first.seq == 1 and not first.over
        # each act is followed by exactly the next seq on the other seat's live stream
        for expected, seat in ((2, seats[0]), (3, seats[1])):
            seq, _ = await seat.act({"do": "ready"})
            update = await asyncio.wait_for(anext(stream), 5)
            assert update.seq == seq == expected
        view_seq, _ = await seats[1].view()
        assert view_seq == 3
        await stream.aclose()  # type: ignore[attr-defined]

    serve(body)
