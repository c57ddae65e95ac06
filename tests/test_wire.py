"""Messages put together from serialized parts (workers/wire.py) read as exactly what protobuf builds, field
for field, for every update of whole matches of both games, in every form, for every seat and a spectator
(a typed view's parts keep their own order: a parser takes fields in any order); a Play event's framing is
protobuf's own bytes; a feed item of a worker that sends no seq is read from its update."""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway.links import WatchFeed
from protos.tablehall.v1 import host_pb2, matches_pb2
from workers.actor import Hosting, MatchActor
from workers.bots.policy import choose
from workers.games.catalog import games
from workers.games.engine import Seat
from workers.published import FIELDS, Published
from workers.storage import MatchEntry, MemoryStorage
from workers.wire import PLAY_RESULT, Posted, field, play_result, play_update, tag, varint

FORMS = (matches_pb2.VIEW_FORMAT_TYPED, matches_pb2.VIEW_FORMAT_JSON, matches_pb2.VIEW_FORMAT_BOTH)


@given(st.integers(min_value=1, max_value=2**64 - 1))  # 0 is the default: protobuf writes nothing
def test_a_varint_is_protobufs(value: int) -> None:
    key = tag(2)[0] & ~0x07  # the key of field 2 as a varint field: number << 3, wire type 0
    assert bytes([key]) + varint(value) == matches_pb2.Update(seq=value).SerializeToString()


@given(st.binary(max_size=40_000), st.integers(min_value=1, max_value=2**29 - 1))
def test_a_length_delimited_field_is_protobufs(payload: bytes, ref: int) -> None:
    result = matches_pb2.CommandResult(ref=ref, seq=ref)
    assert field(PLAY_RESULT, result.SerializeToString()) == matches_pb2.PlayEvent(result=result).SerializeToString()
    update = matches_pb2.Update(match_id=payload.hex()[:64], view_json=payload.decode("latin-1"))
    wire = play_update(Posted.of(update), result)
    assert wire == matches_pb2.PlayEvent(update=update, answered=result).SerializeToString()
    assert play_result(result) == matches_pb2.PlayEvent(result=result).SerializeToString()


def _reference(actor: Published, seat: Seat | None, seq: int, views: int) -> matches_pb2.Update:
    """The Update as protobuf builds it from its fields (what `posted` must equal, byte for byte)."""
    snapshot = actor.at(seq)
    update = matches_pb2.Update(match_id=actor.match_id, seq=seq, seat=seat, over=snapshot.over)
    for deal, commitment in enumerate(actor.commitments[: len(snapshot.deals)]):
        update.commitments.add(deal=deal, sha256=commitment.sha256)
    shown = actor.shown(seat, seq)
    if views != matches_pb2.VIEW_FORMAT_JSON:
        getattr(update, FIELDS[actor.game.name]).CopyFrom(shown.typed())
    if views != matches_pb2.VIEW_FORMAT_TYPED:
        update.view_json = shown.json()
    reading = actor._reading(seq)
    if reading:
        update.match_time_ms = reading
    return update


def test_every_update_of_whole_matches_reads_as_protobuf_builds_it() -> None:
    async def body() -> None:
        for name, game in games().items():
            rng = random.Random(7)
            players = tuple(f"P{i}" for i in range(game.min_seats))
            digests = tuple(hashlib.sha256(bytes([i + 1]) * 32).digest() for i in range(len(players)))
            entry = MatchEntry("00000000000000ab", name, players, {}, digests, 0, 0, 0)
            hosting = Hosting(clock=lambda: 1_000, tolerance_ms=10**9)  # one clock reading throughout
            actor = await MatchActor.create(entry, game, MemoryStorage(), 0, hosting)
            while not actor.match.over:
                for seat in [*map(Seat, range(len(players))), None]:
                    for views in FORMS:
                        posted = actor.posted(seat, actor.seq, views)
                        assert posted.seq == actor.seq
                        assert posted.update() == _reference(actor, seat, actor.seq, views), (name, seat, views)
                moves = [(s, _move(actor, s, rng)) for s in map(Seat, range(len(players)))]
                mover, move = next((s, m) for s, m in moves if m is not None)
                await actor.command(digests[mover], None, move, 0)
            assert actor.match.over
            actor.close()

    asyncio.run(body())


def _move(actor: MatchActor, seat: Seat, rng: random.Random) -> dict[str, Any] | None:
    return choose(actor.game.view(actor.match.state, seat).to_json(), rng, greedy=False)


def test_a_feed_item_of_a_worker_that_sends_no_seq_is_read_from_its_update() -> None:
    update = matches_pb2.Update(match_id="00000000000000ab", seq=7, seat=1)
    old = host_pb2.FeedBatch(items=[host_pb2.FeedItem(id=3, update=update)]).SerializeToString()
    new = host_pb2.FeedBatch(items=[host_pb2.FeedItem(id=3, update=update, seq=7)]).SerializeToString()
    for sent in (old, new):
        feed = object.__new__(WatchFeed)  # its reading alone, without a stream
        sink = _Sink()
        feed.watching = {3: sink}
        feed._deliver(host_pb2.FeedBatchWire.FromString(sent))
        assert sink.got == [Posted(7, update.SerializeToString())]


class _Sink:
    def __init__(self) -> None:
        self.got: list[Posted] = []

    def put(self, posted: Posted) -> None:
        self.got.append(posted)

    def end(self, error: Exception | None) -> None:
        raise AssertionError("not ended")
