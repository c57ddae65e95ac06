"""Whole bot matches of both games over real gRPC: the right result, and not one hidden tile or card on the
wire (DESIGN.md "Security")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.over_grpc import (
    PlayedMatch,
    Service,
    bot_match,
    five_hidden,
    five_own,
    framed,
    quoted,
    sb_hidden,
    sb_own,
    serve,
)
from workers.commitments import Commitment
from workers.games.records import replay

SB = "spectacular-bid"
FIVE = "501"


def play(
    game: str, players: list[str], seeds: list[int], options: dict[str, Any] | None = None
) -> list[tuple[PlayedMatch, list[Any]]]:
    """Bot matches played at the same time on one server, each with the server-side snapshot of every seq
    (the truth the leak checks need)."""

    async def body(service: Service) -> list[tuple[PlayedMatch, list[Any]]]:
        matches = await asyncio.gather(*(bot_match(service, game, players, seed, options) for seed in seeds))
        return [(played, service.actor(played.match_id).snapshots) for played in matches]

    return serve(body, timeout=40)


def common_checks(played: PlayedMatch) -> dict[str, Any]:
    """What holds for every finished bot match; returns the final view every seat agrees on."""
    finals = [log.final for log in played.logs]
    assert all(f is not None for f in finals), "every seat's stream must end with the match's last update"
    last = played.watched[-1]
    assert all(log.final_seq == last.seq for log in played.logs)
    # every accepted command is in the record, in order, and only those (no clock ran out: long banks)
    accepted = sorted((seq, seat, action) for seat, log in enumerate(played.logs) for seq, action in log.accepted)
    events = played.record["events"]
    assert len(events) == len(accepted) > 0
    assert [e["seat"] for e in events] == [seat for _, seat, _ in accepted]
    assert [{k: v for k, v in e.items() if k not in ("seat", "t")} for e in events] == [a for _, _, a in accepted]
    # one seq per accepted command, and one per deal after the first (a deal is a change of its own)
    deals = played.record.get("rounds", played.record.get("hands"))
    seqs = [seq for seq, _, _ in accepted]
    assert seqs == sorted(set(seqs)) and seqs[0] >= 2 and seqs[-1] <= last.seq
    assert len(seqs) + len(deals) - 1 == last.seq - 1
    # the spectator saw every seq exactly once, with the commitments the record later reveals
    assert [u.seq for u in played.watched] == list(range(1, last.seq + 1))
    revealed = played.record["commitments"]
    assert [c.sha256 for c in last.commitments] == [c["sha256"] for c in revealed]
    for deal, c in zip(played.record[game_deals(played)], revealed, strict=True):
        assert Commitment(bytes.fromhex(c["salt"]), c["sha256"]).opens(deal)
    final: dict[str, Any] = json.loads(last.view_json)
    assert final["phase"] == "over"
    return final


def game_deals(played: PlayedMatch) -> str:
    return "rounds" if played.record["game"] == SB else "hands"


def test_spectacular_bid_bot_match_ends_with_the_replayed_result() -> None:
    for played, _ in play(SB, ["Ana", "Bia"], seeds=[1, 2, 3]):
        sb_result(played)


def sb_result(played: PlayedMatch) -> None:
    final = common_checks(played)
    outcome = replay(played.record).to_json()
    assert outcome["status"] == final["status"] == "finished"
    assert final["reason"] == "points", "bots never resign and the banks are long: the match ends on points"
    assert (outcome["winner"], outcome["reason"], outcome["points"]) == (
        final["winner"],
        final["reason"],
        final["points"],
    )
    assert final["points"][final["winner"]] == sum(final["points"]) > 0
    for log in played.logs:
        assert log.final is not None
        assert (log.final["winner"], log.final["points"]) == (final["winner"], final["points"])


@pytest.mark.parametrize("players", [["Ana", "Bia", "Cid"], ["Ana", "Bia", "Cid", "Dee"]])
def test_501_bot_match_ends_with_the_replayed_result(players: list[str]) -> None:
    for played, _ in play(FIVE, players, seeds=[4, 5], options={"start_score": 200}):
        five_result(played)


def five_result(played: PlayedMatch) -> None:
    final = common_checks(played)
    outcome = replay(played.record).to_json()
    assert outcome["status"] == "finished"
    assert outcome["reason"] == "score"
    assert outcome["scores"] == final["scores"]
    assert outcome["winners"] == final["winners"]
    assert outcome["hands"] == final["hands"]
    assert min(final["scores"]) <= 0
    assert final["winners"] == [s for s, v in enumerate(final["scores"]) if v == min(final["scores"])]
    assert any(h["target"] is not None for h in final["hands"]), "some hand was declared and played out"


def assert_no_leak(
    played: PlayedMatch,
    snapshots: list[Any],
    hidden: Callable[[Any, int | None], set[str]],
    own: Callable[[Any, int | None], set[str]],
) -> None:
    watchers: list[tuple[int | None, Any]] = [(seat, r) for seat, r in enumerate(played.seats)]
    watchers.append((None, played.spectator))
    for seat, recorded in watchers:
        assert len(recorded.received) >= len(snapshots), "every watcher got every update"
        shown_own = 0
        for message in recorded.received:
            raw = message.SerializeToString()
            state = snapshots[message.seq - 1].state
            secret = hidden(state, seat)
            # both forms of the view: view_json (quoted names) and the typed view (framed names); a seat's
            # own hand, looked for in both, shows that both were on the wire
            leaked = [name for name in [*quoted(secret), *framed(secret)] if name in raw]
            assert not leaked, f"seat {seat} received hidden {leaked} at seq {message.seq}"
            mine = own(state, seat)
            # the check can see what it looks for: one's own tiles or cards are on the wire, in both forms
            assert all(name in raw for name in [*quoted(mine), *framed(mine)]), f"seat {seat} did not get its own hand"
            shown_own += bool(mine)
        assert (shown_own > 0) == (seat is not None)


def test_spectacular_bid_sends_no_hidden_tile() -> None:
    for played, snapshots in play(SB, ["Ana", "Bia"], seeds=[6, 7, 8]):
        assert_no_leak(played, snapshots, sb_hidden, sb_own)


@pytest.mark.parametrize("players", [["Ana", "Bia", "Cid"], ["Ana", "Bia", "Cid", "Dee"]])
def test_501_sends_no_hidden_card(players: list[str]) -> None:
    for played, snapshots in play(FIVE, players, seeds=[9, 10], options={"start_score": 200}):
        assert_no_leak(played, snapshots, five_hidden, five_own)
        # the blind part was exercised: some seat was shown nothing of its own hand during the bidding
        views = [json.loads(m.view_json) for r in played.seats for m in r.received]
        assert any(v["phase"] == "bidding" and v["hand"] is None for v in views)
        assert any(v["phase"] == "tricks" and v["talon"] for v in views), "a talon was exposed and played"
