"""The one ended-match reader (workers/sql/ended.py), on SQLite and PostgreSQL: matches played through a
real host and its log, read back as GetRecord gives their records, with their outcomes and placements;
unfinished matches are left out; a match with a snapshot reads the same as its whole log."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from protos.tablehall.v1 import host_pb2
from tests.test_ratings_db import F501_FAST, SB_FAST, create, hosted, play_out, run, token, url  # noqa: F401
from workers.actor import SNAPSHOT_EVERY, unix_ms
from workers.games.catalog import game_named
from workers.host import MatchHost
from workers.replay_log import fresh, step
from workers.sql import ended, reads
from workers.sql import models as m
from workers.sql.migrate import engine_for
from workers.sql.models import rows
from workers.storage import Stored


def player_ids(conn: Any, match_id: str) -> tuple[int, ...]:
    s = m.seats
    query = select(s.c.player_id).where(s.c.match_id == match_id).order_by(s.c.seat)
    return tuple(int(p) for (p,) in rows(conn, query))


def test_ended_matches_read_as_getrecord_gives_them(url: str) -> None:  # noqa: F811
    async def body(host: MatchHost, finished: list[str]) -> None:
        sb = await create(host, "spectacular-bid", ["ann", "bob"], SB_FAST)
        f501 = await create(host, "501", ["ann", "bob", "cid", "dee"], F501_FAST)
        voided = await create(host, "501", ["eve", "fay", "gus"], F501_FAST)
        playing = await create(host, "spectacular-bid", ["hal", "ivy"], SB_FAST)
        for match_id, seed in ((sb, 1), (f501, 2)):
            await play_out(host, match_id, seed)
        await host.actors[voided].void("worker_down", host.actors[voided].match.now)
        await host.actors[playing].command(token(playing, 0), None, {"do": "ready"}, unix_ms())
        games = [sb, f501, voided, playing]
        records = {}
        for i in (sb, f501, voided):  # what GetRecord answers
            records[i] = json.loads((await host.record(host_pb2.HostRecordRequest(match_id=i))).record_json)
        engine = engine_for(url)
        with engine.connect() as conn:
            found = {e.match_id: e for e in ended.ended(conn, [*games, "no-such-match"])}
            assert ended.statuses(conn, games) == dict.fromkeys([sb, f501], "finished") | {
                voided: "voided", playing: "in_progress"}  # fmt: skip
            assert set(found) == {sb, f501, voided}
            for match_id, read in found.items():
                actor = host.actors.get(match_id) or host.ended[match_id]
                assert read.record() == records[match_id]
                assert read.outcome() == actor.match.outcome()
                assert read.placements() == actor.game.placements(actor.match.state)
                assert read.player_ids == player_ids(conn, match_id)
            assert found[voided].status == "voided" and found[voided].placements() is None
            assert [p.place for p in found[sb].placements() or ()] in ([1, 2], [2, 1])
            assert len(found[f501].placements() or ()) == 4

    run(hosted(url, body))


def test_a_match_with_a_snapshot_reads_as_its_whole_log(url: str) -> None:  # noqa: F811
    async def body(host: MatchHost, finished: list[str]) -> None:
        match_id = await create(host, "501", ["ann", "bob", "cid"], {"start_score": 300})
        await play_out(host, match_id, 5)
        engine = engine_for(url)
        with engine.connect() as conn:
            (stored,) = reads.stored(conn, reads.Selection.ONE, match_id)
            assert stored.snapshot is not None and stored.snapshot.seq >= SNAPSHOT_EVERY
            whole = Stored(stored.entry, None, tuple(reads.log(conn, match_id)), stored.progress)
            (read,) = ended.ended(conn, [match_id])
        game = game_named(whole.entry.game)
        assert game is not None
        position = fresh(game, whole.entry)
        for entry in whole.entries:
            step(game, position, entry)
        assert read.record() == position.record(match_id)
        assert read.outcome() == position.match.outcome()

    run(hosted(url, body))
