"""The terminal client's text: clocks (rounded before they are split, tenths under ten seconds, a warning when
low), ends shown only where tiles are and adding up to the count, plurals, names with "(you)", cards typed as
they are shown, and the narrator's lines for a block and an auction."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tablehall.menu import BadInput, Item, card_code, parse
from tablehall.render import _mmss, clock_line, clock_text, end_values, layout_lines, sb_lines, seat_name
from tablehall.selfplay import self_play
from tablehall.summaries import Narrator
from workers.games.catalog import game_named
from workers.games.engine import Seat

SB = game_named("spectacular-bid")


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0:00.0"), (-5, "0:00.0"), (59_940, "0:59.9"), (59_960, "1:00.0"), (61_234, "1:01.2"), (600_000, "10:00.0")],
)
def test_clock_text(ms: float, text: str) -> None:
    assert _mmss(ms) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [(120_000, "2:00"), (61_940, "1:01"), (10_000, "0:10"), (9_960, "0:10"), (9_940, "0:09.9"), (0, "0:00.0")],
)
def test_a_bank_shows_tenths_only_under_ten_seconds(ms: float, text: str) -> None:
    assert clock_text(ms) == text


def sb_view(**extra: Any) -> dict[str, Any]:
    view = {"game": "spectacular-bid", "banks_ms": [120_000, 8_000], "clock_running": 1, "delay_ms": 10_000}
    return {**view, "decision_since_ms": 1_000, "deadline_ms": 19_000, **extra}


def test_the_running_clock_is_read_at_now_and_warns_when_low() -> None:
    names = ["Ana", "Bia"]
    early = clock_line(sb_view(), names, now=3_500, me=0)
    assert early == "Clocks: Ana (you) 2:00 · Bia 0:08.0 ◀ delay 7.5s"  # 15.5 s before the deadline
    late = clock_line(sb_view(), names, now=14_000, me=0)
    assert late == "Clocks: Ana (you) 2:00 · Bia 0:05.0 ◀ — Bia: low on time!"
    calm = clock_line(sb_view(banks_ms=[120_000, 90_000], deadline_ms=101_000), names, now=3_500)
    assert calm == "Clocks: Ana 2:00 · Bia 1:30 ◀ delay 7.5s"


def views_of_played_matches(seeds: range) -> list[dict[str, Any]]:
    assert SB is not None
    views = []
    for seed in seeds:
        for turn in self_play(SB, ["Ana", "Bia"], random.Random(seed), greedy=[seed % 2 == 0, True]):
            views.append(SB.view(turn.match.state, Seat(0)).to_json())
    return views


def test_the_ends_shown_add_up_to_the_count_and_an_empty_arm_shows_nothing() -> None:
    checked = 0
    for view in views_of_played_matches(range(12)):
        layout = view["layout"]
        shown = end_values(layout)
        assert sum(value for _, _, value in shown) == layout["count"], layout
        for end, _, _ in shown:
            assert end == "lead" or end in ("W", "E") or layout["lines"][end], layout
        checked += layout["spinner"] is not None and not layout["lines"]["N"]
    assert checked  # layouts with a spinner and an empty arm were among them
    spinner = {"lead": "5-5", "lines": {"W": ["5-2"], "E": ["5-1"], "N": [], "S": []}, "spinner": 5}
    lines = layout_lines({**spinner, "open_ends": {"W": 2, "E": 1, "N": 5, "S": 5}, "count": 3})
    assert lines[-1] == "  ends: W 2 + E 1 = count 3" and not any("arm" in line for line in lines)


def test_one_tile_and_the_viewer_are_said_right() -> None:
    layout = {"lead": None, "lines": {"W": [], "E": [], "N": [], "S": []}, "spinner": None, "open_ends": {}, "count": 0}
    view = {
        **sb_view(),
        "seat": 1,
        "round": 2,
        "phase": "play",
        "turn": 1,
        "points": [150, 150],
        "hand_sizes": [1, 2],
        "boneyard_size": 1,
        "jockey": None,
        "auction": None,
        "layout": layout,
        "hand": ["6-4", "3-3"],
        "hand_over": False,
    }
    lines = sb_lines(view, ["Ana", "Bia"])
    assert "   Ana: 150 points, 1 tile" in lines and " ▶ Bia (you): 150 points, 2 tiles" in lines
    assert "Boneyard: 1 tile" in lines
    assert seat_name(["You", "Bot"], 0, me=0) == "You"


def five_items() -> list[Item]:
    return [Item("play 10♣", {"do": "play", "card": "TC"}), Item("play K♥", {"do": "play", "card": "KH"})]


@pytest.mark.parametrize("typed", ["10♣", "10c", "10C", "TC", "tc", "play 10♣"])
def test_a_card_is_typed_as_it_is_shown(typed: str) -> None:
    assert parse(typed, five_items(), {"game": "501", "legal": []}) == {"do": "play", "card": "TC"}


def test_a_card_that_cannot_be_played_is_one_clear_line() -> None:
    with pytest.raises(BadInput, match=r"you cannot play 9♠ now"):
        parse("9♠", five_items(), {"game": "501", "legal": []})
    assert card_code("Q♥") == "QH" and card_code("10") is None and card_code("1♣") is None


def test_a_declaration_takes_suit_symbols_and_cards_as_shown() -> None:
    legal = [
        {"do": "declare", "trump": ["H", "NT"], "target": {"min": 70, "max": 220}, "give": {"to": [1, 2], "cards": ""}}
    ]
    items = [Item("declare", {"do": "declare"})]
    action = parse("declare ♥ 100 10♣ q♦", items, {"game": "501", "legal": legal})
    assert action == {"do": "declare", "trump": "H", "target": 100, "give": {"1": "TC", "2": "QD"}}
    with pytest.raises(BadInput, match="is no trump"):
        parse("declare X 100 10♣ Q♦", items, {"game": "501", "legal": legal})


def test_a_block_is_told_with_both_hands_and_the_payment() -> None:
    before = {
        **sb_view(clock_running=None),
        "seat": 0,
        "status": "in_progress",
        "round": 3,
        "phase": "play",
        "turn": 0,
        "points": [100, 200],
        "boneyard_size": 0,
        "auction": None,
        "jockey": None,
        "past_rounds": [],
        "layout": {"lead": "6-6", "lines": {"W": [], "E": [], "N": [], "S": []}},
    }
    # all 28 tiles but Ana's two and Bia's three lie on the layout (as one long west line)
    ana, bia = {"6-5", "3-1"}, {"4-0", "0-0", "1-0"}
    others = [f"{a}-{b}" for a in range(7) for b in range(a + 1) if f"{a}-{b}" not in ana | bia | {"6-6"}]
    after = {
        **before,
        "phase": "deal",
        "turn": None,
        "points": [95, 205],
        "hand": sorted(ana),
        "layout": {"lead": "6-6", "lines": {"W": others, "E": [], "N": [], "S": []}},
        "past_rounds": [{"end": "block", "jockey": None, "lead_by": 1, "auction": None}],
    }
    narrator = Narrator(["Ana", "Bia"], me=0)
    narrator.see({**before, "layout": after["layout"], "hand": sorted(ana)})
    summary = narrator.see(after).summary
    assert summary[0] == "Round 1 over — blocked: nobody can play or draw."
    assert summary[1] == "  Hands: Ana (you) [3|1] [6|5] = 15 · Bia [0|0] [1|0] [4|0] = 5"
    assert summary[2] == "  Bia receives 5 from Ana (you) (the lower hand)."
    assert "  Points after round 1: Ana (you) 95 (−5) · Bia 205 (+5)" in summary
