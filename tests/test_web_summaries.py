"""The facts the page's round summary reads from a Spectacular Bid view (workers/games/spectacular_bid/view.py):
a block's two hand totals and who received what (SB-8), and the round a match ended in (`final_round`).
Checked against the rules engine's own state at each step of bot-played matches, and on the bytes of
every view: a blocked round's totals are numbers, never the tiles left in a hand."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from typing import Any

from tablehall.selfplay import Turn, self_play
from workers.games.engine import Seat
from workers.games.spectacular_bid import SpectacularBid
from workers.games.spectacular_bid.state import Phase, Round
from workers.games.spectacular_bid.tiles import round_to_five

GAME = SpectacularBid()
SEEDS = (2, 22, 46)
"""Seeds whose bot matches block: 2 and 22 end in a block (final_round), 46 blocks twice along the way."""


def steps(seed: int) -> list[Turn]:
    rng = random.Random(seed)
    return list(self_play(GAME, ["A", "B"], rng, options={"start_points": 150}, think_ms=(100, 1500)))


def expected(round: Round) -> dict[str, Any]:
    sums = [sum(t.pips for t in hand) for hand in round.hands]
    to = None if sums[0] == sums[1] else int(sums[1] < sums[0])
    return {"sums": sums, "to": to, "owed": 0 if to is None else round_to_five(sums[1 - to])}


def test_a_block_shows_both_totals_and_the_payment_and_never_a_tile() -> None:
    blocks = finals = 0
    for seed in SEEDS:
        played = steps(seed)
        for previous, turn in pairwise(played):
            before, state = previous.match, turn.match.state
            for seat in (Seat(0), Seat(1), None):
                view = GAME.view(state, seat).to_json()
                raw = json.dumps(view, separators=(",", ":")).encode()
                rounds = list(zip(view["past_rounds"], state.past, strict=True))
                if view["final_round"] is not None:
                    assert state.phase is Phase.OVER and state.round is not None
                    rounds.append((view["final_round"], state.round))
                    assert view["final_round"]["end"] == state.round.end
                for shown, round in rounds:
                    if round.end != "block":
                        assert "block" not in shown
                        continue
                    block = shown["block"]
                    assert {k: block[k] for k in ("sums", "to", "owed")} == expected(round)
                    # what the page may show of a blocked hand is its total, never its tiles
                    left = {_key(str(t)) for hand in round.hands for t in hand} - _visible(view)
                    named = [f"{a}-{b}" for a, b in left] + [f"{b}-{a}" for a, b in left]
                    assert not [t for t in named if json.dumps(t).encode() in raw], f"seed {seed}: a blocked tile"
            # the block's payment is what moved the points (SB-8), capped by what the payer held (SB-1)
            ended = state.past[len(before.state.past) :] if len(state.past) > len(before.state.past) else ()
            final = state.round if state.phase is Phase.OVER and before.state.phase is not Phase.OVER else None
            for round in [*ended, *([final] if final is not None else [])]:
                if round.end != "block":
                    continue
                view = GAME.view(state, None).to_json()
                block = (view["final_round"] if round is final else view["past_rounds"][-1])["block"]
                moved = [state.points[s] - before.state.points[s] for s in (0, 1)]
                for event in turn.events:  # a play that scored in the same step (the last one before the block)
                    scored = event.to_json().get("scored")
                    if isinstance(scored, int):
                        moved[event.seat] -= scored
                        moved[1 - event.seat] += scored
                if block["to"] is None:
                    assert moved == [0, 0]
                else:
                    payer = 1 - block["to"]
                    assert moved[block["to"]] == -moved[payer] == min(block["owed"], before.state.points[payer])
                    assert block["short"] == (round is final and state.points[payer] == 0)
                blocks += 1
                finals += round is final
    assert blocks >= 4 and finals == 2, (blocks, finals)


def _key(tile: str) -> tuple[str, str]:
    a, b = tile.split("-")
    return (a, b) if a >= b else (b, a)


def _visible(view: dict[str, Any]) -> set[tuple[str, str]]:
    """What this view shows anyway: the current round's layout and the viewer's own hand."""
    layout = view["layout"]
    tiles = [*(view["hand"] or []), *([layout["lead"]] if layout["lead"] else [])]
    tiles += [t for line in layout["lines"].values() for t in line]
    return {_key(t) for t in tiles}
